"""Proving a command line safe: every word literal, every program known, every write inside the workspace.

:func:`prove` reads a command line with the lexer of :mod:`~hermes.tools.terminal.shellparse` and
returns the reasons it could not prove it safe, one ``(reason, segment)`` pair per simple command that
failed (empty: proven). A simple command is proven when

* every word is literal after quoting: no parameter expansion (``$X``, ``${IFS}``), no command or
  process substitution, no brace expansion, no here-document that expands, and globs only where they
  cannot turn into an option (or for programs where no option matters, :data:`known.INERT`);
* any variable it sets is one of :data:`HARMLESS_VARS` (``PATH=.``, ``LD_PRELOAD=...`` change what runs);
* its program, after known wrappers (``env``, ``nice``, ``timeout``, ``nohup``, ``time``, ``stdbuf``,
  ``command``, ``builtin``, ``xargs`` before an inert program), is on the allowlist of
  :mod:`~hermes.tools.terminal.known` (or git's, :mod:`~hermes.tools.terminal.gitcheck`), in a form
  listed there, or on the person's ``approvals.safe_programs``; it is a shell builtin or found on PATH
  outside the workspace (or named by a path in ``/bin``, ``/usr/bin``, ``/sbin``, ``/usr/sbin``);
* every file it writes — redirections and the targets its spec names — resolves inside the workspace
  (the directory the command starts in) from every directory ``cd``/``pushd`` may have moved to,
  following symbolic links that exist now, is not in a ``.git`` directory, a home dot-file, a file
  with other hard links, or a special file under ``/proc``, ``/sys`` or ``/dev`` (``/dev/null``,
  ``/dev/stdout`` and ``/dev/stderr`` excepted);
* nothing it reads holds secrets (SSH keys, credential stores, hermes's ``.env``) and nothing opens a
  network connection through ``/dev/tcp`` or ``/dev/udp`` (:mod:`~hermes.tools.terminal.reads`).

Directories are tracked as the set of every place ``cd`` may have reached (a ``cd`` that fails, or one
inside a subshell, leaves the shell elsewhere), so the set only grows. Work is bounded: one pass of
the lexer, one look per simple command (at most :data:`MAX_COMMANDS` of them; a repeated command is
remembered), at most ``places.MAX_CHECKED_PATHS`` file-system look-ups (:mod:`.places`).
"""

from __future__ import annotations

import os
import posixpath
import re
import shutil

from hermes.tools.terminal import known
from hermes.tools.terminal.gitcheck import git_reason
from hermes.tools.terminal.places import TOO_COMPLEX, Places, inside, real_dir
from hermes.tools.terminal.reads import ReadCheck
from hermes.tools.terminal.shellparse import lex
from hermes.tools.terminal.shelltokens import SUB, WRITE_REDIRECTS, Op, Token, TooComplex, Word

__all__ = ["HARMLESS_VARS", "MAX_REASONS", "prove"]

MAX_REASONS = 8
MAX_COMMANDS = 20_000

HARMLESS_VARS = frozenset({
    "LC_ALL", "LANG", "LANGUAGE", "LC_CTYPE", "LC_MESSAGES", "LC_COLLATE", "LC_NUMERIC", "LC_TIME", "TZ",
    "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM", "COLUMNS", "LINES", "CI",
    "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONHASHSEED", "RUST_BACKTRACE",
    "RUST_LOG", "NODE_ENV", "GREP_COLOR", "GREP_COLORS", "LS_COLORS", "TIME_STYLE", "QUOTING_STYLE",
    "POSIXLY_CORRECT", "SOURCE_DATE_EPOCH", "GIT_TERMINAL_PROMPT", "GIT_OPTIONAL_LOCKS", "DEBUG", "VERBOSE",
})
#: names the shell itself runs (not looked up on PATH)
_BUILTINS = frozenset({"echo", "printf", "pwd", "true", "false", ":", "test", "[", "[[", "]]", "cd", "pushd",
                       "popd", "dirs", "set", "command", "type", "exit", "return", "break", "continue", "wait",
                       "jobs", "builtin"})
_KEYWORDS = frozenset({"{", "}", "!", "then", "do", "else", "elif", "if", "while", "until", "fi", "done"})
_BINDING = frozenset({"for", "case", "select", "function", "coproc", "in", "esac", "alias", "eval", "source",
                      ".", "exec", "trap"})
_SYSTEM_BIN = frozenset({"/bin", "/usr/bin", "/sbin", "/usr/sbin"})
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=")
_EXPANSION = re.compile(r"\$(?:\{[^}]*\}?|[A-Za-z_][A-Za-z0-9_]*|.)")
_SEPARATORS = frozenset({";", "&", "|", "&&", "||", "|&", "\n", "(", ")", ";;"})
_ELEVATE = frozenset({"sudo", "doas", "su", "pkexec", "run0", "runuser", "sg", "newgrp"})
# wrapper -> (options taking a value, options without one, positional words before the command)
_WRAPPERS: dict[str, tuple[frozenset[str], frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset"}), frozenset({"-i", "--ignore-environment", "-0", "--null", "-v",
                                                     "--debug", "-"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), frozenset(), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}),
                frozenset({"--preserve-status", "--foreground", "-v", "--verbose"}), 1),
    "nohup": (frozenset(), frozenset(), 0),
    "time": (frozenset(), frozenset({"-p"}), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), frozenset(), 0),
    "builtin": (frozenset(), frozenset(), 0),
    "command": (frozenset(), frozenset({"-p"}), 0),
    "xargs": (frozenset({"-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "--max-lines", "-n",
                         "--max-args", "-P", "--max-procs", "-s", "--max-chars"}),
              frozenset({"-0", "--null", "-r", "--no-run-if-empty", "-t", "--verbose", "-x", "--exit"}), 0),
}


def _literal_reason(word: Word) -> str | None:
    """Why ``word`` cannot be read statically, or None."""
    text = word.text
    if word.subs or SUB in text:
        return "command or process substitution cannot be read statically"
    if word.dynamic:
        m = _EXPANSION.search(text)
        shown = m.group(0) if m else "$"
        return f"parameter expansion `{shown[:40]}` cannot be read statically"
    if "{" in text and "}" in text and ("," in text or ".." in text) and (word.brace or not word.quoted):
        return f"brace expansion in `{text[:40]}` cannot be read statically"
    return None


class Prover(Places):
    """State of one proof: the places (:class:`Places`), the programs met and the reasons found so far."""

    def __init__(self, cwd: str | None, safe_programs: tuple[str, ...] = (), workspace: str | None = None) -> None:
        super().__init__(cwd, workspace)
        self.safe_programs = tuple(" ".join(p.split()) for p in safe_programs if p.strip())
        self.reasons: list[tuple[str, str]] = []
        self.found_on_path: dict[tuple[str, str], str | None] = {}
        self.git_cache: dict[str, str | None] = {}
        self.memo: dict[tuple[object, ...], str | None] = {}
        self.located: dict[tuple[str, int, str], str | None] = {}
        self.stopped = False  # the walk gave up (too many commands)
        self.reads = ReadCheck(self.home)

    def fail(self, reason: str, segment: str) -> None:
        if len(self.reasons) < MAX_REASONS:
            self.reasons.append((reason, segment[:500]))
        elif len(self.reasons) == MAX_REASONS:
            self.reasons.append((f"{TOO_COMPLEX} (more than {MAX_REASONS} commands need approval)", ""))

    # -- the token walk -----------------------------------------------------------------------------
    def run(self, command: str, toks: list[Token] | None = None) -> list[tuple[str, str]]:
        if toks is None:
            try:
                toks = lex(command)
            except (TooComplex, RecursionError):
                return [(TOO_COMPLEX, command[:200])]
        words: list[Word] = []
        redirects: list[tuple[Op, Word]] = []
        pending: Op | None = None
        count = len(toks)
        for k, tok in enumerate(toks):
            if isinstance(tok, Word):
                if pending is not None:
                    redirects.append((pending, tok))
                    pending = None
                else:
                    words.append(tok)
                continue
            if tok.op in _SEPARATORS:
                if tok.op == "(" and len(words) == 1 and not redirects and _next_is(toks, k, count, ")"):
                    self.fail(f"defines a shell function `{words[0].text[:40]}`", words[0].text)
                if words or redirects:
                    self.simple(words, redirects)
                words, redirects, pending = [], [], None
            else:
                pending = tok
            if len(self.reasons) > MAX_REASONS or self.stopped:
                break
        if (words or redirects) and len(self.reasons) <= MAX_REASONS and not self.stopped:
            self.simple(words, redirects)
        copied = self.copy_reason()
        if copied:
            self.fail(*copied)
        return self.reasons

    # -- one simple command -------------------------------------------------------------------------
    def simple(self, words: list[Word], redirects: list[tuple[Op, Word]]) -> None:
        self.command_no += 1
        if self.command_no > MAX_COMMANDS:
            self.stopped = True
            too_many = (f"{TOO_COMPLEX} (more than {MAX_COMMANDS:,} commands)", "")
            self.reasons = [*self.reasons[:MAX_REASONS - 1], too_many]
            return
        segment = " ".join(w.text for w in words)
        for word in words:
            why = _literal_reason(word)
            if why:
                self.fail(why, segment)
                return
        writes: list[str] = []
        for op, target in redirects:
            why = _literal_reason(target)
            if why is None and target.glob:
                why = f"the glob `{target.text[:40]}` in a redirection cannot be read statically"
            if why is None and op.op in ("<<", "<<-") and not target.quoted and ("$" in op.body or "`" in op.body):
                why = "a here-document with expansions cannot be read statically"
            if why:
                self.fail(why, segment or target.text)
                return
            if op.op in WRITE_REDIRECTS or (op.op == ">&" and not (target.text.isdigit() or target.text == "-")):
                writes.append(target.text)
        texts = [w.text for w in words]
        key = (self.cwd_version, tuple(texts), tuple((op.op, t.text) for op, t in redirects),
               tuple(w.glob for w in words))
        if key in self.memo:  # the same command again, from the same directories: the same answer
            why = self.memo[key]
            if why:
                self.fail(why, " ".join(texts))
            return
        globbed = {k for k, w in enumerate(words) if w.glob}
        version, copies = self.cwd_version, len(self.copied)
        why, texts, globbed = self.program(texts, globbed, writes)
        segment = " ".join(texts) or segment or " ".join(f"{op.op} {t.text}" for op, t in redirects)
        if why is None:
            network = [t.text for op, t in redirects if t.text.startswith(("/dev/tcp/", "/dev/udp/"))]
            inputs = [t.text for op, t in redirects if op.op in ("<", "<>")]
            via_xargs = "xargs" in [w.text for w in words[: len(words) - len(texts)]]
            why = ReadCheck.network(network[0]) if network else self.reads.reason(texts, inputs, self.cwds,
                                                                                    via_xargs)
        if why is None:
            why = self.check_writes(writes, segment)
        if version == self.cwd_version and copies == len(self.copied) and len(self.memo) < 4096:
            self.memo[key] = why
        if why:
            self.fail(why, segment)

    def program(self, texts: list[str], globbed: set[int], writes: list[str]) -> tuple[str | None, list[str], set[int]]:
        """Why the program of these words is not proven (None: it is); the words after the wrappers."""
        k = 0
        while k < len(texts) and texts[k] in _KEYWORDS and k not in globbed:
            k += 1
        while k < len(texts):  # leading assignments
            m = _ASSIGN.match(texts[k])
            if m is None or k in globbed:
                break
            if m.group(1) not in HARMLESS_VARS:
                return f"setting `{m.group(1)}` can change what programs run", texts[k:], set()
            k += 1
        via_xargs = False
        while k < len(texts):
            name = texts[k]
            if k in globbed and name not in ("[", "[["):  # a lone ``[`` matches nothing: it stays literal
                return f"the program name `{name[:40]}` is a glob", texts[k:], set()
            if name in _ELEVATE:
                return f"`{name}` runs the command as another user", texts[k:], set()
            spec = _WRAPPERS.get(name)
            if spec is None:
                break
            with_arg, plain, positional = spec
            k += 1
            while k < len(texts) and texts[k].startswith("-") and texts[k] != "-":
                opt = texts[k]
                if opt == "--":
                    k += 1
                    break
                if name == "command" and opt in ("-v", "-V"):
                    return None, texts[k - 1:], set()
                if opt in with_arg:
                    k += 2
                elif opt in plain or (name == "nice" and opt[1:].isdigit()) or \
                        (name == "stdbuf" and opt[:2] in ("-i", "-o", "-e")) or \
                        any(opt.startswith(w + "=") for w in with_arg if w.startswith("--")):
                    k += 1
                else:
                    return f"`{name} {opt}` is not a wrapper option with known effects", texts[k - 1:], set()
            while name == "env" and k < len(texts) and (m := _ASSIGN.match(texts[k])) is not None:
                if m.group(1) not in HARMLESS_VARS:
                    return f"setting `{m.group(1)}` can change what programs run", texts[k:], set()
                k += 1
            k += positional
            via_xargs = via_xargs or name == "xargs"
        rest = texts[k:]
        shifted = {g - k for g in globbed if g >= k}
        if not rest:
            return None, rest, shifted
        return self.known_program(rest, shifted, via_xargs, writes), rest, shifted

    def known_program(self, words: list[str], globbed: set[int], via_xargs: bool, writes: list[str]) -> str | None:
        word = words[0]
        name = word
        if word in _BINDING:
            return f"`{word}` runs or defines code that is not inspected"
        line = " ".join(words)
        person = any(line == p or line.startswith(p + " ") for p in self.safe_programs)
        if "/" in word and not person:  # a listed ./run_tests.sh is the person's choice
            norm = posixpath.normpath(word)
            if not norm.startswith("/") or posixpath.dirname(norm) not in _SYSTEM_BIN:
                return f"`{word[:60]}` runs a program by a path outside the system's program directories"
            name = posixpath.basename(norm)
        args = words[1:]
        if name in ("cd", "pushd", "popd", "dirs"):
            return self.change_directory(name, args)
        if not person and not known.known(name):
            return f"`{name[:60]}` is not a program with known effects"
        if "/" not in word and name not in _BUILTINS:
            where = self.locate(name)
            if where is not None:
                return where
        if person:
            return None
        if name in _BUILTINS:
            why = _builtin_reason(name, args)
            if why is not None:
                return why
        inert = name in known.INERT
        if via_xargs and not inert:
            return f"xargs hands `{name}` arguments read from its input"
        if not inert:
            for g in globbed:
                if g >= 1 and words[g][:1] in "*?[":
                    return f"the glob `{words[g][:40]}` may expand to an option of `{name}`"
        if known.version_query(name, args):
            return None
        if inert:
            return None
        use = known.Use(name, args, {g - 1 for g in globbed if g >= 1})
        if name == "git":
            why = git_reason(use, self.cwds, self.git_cache, self.workspace)
        else:
            spec = known.SPECS.get(name)
            if spec is None:
                return f"`{name}` runs code whose effects are not known (only `{name} --version` is)"
            why = spec(use)
        if why is None:
            for g in use.globbed:
                if 0 <= g < len(args) and args[g] in use.writes:
                    return f"the glob `{args[g][:40]}` names files that are written"
            writes.extend(use.writes)
            why = self.note_copies(use.copies)
        return why

    def locate(self, name: str) -> str | None:
        """Why the program PATH finds for ``name`` is not trusted (None: outside the workspace)."""
        early = (name, self.cwd_version, os.environ.get("PATH", ""))
        if early in self.located:
            return self.located[early]
        self.located[early] = why = self.locate_now(name)
        return why

    def locate_now(self, name: str) -> str | None:
        entries = []
        for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
            if entry.startswith("/"):
                entries.append(entry)
            else:
                entries += [posixpath.join(c, entry) for c in (self.cwds or [])]
        roots = self.untrusted
        if not any(inside(real_dir(e), r) for e in entries for r in roots):
            return None  # no directory on PATH lies in the workspace: nothing found there can be its file
        key = (name, os.pathsep.join(entries))
        if key not in self.found_on_path:
            found = shutil.which(name, path=key[1])
            why = None
            if found and any(inside(os.path.realpath(found), r) for r in roots):
                why = f"`{name}` is found in the workspace or working directory ({found}), not a system program"
            self.found_on_path[key] = why
        return self.found_on_path[key]

#: builtins whose options run or define code: ``jobs -x CMD`` runs CMD, ``printf -v`` and ``wait -p``
#: assign to a name (an array subscript in it is evaluated), ``test -v``/``-R`` evaluate a subscript
_CODE_OPTIONS = {"jobs": ("-x",), "printf": ("-v",), "wait": ("-p",), "test": ("-v", "-R"), "[": ("-v", "-R")}


def _builtin_reason(name: str, args: list[str]) -> str | None:
    """Why a shell builtin's arguments are not inert, or None. Bash evaluates array subscripts
    (``a[$(cmd)]``) in the names and numbers several builtins take, which runs the substitution even
    when the word was quoted, so any argument with a subscript and an expansion is not proven."""
    for option in _CODE_OPTIONS.get(name, ()):
        if any(a == option or (a.startswith("-") and not a.startswith("--") and option[1] in a[1:]) for a in args):
            return f"`{name} {option}` runs or assigns through words the shell evaluates"
    for a in args:
        if "[" in a and ("$" in a or "`" in a):
            return f"`{name}` may evaluate the array subscript in `{a[:40]}` as code"
    return None


def _next_is(toks: list[Token], k: int, count: int, op: str) -> bool:
    nxt = toks[k + 1] if k + 1 < count else None
    return isinstance(nxt, Op) and nxt.op == op


def prove(command: str, cwd: str | None = None, safe_programs: tuple[str, ...] = (),
          toks: list[Token] | None = None, workspace: str | None = None) -> list[tuple[str, str]]:
    """``(reason, segment)`` for each simple command of ``command`` not proven safe (empty: proven);
    ``toks``: the command already split by :func:`~hermes.tools.terminal.shellparse.lex`; ``workspace``:
    where writes may land (default: ``cwd``)."""
    try:
        return Prover(cwd, safe_programs, workspace).run(command, toks)
    except (RecursionError, MemoryError):
        return [(TOO_COMPLEX, command[:200])]
    except OSError as exc:  # a look at the file system failed in a way not foreseen: not proven
        return [(f"{TOO_COMPLEX} (the file system answered {exc.__class__.__name__})", command[:200])]
