"""Tokens of the shell reader: words, operators and the escape decoding they need.

See :mod:`hermes.tools.terminal.shellparse` for the reader itself.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes.tools.terminal.shellparse import Script

SUB = "\x00"  # stands for one substitution inside a word's text

WRITE_REDIRECTS = frozenset({">", ">>", ">|", "<>", "&>", "&>>"})
REDIRECTS = frozenset({"<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<", "<<-", "<<<"})
_SIMPLE_ESC = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f",
               "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI_ESC = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.DOTALL)


class TooComplex(Exception):
    """The command nests deeper than ``shellparse.MAX_DEPTH``; it cannot be inspected."""


class TooLarge(TooComplex):
    """Reading the command took more than ``shellparse.MAX_STEPS`` steps; it cannot be inspected in time."""


def decode_escapes(text: str) -> str:
    """Decode the backslash escapes of ``$'...'`` strings (also used for ``printf``/``echo -e``)."""

    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        head = code[0]
        try:
            if head == "x" and len(code) > 1:
                return chr(int(code[1:], 16))
            if head in "uU" and len(code) > 1:
                return chr(int(code[1:], 16))
            if head in "01234567":
                return chr(int(code, 8) & 0xFF)
            if head == "c" and len(code) == 2:
                return chr(ord(code[1]) & 0x1F)
        except (ValueError, OverflowError):
            return m.group(0)
        return _SIMPLE_ESC.get(code, m.group(0))

    return _ANSI_ESC.sub(one, text) if "\\" in text else text


class Word:
    """One shell word after quote removal."""

    __slots__ = ("brace", "dynamic", "glob", "quoted", "subs", "text")

    def __init__(self, text: str, quoted: bool, dynamic: bool, glob: bool, subs: list[Script],
                 brace: bool = False) -> None:
        self.text = text
        self.quoted = quoted
        self.dynamic = dynamic
        self.glob = glob
        self.subs = subs
        #: an unquoted ``{`` appeared in a word that also has quoted parts (set by the slow path only;
        #: for an unquoted word the text itself tells)
        self.brace = brace

    def __repr__(self) -> str:
        return f"Word({self.text!r})"


class Op:
    """An operator token; here-document operators get their body once the lexer has read it."""

    __slots__ = ("body", "op")

    def __init__(self, op: str) -> None:
        self.op = op
        self.body = ""

    def __repr__(self) -> str:
        return f"Op({self.op!r})"


# separators carry no state, so one instance of each is shared (``;;`` reads as ``;``)
SHARED_OPS = {op: Op(op) for op in (";", "&", "|", "(", ")", "&&", "||", "|&", "&>", "&>>", "\n")}
SHARED_OPS[";;"] = SHARED_OPS[";"]


Token = Word | Op


def has_fork_bomb(toks: list[Token]) -> bool:
    """A function that calls itself piped into itself or in the background (``:(){ :|:& };:``)."""
    names: set[str] = set()
    count = len(toks)
    for k, tok in enumerate(toks):
        if not isinstance(tok, Word):
            continue
        nxt = toks[k + 1] if k + 1 < count else None
        if isinstance(nxt, Op) and nxt.op == "(" and k + 2 < count:
            after = toks[k + 2]
            if isinstance(after, Op) and after.op == ")":
                names.add(tok.text.strip("{}"))
        elif tok.text == "function" and isinstance(nxt, Word):
            names.add(nxt.text)
    if not names:
        return False
    for k, tok in enumerate(toks):
        if not isinstance(tok, Word) or tok.text.strip("{}") not in names:
            continue
        name = tok.text.strip("{}")
        nxt = toks[k + 1] if k + 1 < count else None
        if isinstance(nxt, Op) and nxt.op == "&":
            return True
        if isinstance(nxt, Op) and nxt.op in ("|", "|&") and k + 2 < count:
            after = toks[k + 2]
            if isinstance(after, Word) and after.text.strip("{}") == name:
                return True
    return False
