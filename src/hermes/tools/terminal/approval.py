"""Command classification for the terminal tool: recognised danger, and proven safety.

:func:`classify` reads a command line with :mod:`~hermes.tools.terminal.shellparse` and returns a
:class:`Verdict`: ``floor`` (a catastrophic shape: never run, even in yolo mode), ``dangerous`` (a
recognised destructive pattern: run only when approved or allow-listed), ``unproven`` (nothing
destructive recognised, but :mod:`~hermes.tools.terminal.proof` could not prove it safe: it needs
approval outside a sandbox) or ``safe`` (proven). The pattern ids and their levels are listed in
:data:`~hermes.tools.terminal.patterns.PATTERNS`; docs/tools/terminal.md explains them.

The rest of this module is the recognition of dangerous shapes (the denylist), which still decides
``floor`` and ``dangerous`` and their pattern ids.

What the detection sees through:

* wrappers — ``sudo``, ``doas``, ``env VAR=x``, ``nohup``, ``timeout N``, ``nice -n``, ``ionice``,
  ``stdbuf``, ``setsid``, ``chroot DIR``, ``xargs``, ``exec``, ``command``, ``builtin``, ``busybox``,
  ``time``, leading ``VAR=x`` assignments and keywords such as ``then``/``do``/``!``;
* shells and interpreters — the code of ``bash -c``/``sh -c``/``zsh -c``, ``eval``, ``su -c``,
  ``env -S``, ``watch``, ``ssh host CMD``, ``find -exec``, here-documents and here-strings fed to a shell,
  ``echo ... | sh`` and ``base64 -d <<< ... | sh``, and the string literals of ``python -c``/``perl -e``/
  ``ruby -e``/``node -e`` code that calls ``system``/``subprocess``/``exec``/``rmtree``;
* quoting and escapes (``"rm"``, ``r\\m``, ``$'\\x72m'``), absolute program paths (``/bin/rm``),
  substitutions (``$(...)``, backticks and ``<(...)`` are inspected as commands of their own; a command
  name computed as ``$(echo rm)`` or ``$(which rm)`` is taken to be ``rm``) and simple variables set
  earlier on the same line (``X=rm; $X -rf /``).

A string given to ``echo``/``printf`` is not executed, so ``echo "rm -rf /"`` is safe — unless that
output is piped into a shell. Detection is linear in the length of the command (nesting is capped;
anything nested deeper is ``dangerous``/``uninspectable``).
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from hermes.tools.terminal import calls, rules
from hermes.tools.terminal.patterns import PATTERNS, Level, sql_findings
from hermes.tools.terminal.proof import prove
from hermes.tools.terminal.shellparse import (
    MAX_DEPTH,
    SUB,
    Command,
    Script,
    Token,
    TooComplex,
    TooLarge,
    Word,
    lex,
    parse,
    parse_tokens,
    step_budget,
)

__all__ = ["PATTERNS", "UNPROVEN_ID", "Verdict", "classify", "classify_input", "findings", "stdin_kind"]

_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
_VAR_LIMIT = 256  # longer variable values are not tracked (keeps expansion linear)
_NOT_COMMANDS = frozenset({"for", "case", "select", "function", "in", "esac", "done", "fi", "[[", "]]"})
_ASSIGNING_BUILTINS = frozenset({"export", "declare", "local", "readonly", "typeset"})
_GUESSABLE = frozenset({"echo", "printf", "which", "command", "type", "whereis", "realpath", "readlink"})
_LEVEL_RANK = {"floor": 3, "dangerous": 2, "unproven": 1, "safe": 0}
UNPROVEN_ID = "unproven"


@dataclass(frozen=True)
class Verdict:
    """The outcome of classifying one command.

    ``segment`` is the simple command (after wrappers such as ``sudo`` are removed) or pipeline that
    matched; ``approvals.allow`` prefixes are compared with it.
    """

    level: Level
    reason: str
    pattern_id: str
    segment: str = ""


SAFE = Verdict("safe", "", "")


class _Stage:
    """What one stage of a pipeline does with its input and output."""

    __slots__ = ("decodes", "downloader", "output", "passthrough", "reads")

    def __init__(self) -> None:
        self.downloader = False
        self.reads: str | None = None  # "shell", "code" or "sql": what it makes of its stdin
        self.output: str | None = None  # known text it prints (echo, printf, cat <<EOF, base64 -d <<< ...)
        self.passthrough = False  # prints its stdin (cat, tee)
        self.decodes = False  # base64 -d


#: the stage of a command no rule cares about; shared, never modified
_PLAIN_STAGE = _Stage()


def _segment(cmd: Command) -> str:
    return " ".join(w.text for w in cmd.words)


class Analyzer:
    """Walks parsed scripts and collects findings; one instance per classified command."""

    def __init__(self, cwd: str | None = None) -> None:
        self.found: list[Verdict] = []
        self.vars: dict[str, str] = {}
        self.top_reads: str | None = None
        #: the directory relative paths are taken against (the workdir, then ``cd`` targets); None: unknown
        self.cwd = cwd

    # -- findings ---------------------------------------------------------------------------------
    def add(self, pattern_id: str, segment: str) -> None:
        level, reason = PATTERNS[pattern_id]
        self.found.append(Verdict(level, reason, pattern_id, segment[:500]))

    # -- scripts ----------------------------------------------------------------------------------
    def text(self, text: str, depth: int) -> bool:
        """Inspect ``text`` as a shell script; returns whether it runs a downloader (curl, wget, ...)."""
        if depth > MAX_DEPTH:
            self.add("uninspectable", text[:200])
            return False
        try:
            script = parse(text, depth)
        except TooLarge:
            self.add("too_large", text[:200])
            return False
        except TooComplex:
            self.add("uninspectable", text[:200])
            return False
        return self.script(script, depth)

    def script(self, script: Script, depth: int) -> bool:
        if script.fork_bomb:
            self.add("fork_bomb", "")
        downloads = False
        for pipeline in script.pipelines:
            if len(pipeline) == 1:  # the common case: no pipe
                st = self.command(pipeline[0], depth)
                downloads = downloads or st.downloader
                if depth == 0 and self.top_reads is None and st.reads is not None:
                    self.top_reads = st.reads
                continue
            downloads = self.pipeline(pipeline, depth) or downloads
        return downloads

    def pipeline(self, pipeline: list[Command], depth: int) -> bool:
        """Inspect a pipeline: downloads run by a shell, text fed to shells and SQL clients."""
        prev: _Stage | None = None
        seen_download = reported = False
        for k, cmd in enumerate(pipeline):
            st = self.command(cmd, depth)
            if prev is not None:
                if st.passthrough and prev.output is not None:
                    st.output = prev.output
                if st.decodes and prev.output is not None:
                    st.output = calls.b64decode(prev.output)
                if st.reads is not None:
                    if seen_download and st.reads != "sql" and not reported:
                        self.add("pipe_to_shell", " | ".join(_segment(c) for c in pipeline[: k + 1]))
                        reported = True
                    if prev.output is not None:
                        self.feed(st.reads, prev.output, depth + 1, _segment(cmd))
                    elif prev.decodes and st.reads != "sql":
                        self.add("obfuscated_shell", _segment(cmd))
            seen_download = seen_download or st.downloader
            if depth == 0 and self.top_reads is None and st.reads is not None:
                self.top_reads = st.reads
            prev = st
        return seen_download

    def feed(self, reads: str, text: str, depth: int, segment: str) -> None:
        """``text`` arrives on the stdin of a program that treats it as ``reads``."""
        if reads == "shell":
            self.text(text, depth)
        elif reads == "code":
            self.code(text, depth, segment)
        elif reads == "sql":
            for pid in sql_findings(text):
                self.add(pid, segment)

    def code(self, code: str, depth: int, segment: str) -> None:
        """Inline program text (python -c, perl -e, ...): fork loops, SQL, shell-outs and rmtree."""
        calls.inspect_code(self, code, depth, segment)

    # -- simple commands --------------------------------------------------------------------------
    def command(self, cmd: Command, depth: int) -> _Stage:
        words_ = cmd.words
        if not cmd.redirects and words_ and rules.plain_name(words_[0].text) and not any(w.subs for w in words_):
            return _PLAIN_STAGE  # a program no rule cares about, fed nothing special
        sub_download = False
        for word in cmd.words:
            for sub in word.subs:
                sub_download = self.script(sub, depth + 1) or sub_download
        for _, target in cmd.redirects:
            for sub in target.subs:
                sub_download = self.script(sub, depth + 1) or sub_download
        words = self.resolve(cmd.words)
        st = _Stage()
        for op, target in cmd.redirects:
            if op in (">", ">>", ">|", "<>", "&>", "&>>"):
                calls.check_write(self, target.text, f"{' '.join(words)} {op} {target.text}".strip())
        self.run_words(words, depth, st, sub_download=sub_download, stdin_texts=cmd.stdin_texts)
        return st

    def resolve(self, words: list[Word]) -> list[str]:
        """Word texts with substitutions guessed and known variables expanded."""
        out: list[str] = []
        for word in words:
            text = word.text
            if word.dynamic:
                if SUB in text:
                    guesses = [self.guess(sub) for sub in word.subs]
                    pieces = text.split(SUB)
                    text = pieces[0] + "".join(
                        (guesses[k] if k < len(guesses) else "") + piece for k, piece in enumerate(pieces[1:])
                    )
                if text.startswith("$") and text[1:] in self.vars:
                    value = self.vars[text[1:]]
                    if not word.quoted:
                        out.extend(value.split())
                        continue
                    text = value
            out.append(text)
        return out

    def guess(self, script: Script) -> str:
        """What ``$(...)`` prints when that is plain to see: ``$(echo rm)`` and ``$(which rm)`` give ``rm``."""
        if len(script.pipelines) != 1 or len(script.pipelines[0]) != 1:
            return ""
        words = script.pipelines[0][0].words
        if len(words) >= 2 and words[0].text.rsplit("/", 1)[-1] in _GUESSABLE and SUB not in words[-1].text:
            return words[-1].text
        return ""

    def run_words(
        self,
        words: list[str],
        depth: int,
        st: _Stage,
        *,
        sub_download: bool = False,
        stdin_texts: list[str] | None = None,
        via_xargs: bool = False,
    ) -> None:
        """Classify one simple command given as words (also used for ``find -exec`` and ``xargs``)."""
        if words and all(_ASSIGN.match(w) for w in words):
            self.assign(words)
            return
        words, shell_reader, xargs = calls.unwrap(self, words, depth)
        name = words[0].rsplit("/", 1)[-1] if words else ""
        if not words:
            st.reads = "shell" if shell_reader else None
        elif name in _NOT_COMMANDS:
            return
        elif name in _ASSIGNING_BUILTINS:
            self.assign(words[1:])
            return
        else:
            call = calls.Call(self, name, words, depth, st, sub_download, stdin_texts or [], via_xargs or xargs)
            rules.apply(call)
        if stdin_texts and st.reads is not None:
            for text in stdin_texts:
                self.feed(st.reads, text, depth + 1, " ".join(words))

    def assign(self, words: list[str]) -> None:
        """Remember ``NAME=value`` words (short values only, so expanding them stays cheap)."""
        for w in words:
            m = _ASSIGN.match(w)
            if m is not None and len(w) - m.end() <= _VAR_LIMIT:
                self.vars[m.group(1)] = w[m.end():]


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector: reading a huge command creates many small objects, and
    collections triggered by them would otherwise dominate the run time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def _inspecting() -> Iterator[None]:
    """One inspection: the garbage collector paused and one budget of reading steps for every text
    read (:func:`~hermes.tools.terminal.shellparse.step_budget`)."""
    with _no_gc(), step_budget():
        yield


def _run(analyzer: Analyzer, run: Callable[[], object], segment: str) -> None:
    """Run one walk of the analyzer; reading that runs out of steps or depth inside a rule becomes a finding."""
    try:
        run()
    except TooLarge:
        analyzer.add("too_large", segment[:200])
    except (TooComplex, RecursionError, OSError):
        analyzer.add("uninspectable", segment[:200])


def _analyze(command: str, cwd: str | None = None) -> Analyzer:
    analyzer = Analyzer(cwd)
    with _inspecting():
        _run(analyzer, lambda: analyzer.text(command, 0), command)
    return analyzer


def _unproven(reasons: list[tuple[str, str]]) -> list[Verdict]:
    return [Verdict("unproven", f"needs approval: {why}", UNPROVEN_ID, segment) for why, segment in reasons]


def findings(command: str, cwd: str | None = None, safe_programs: tuple[str, ...] = (),
             workspace: str | None = None) -> list[Verdict]:
    """Every floor or dangerous pattern found in ``command``, in the order met, then one ``unproven``
    verdict for each simple command that could not be proven safe.

    ``cwd`` is the directory the command will run in, if known: relative paths are judged against it
    (``rm -rf *`` in ``/`` or in the home directory is on the floor). ``workspace`` is where proven-safe
    commands may write (the session's workspace; None: ``cwd``; unknown: no write is proven) — a write
    in a ``cwd`` outside it is not proven. ``safe_programs`` are command prefixes the person declared to
    have known effects (``approvals.safe_programs``)."""
    with _inspecting():
        try:
            toks: list[Token] | None = lex(command)
        except (TooComplex, RecursionError):
            toks = None
        reasons = prove(command, cwd, safe_programs, toks, workspace)
        if not reasons:
            # proven: only allowlisted forms writing inside the workspace, which no dangerous pattern
            # names (the proof is stricter than the patterns), so the pattern search is skipped
            return []
        analyzer = Analyzer(cwd)
        if toks is None:
            _run(analyzer, lambda: analyzer.text(command, 0), command)
        else:
            _run(analyzer, lambda: analyzer.script(parse_tokens(toks, command), 0), command)
    return analyzer.found + _unproven(reasons)


def _most_severe(found: list[Verdict]) -> Verdict:
    best = SAFE
    for verdict in found:
        if _LEVEL_RANK[verdict.level] > _LEVEL_RANK[best.level]:
            best = verdict
    return best


def classify(command: str, cwd: str | None = None, safe_programs: tuple[str, ...] = (),
             workspace: str | None = None) -> Verdict:
    """The most severe finding in ``command`` (floor, dangerous, unproven), or a ``safe`` verdict."""
    return _most_severe(findings(command, cwd, safe_programs, workspace))


def stdin_kind(command: str) -> str | None:
    """What the program started by ``command`` makes of its stdin: ``"shell"`` (``bash``, ``ssh host``),
    ``"code"`` (``python3``), ``"sql"`` (``psql``) or None. Used to inspect ``process_manage`` writes."""
    return _analyze(command).top_reads


def classify_input(kind: str, text: str, cwd: str | None = None,
                   safe_programs: tuple[str, ...] = (), workspace: str | None = None) -> list[Verdict]:
    """Findings in ``text`` written to the stdin of a program that reads it as ``kind``: for a shell,
    the same proof as a command; program text for an interpreter is never proven."""
    analyzer = Analyzer(cwd)
    with _inspecting():
        _run(analyzer, lambda: analyzer.feed(kind, text, 0, "stdin"), text)
        reasons = prove(text, cwd, safe_programs, workspace=workspace) if kind == "shell" else []
    found = analyzer.found
    if kind == "shell":
        found = found + _unproven(reasons)
    elif kind == "code":
        found = found + _unproven([("input to an interpreter is program code whose effects are not known",
                                    text[:200])])
    return found
