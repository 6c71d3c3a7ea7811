"""Reading the small programs given to ``sed`` and ``awk``: do they only filter text?

:func:`sed_reason` and :func:`awk_reason` return None when the program only reads its input and
prints, or the reason it may do more: sed's ``e`` command and ``s///e`` flag run shell commands, its
``w``/``W`` commands and ``s///w`` flag write files; awk's ``system()``, pipes (``print | "cmd"``,
``"cmd" | getline``) and output redirections (``print > "file"``) run commands or write files. Both
readers are single passes over the text; anything they do not understand counts as "may do more",
and so does a program longer than :data:`MAX_PROGRAM_CHARS` (it is not read: the proof's cost stays
bounded, and such a command is "unproven", never "safe").
"""

from __future__ import annotations

import functools
import re

#: sed and awk programs longer than this are not read (one such program costs up to ~30 ms to read)
MAX_PROGRAM_CHARS = 100_000
_SED_SIMPLE = frozenset("=dDgGhHlLnNpPxzF")
_SED_NUM_ARG = frozenset("qQlL")
_SED_LABEL = frozenset(":btT")
_SED_TEXT = frozenset("aic")
_SED_FILE_READ = frozenset("rR")
_SED_ADDRESS = re.compile(r"(?:\d+(?:~\d+)?|\$)")
_SED_FLAGS = re.compile(r"[^;\n}]*")
_SED_FIELD = r"(?:[^\\/]|\\.)*"
_SED_ONE_ADDRESS = rf"(?:\d+(?:~\d+)?|\$|/{_SED_FIELD}/[IM]*)"
#: a run of commands the loop below would accept without a reason, with ``/`` as the delimiter (the
#: common case), matched in one step; whatever it does not cover is read by the loop
_SED_PLAIN_RUN = re.compile(
    rf"(?:[ \t\n;{{}}]*(?:{_SED_ONE_ADDRESS}(?:,[+~]?{_SED_ONE_ADDRESS}?)?)?[ \t!]*"
    rf"(?:s/{_SED_FIELD}/{_SED_FIELD}/[^;\n}}ew]*(?=[;\n}}]|\Z)|y/{_SED_FIELD}/{_SED_FIELD}/|[=dDgGhHlLnNpPxzF}}]"
    rf"|[qQlL][\d \t]*))*",
    re.DOTALL,
)


@functools.lru_cache(maxsize=64)
def _field(delim: str) -> re.Pattern[str]:
    """A field ended by ``delim``, where a backslash escapes the next character (not when it is ``delim``)."""
    if delim == "\\":
        return re.compile(r"[^\\]*")
    return re.compile(r"(?:[^\\" + re.escape(delim) + r"]|\\.)*", re.DOTALL)


def _sed_delimited(script: str, i: int, delim: str, parts: int) -> int:
    """Skip ``parts`` fields ended by ``delim`` (backslash escapes it); the index after them, or -1."""
    n = len(script)
    field = _field(delim).match
    for _ in range(parts):
        m = field(script, i)
        i = m.end() if m else i
        if i >= n or script[i] != delim:  # the end, or a backslash with nothing after it
            return -1
        i += 1
    return i


def _sed_address(script: str, i: int) -> int:
    """Skip one address (number, ``$``, ``first~step``, ``/re/`` or ``\\cREc`` with flags); -1 if bad."""
    n = len(script)
    m = _SED_ADDRESS.match(script, i)
    if m:
        return m.end()
    if i < n and script[i] in "/\\":
        if script[i] == "\\":
            if i + 1 >= n:
                return -1
            delim, i = script[i + 1], i + 2
        else:
            delim, i = "/", i + 1
        i = _sed_delimited(script, i, delim, 1)
        while 0 <= i < n and script[i] in "IM":
            i += 1
    return i


def sed_reason(script: str) -> str | None:
    """None when a sed script only edits the text stream; else why it may do more."""
    if len(script) > MAX_PROGRAM_CHARS:
        return f"a sed script of {len(script):,} characters is too long to inspect"
    i, n = 0, len(script)
    plain_run = _SED_PLAIN_RUN.match
    while i < n:
        m = plain_run(script, i)
        if m is not None and m.end() > i:
            i = m.end()
            continue
        c = script[i]
        if c in " \t\n;{}":
            i += 1
            continue
        if c == "#":
            j = script.find("\n", i)
            i = n if j < 0 else j
            continue
        start = i
        i = _sed_address(script, i)
        if 0 <= i < n and i > start and script[i] == ",":
            i += 1
            if i < n and script[i] in "+~":
                i += 1
            i = _sed_address(script, i)
        if i < 0:
            return "a sed address it cannot read"
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            return None if i > start else "an empty sed command"
        cmd = script[i]
        i += 1
        if cmd in ("s", "y"):
            if i >= n:
                return f"an unfinished sed `{cmd}` command"
            i = _sed_delimited(script, i + 1, script[i], 2)
            if i < 0:
                return f"an unfinished sed `{cmd}` command"
            if cmd == "s":
                m = _SED_FLAGS.match(script, i)
                flags_end = m.end() if m else i
                flags = script[i:flags_end]
                if "e" in flags:
                    return "sed's `s///e` runs the result as a shell command"
                if "w" in flags:
                    return "sed's `s///w` writes a file"
                i = flags_end
        elif cmd in _SED_SIMPLE or cmd == "}":
            pass
        elif cmd in _SED_NUM_ARG:
            while i < n and (script[i].isdigit() or script[i] in " \t"):
                i += 1
        elif cmd in _SED_LABEL or cmd in _SED_TEXT or cmd in _SED_FILE_READ:
            j = script.find("\n", i)
            if cmd in _SED_LABEL:
                k = script.find(";", i)
                j = k if k >= 0 and (j < 0 or k < j) else j
            i = n if j < 0 else j
        elif cmd == "e":
            return "sed's `e` command runs a shell command"
        elif cmd in "wW":
            return "sed's `w` command writes a file"
        else:
            return f"sed command `{cmd}` is not known"
    return None


_AWK_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REGEX_BEFORE = frozenset("(,~!&|{};\n=") | {""}


def awk_reason(program: str, name: str = "awk") -> str | None:
    """None when an awk program only reads and prints; else why it may do more."""
    if len(program) > MAX_PROGRAM_CHARS:
        return f"the {name} program of {len(program):,} characters is too long to inspect"
    if "@" in program:
        return f"{name}'s `@` (directives such as `@load`, indirect calls such as `@f()`) is not inspected"
    if "/inet" in program:
        return f"{name} special files under /inet open network connections"
    if "system" not in program and "|" not in program and ">" not in program:
        return None  # every other way out below needs one of these
    i, n = 0, len(program)
    in_print = False
    depth = 0
    prev = ""  # the last significant character
    while i < n:
        c = program[i]
        if c == '"':
            j = i + 1
            while j < n and program[j] != '"':
                j += 2 if program[j] == "\\" else 1
            i, prev = j + 1, '"'
            continue
        if c == "/" and prev in _REGEX_BEFORE:
            j = i + 1
            while j < n and program[j] not in "/\n":
                j += 2 if program[j] == "\\" else 1
            i, prev = j + 1, "/"
            continue
        if c == "#":
            j = program.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "\\":  # a line continuation (or a stray backslash): the statement goes on
            i += 2
            continue
        m = _AWK_WORD.match(program, i)
        if m:
            word = m.group(0)
            if word == "system":
                return f"{name}'s `system()` runs a shell command"
            if word in ("print", "printf"):
                in_print, depth = True, 0
            i, prev = m.end(), "a"
            continue
        if c == "|":
            if program[i + 1 : i + 2] == "|":
                i, prev = i + 2, "|"
                continue
            return f"a pipe in the {name} program runs a shell command"
        if c == ">" and in_print and depth == 0:
            return f"an output redirection in the {name} program writes a file"
        if c in ";{}" or (c == "\n" and prev not in (",", "&", "|")):
            in_print = False
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c not in " \t":
            prev = c
        i += 1
    return None
