"""One simple command as the rules see it, the unwrapping of wrapper commands, and shared checks.

:func:`unwrap` removes what only changes *how* a program runs — ``sudo``, ``env VAR=x``, ``nohup``,
``timeout N``, ``nice -n N``, ``xargs``, ``exec``, keywords such as ``then``, leading assignments — so
the rules see the program itself.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import re
from typing import TYPE_CHECKING

from hermes.tools.terminal.patterns import catastrophic, sql_findings, string_literals, write_target
from hermes.tools.terminal.shellparse import lex
from hermes.tools.terminal.shelltokens import Word

if TYPE_CHECKING:
    from hermes.tools.terminal.approval import Analyzer, _Stage

# name -> (options that take an argument, positional words to skip after the options)
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (frozenset({"-u", "-g", "-p", "-C", "-h", "-D", "-r", "-t", "-T", "-U", "--user", "--group",
                        "--prompt", "--close-from", "--host", "--chdir", "--role", "--type",
                        "--command-timeout", "--other-user"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "pkexec": (frozenset({"--user"}), 0),
    "run0": (frozenset({"-u", "--user", "-g", "--group", "-D", "--chdir", "--setenv"}), 0),
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "nohup": (frozenset(), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"}), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "setsid": (frozenset(), 0),
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "xargs": (frozenset({"-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "--max-lines", "-n",
                         "--max-args", "-P", "--max-procs", "-s", "--max-chars", "--process-slot-var"}), 0),
    "exec": (frozenset({"-a"}), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "busybox": (frozenset(), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "unbuffer": (frozenset(), 0),
    "caffeinate": (frozenset({"-t", "-w"}), 0),
    "noglob": (frozenset(), 0),
}
RESERVED = frozenset({"{", "}", "!", "then", "do", "else", "elif", "if", "while", "until", "(", ")"})
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


class Call:
    """One simple command handed to a rule."""

    def __init__(self, analyzer: Analyzer, name: str, words: list[str], depth: int, stage: _Stage,
                 sub_download: bool, stdin_texts: list[str], via_xargs: bool) -> None:
        self.a = analyzer
        self.name = name
        self.words = words
        self.args = words[1:]
        self.depth = depth
        self.stage = stage
        self.sub_download = sub_download
        self.stdin_texts = stdin_texts
        self.via_xargs = via_xargs
        self.segment = " ".join(words)

    def path(self, target: str) -> str:
        """``target`` taken against the known working directory (unchanged when absolute or unknown)."""
        cwd = self.a.cwd
        if cwd is None or not target or target.startswith(("/", "~", "$")):
            return target
        return posixpath.join(cwd, target)

    def hit(self, pattern_id: str) -> None:
        self.a.add(pattern_id, self.segment)

    def positionals(self, with_arg: frozenset[str] = frozenset()) -> list[str]:
        """Arguments that are not options (``--`` ends the options)."""
        out: list[str] = []
        skip = False
        ended = False
        for arg in self.args:
            if skip:
                skip = False
            elif ended or not arg.startswith("-") or arg == "-":
                out.append(arg)
            elif arg == "--":
                ended = True
            elif arg in with_arg:
                skip = True
        return out

    def has_flag(self, short: str, *long: str) -> bool:
        """Whether a short flag letter appears in an option cluster (before ``--``) or a long form is given."""
        for arg in self.args:
            if arg == "--":
                return False
            if arg in long or any(arg.startswith(lg + "=") for lg in long if lg.startswith("--")):
                return True
            if short and len(arg) > 1 and arg[0] == "-" and arg[1] != "-" and short in arg[1:]:
                return True
        return False


def unwrap(analyzer: Analyzer, words: list[str], depth: int) -> tuple[list[str], bool, bool]:
    """Strip wrappers, assignments and keywords; returns (words, bare privileged shell, via xargs)."""
    i = 0
    via_xargs = shell_reader = False
    while i < len(words):
        word = words[i]
        if word in RESERVED or (_ASSIGN.match(word) and i + 1 < len(words)):
            i += 1
            continue
        name = word.rsplit("/", 1)[-1]
        spec = WRAPPERS.get(name)
        if spec is None:
            break
        with_arg, positional = spec
        j = i + 1
        while j < len(words):
            arg = words[j]
            if arg == "--":
                j += 1
                break
            if not arg.startswith("-") or arg == "-":
                break
            if name == "command" and arg in ("-v", "-V"):
                return [], False, via_xargs
            if name == "env" and (arg in ("-S", "--split-string") or arg.startswith(("-S", "--split-string="))):
                value = words[j + 1] if arg in ("-S", "--split-string") and j + 1 < len(words) else (
                    arg.split("=", 1)[1] if arg.startswith("--") else arg[2:])
                rest = words[j + 2:] if arg in ("-S", "--split-string") else words[j + 1:]
                split = [t.text for t in lex(value, depth + 1) if isinstance(t, Word)]
                return unwrap(analyzer, split + rest, depth + 1)
            if name in ("sudo", "doas", "run0") and arg in ("-s", "-i", "--shell", "--login"):
                shell_reader = True
            j += 2 if arg in with_arg else 1
        j += positional
        if name == "xargs":
            via_xargs = True
        if j >= len(words) and name in ("sudo", "doas", "run0", "pkexec") and shell_reader:
            return [], True, via_xargs
        i = j
    return words[i:], shell_reader and i >= len(words), via_xargs


def check_write(analyzer: Analyzer, path: str, segment: str) -> None:
    pid = write_target(path)
    if pid is not None:
        analyzer.add(pid, segment)


def b64decode(text: str) -> str:
    data = "".join(text.split())
    try:
        return base64.b64decode(data + "=" * (-len(data) % 4)).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return ""


def inspect_code(analyzer: Analyzer, code: str, depth: int, segment: str) -> None:
    """Inline program text (``python -c``, ``perl -e``, ...)."""
    low = code.lower()
    if "fork" in low and ("while" in low or "until" in low or "loop" in low):
        analyzer.add("fork_bomb", segment)
    for pid in sql_findings(code):
        analyzer.add(pid, segment)
    shells_out = any(k in low for k in ("system", "subprocess", "popen", "exec", "spawn", "`", "shell"))
    if not shells_out and "rmtree" not in low:
        return
    literals = string_literals(code)
    if shells_out and literals:
        analyzer.text(literals, depth + 1)
    if "rmtree" in low:
        lines = literals.split("\n") if literals else []
        analyzer.add("rm_root" if any(catastrophic(x) for x in lines) else "rm_recursive", segment)


