"""A small, linear-time reader of shell command lines, made for spotting dangerous commands.

It is not a full POSIX shell parser. It knows what matters for seeing which programs a command line
runs and with which words: quoting (``'...'``, ``"..."``, ``$'...'`` with its escapes), backslash
escapes and line continuations, comments, the separators ``; & && || | |&`` and newlines, ``( )``
groups, redirections (with here-documents and here-strings), and substitutions (``$(...)``,
backticks, ``<(...)``/``>(...)``) whose contents are parsed as scripts of their own.

Every character is consumed once (regular expressions are only anchored at the current position and
never backtrack over earlier text), so a 1 MB command line is read in linear time. Nesting deeper than
:data:`MAX_DEPTH` raises :class:`TooComplex` instead of recursing without bound.

The work is also bounded in absolute terms: every word, operator, quoted piece, expansion and
here-document line the reader produces is a *step*, and the steps of one inspection (the command and
every text read as a script inside it — ``bash -c`` code, substitutions, text piped into a shell) are
counted together (:func:`step_budget`). Past :data:`MAX_STEPS` the reader raises :class:`TooLarge`,
which the classifier turns into a refusal ("too large to inspect"), never into "safe". Long quoted
strings, here-document bodies and long words are a few steps however long they are (a here-document
is only read line by line, which costs little, unless it is fed to a shell), so the limit only meets
command lines of tens of thousands of separate words.

Words keep variable references as ``$NAME`` (``${NAME}`` is written the same way) and mark each
substitution with a NUL stand-in character; the parsed substitution is kept in :attr:`Word.subs`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from hermes.tools.terminal.shelltokens import (
    REDIRECTS,
    SHARED_OPS,
    SUB,
    Op,
    Token,
    TooComplex,
    TooLarge,
    Word,
    decode_escapes,
    has_fork_bomb,
)

__all__ = ["MAX_DEPTH", "MAX_STEPS", "SUB", "Command", "Op", "Script", "Token", "TooComplex", "TooLarge", "Word",
           "decode_escapes", "lex", "parse", "parse_tokens", "step_budget"]

MAX_DEPTH = 12
#: steps (words, operators, quoted pieces, expansions, here-document lines) one inspection may take
MAX_STEPS = 60_000

_PLAIN = re.compile(r"[^ \t\n'\"\\$`;&|<>()]+")
# a run of unquoted words without globs or expansions, and of separators other than ( ) < > newline;
# each word must end at a separator, so no part of a longer word is taken (no backtracking across words)
_RUN_WORD = r"[^ \t\n'\"\\$`;&|<>()*?\[#][^ \t\n'\"\\$`;&|<>()*?\[]*(?=[ \t\n;&|<>()]|\Z)"
_RUN = re.compile(rf"(?:(?:{_RUN_WORD}|&&|\|\||\|&|;;|[;|]|&(?!>))[ \t]*)+")
_RUN_TOKEN = re.compile(r"[^ \t;&|]+|&&|\|\||\|&|;;|[;&|]")
_OP = re.compile(r"<<<|<<-|&>>|&&|\|\||\|&|;;|>>|>\||>&|<&|<>|<<|&>|[;&|<>()]")
# 0: word characters, 1: blank, 2: ; & | ( ), 3: < >, 4: newline, 5: handled one by one
_KIND = {" ": 1, "\t": 1, ";": 2, "&": 2, "|": 2, "(": 2, ")": 2, "<": 3, ">": 3, "\n": 4,
         "#": 5, "\\": 5, "'": 5, '"': 5, "$": 5, "`": 5}
_DQ_PLAIN = re.compile(r"[^\"\\$`]+")
_ANSI_BODY = re.compile(r"(?:[^'\\]|\\.)*", re.DOTALL)
_BACKTICK_BODY = re.compile(r"(?:[^`\\]|\\.)*", re.DOTALL)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_BRACES = re.compile(r"[{}]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Command:
    """A simple command: its words, its redirections and any text fed to its stdin by the script."""

    __slots__ = ("redirects", "stdin_texts", "words")

    def __init__(self) -> None:
        self.words: list[Word] = []
        self.redirects: list[tuple[str, Word]] = []
        self.stdin_texts: list[str] = []


class Script:
    """A parsed command line: pipelines of simple commands, and whether it defines a fork bomb."""

    __slots__ = ("fork_bomb", "pipelines")

    def __init__(self, pipelines: list[list[Command]], fork_bomb: bool) -> None:
        self.pipelines = pipelines
        self.fork_bomb = fork_bomb


class _Budget:
    """The steps left to one inspection; shared by every reader it starts."""

    __slots__ = ("left",)

    def __init__(self, steps: int) -> None:
        self.left = steps

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise TooLarge(f"more than {MAX_STEPS:,} words and operators")


_BUDGET: ContextVar[_Budget | None] = ContextVar("shell_read_budget", default=None)


@contextmanager
def step_budget(steps: int = MAX_STEPS) -> Iterator[None]:
    """Count every reading started inside the block against one budget of ``steps`` steps."""
    token = _BUDGET.set(_Budget(steps))
    try:
        yield
    finally:
        _BUDGET.reset(token)


_NO_SUBS: list[Script] = []  # shared by words without substitutions; never mutated
_EMPTY_SCRIPT = Script([], False)  # what an empty substitution runs; shared


class _Lexer:
    def __init__(self, s: str, depth: int, budget: _Budget | None = None) -> None:
        if depth > MAX_DEPTH:
            raise TooComplex("nested too deeply")
        self.budget = budget or _BUDGET.get() or _Budget(MAX_STEPS)
        self.s = s
        self.n = len(s)
        self.depth = depth
        self.toks: list[Token] = []
        self.parts: list[str] = []
        self.in_word = False
        self.quoted = False
        self.dynamic = False
        self.glob = False
        self.brace = False
        self.subs: list[Script] = _NO_SUBS
        self.pending: list[tuple[str, bool, Op]] = []
        self.expect_delim: Op | None = None

    # -- words ----------------------------------------------------------------------------------
    def flush(self) -> None:
        if not self.in_word:
            return
        parts = self.parts
        word = Word(parts[0] if len(parts) == 1 else "".join(parts), self.quoted, self.dynamic, self.glob,
                    self.subs, self.brace)
        self.toks.append(word)
        if self.expect_delim is not None:
            op = self.expect_delim
            self.pending.append((word.text, op.op == "<<-", op))
            self.expect_delim = None
        self.parts = []
        self.in_word = self.quoted = self.dynamic = self.glob = self.brace = False
        self.subs = _NO_SUBS

    def add_sub(self, script: Script) -> None:
        if self.subs is _NO_SUBS:
            self.subs = []
        self.subs.append(script)

    def emit(self, op: str) -> None:
        self.flush()
        tok = Op(op)
        self.toks.append(tok)
        if op in ("<<", "<<-"):
            self.expect_delim = tok

    def nested(self, i: int) -> tuple[Script, int]:
        """Parse ``$( ... )`` / ``<( ... )`` contents starting at ``i``; return the script and the end."""
        sub = _Lexer(self.s, self.depth + 1, self.budget)
        end = sub.run(i, nested=True)
        return parse_tokens(sub.toks, self.s[i:end]), end

    def sub_text(self, text: str) -> Script:
        if not text.strip():
            return _EMPTY_SCRIPT
        sub = _Lexer(text, self.depth + 1, self.budget)
        sub.run()
        return parse_tokens(sub.toks, text)

    # -- the scanner ----------------------------------------------------------------------------
    def run(self, i: int = 0, nested: bool = False) -> int:
        s, n = self.s, self.n
        toks = self.toks
        kinds = _KIND
        plain = _PLAIN.match
        run_match = _RUN.match
        run_tokens = _RUN_TOKEN.findall
        shared = SHARED_OPS
        op_match = _OP.match
        budget = self.budget
        parens = 0
        while i < n:
            budget.left -= 1
            if budget.left < 0:
                budget.spend(0)
            c = s[i]
            kind = kinds.get(c, 0)
            if ((kind == 0 and not self.in_word) or (kind == 2 and c != "(" and c != ")")) and \
                    self.expect_delim is None:
                if self.in_word:
                    self.flush()
                m = run_match(s, i)  # fast path: plain words and simple separators, tokenized in C
                if m is not None and m.end() > i:
                    text = m.group(0)
                    if len(text) > 4 * budget.left:  # count a prefix first, so a huge run stops early
                        budget.spend(len(run_tokens(text, 0, 4 * budget.left)) - 1)
                    found = run_tokens(text)
                    budget.spend(len(found))
                    toks.extend([shared.get(t) or Word(t, False, False, False, _NO_SUBS) for t in found])
                    i = m.end()
                    last = toks[-1]
                    if (i < n and s[i] in "<>" and text[-1] not in " \t" and isinstance(last, Word)
                            and last.text.isdigit()):
                        toks.pop()  # "2>" : the digits name a file descriptor
                    continue
            if kind == 0:  # ordinary word characters
                m = plain(s, i)
                chunk = m.group(0) if m else c
                self.parts.append(chunk)
                self.in_word = True
                if "*" in chunk or "?" in chunk or "[" in chunk:
                    self.glob = True
                if "{" in chunk:
                    self.brace = True
                i += len(chunk)
            elif kind == 1:  # blank
                if self.in_word:
                    self.flush()
                i += 1
            elif kind == 2:  # ; & | ( )
                if self.in_word:
                    self.flush()
                if nested and (c == "(" or c == ")"):
                    if c == "(":
                        parens += 1
                    elif parens == 0:
                        return i + 1
                    else:
                        parens -= 1
                m = op_match(s, i)
                op = m.group(0) if m else c
                toks.append(SHARED_OPS.get(op) or Op(op))
                i += len(op)
            elif kind == 3:  # < >
                if i + 1 < n and s[i + 1] == "(":
                    if self.in_word:
                        self.flush()
                    script, i = self.nested(i + 2)
                    toks.append(Word(SUB, False, True, False, [script]))
                    continue
                if self.in_word and not self.quoted and not self.dynamic and "".join(self.parts).isdigit():
                    self.parts, self.in_word = [], False  # "2>" : the digits name a file descriptor
                m = _OP.match(s, i)
                op = m.group(0) if m else c
                self.emit(op)
                i += len(op)
            elif kind == 4:  # newline
                if self.in_word:
                    self.flush()
                toks.append(SHARED_OPS["\n"])
                i = self.heredocs(i + 1) if self.pending else i + 1
            elif c == "#" and not self.in_word:
                j = s.find("\n", i)
                i = n if j < 0 else j
            elif c == "#":  # inside a word: an ordinary character
                m = plain(s, i)
                chunk = m.group(0) if m else c
                self.parts.append(chunk)
                if "*" in chunk or "?" in chunk or "[" in chunk:
                    self.glob = True
                if "{" in chunk:
                    self.brace = True
                i += len(chunk)
            elif c == "\\":
                if i + 1 < n and s[i + 1] == "\n":
                    i += 2
                    continue
                self.in_word = self.quoted = True
                self.parts.append(s[i + 1 : i + 2])
                i += 2
            elif c == "'":
                j = s.find("'", i + 1)
                j = n if j < 0 else j
                self.parts.append(s[i + 1 : j])
                self.in_word = self.quoted = True
                i = j + 1
            elif c == '"':
                i = self.double(i + 1)
            elif c == "$":
                i = self.dollar(i)
            else:  # backtick
                i = self.backtick(i)
        if self.in_word:
            self.flush()
        return n

    def heredocs(self, pos: int) -> int:
        s, n = self.s, self.n
        for delim, strip, op in self.pending:
            lines: list[str] = []
            while pos < n:
                j = s.find("\n", pos)
                j = n if j < 0 else j
                line = s[pos:j]
                pos = j + 1
                if (line.lstrip("\t") if strip else line) == delim:
                    break
                lines.append(line)
            op.body = "\n".join(lines)
        self.pending = []
        return min(pos, n)

    def double(self, i: int) -> int:
        s, n = self.s, self.n
        self.in_word = self.quoted = True
        budget = self.budget
        while i < n:
            budget.left -= 1
            if budget.left < 0:
                budget.spend(0)
            c = s[i]
            if c == '"':
                return i + 1
            if c == "\\":
                nxt = s[i + 1 : i + 2]
                if nxt == "\n":
                    i += 2
                elif nxt in ("$", "`", '"', "\\"):
                    self.parts.append(nxt)
                    i += 2
                else:
                    self.parts.append("\\")
                    i += 1
            elif c == "$":
                i = self.dollar(i)
            elif c == "`":
                i = self.backtick(i)
            else:
                m = _DQ_PLAIN.match(s, i)
                chunk = m.group(0) if m else c
                self.parts.append(chunk)
                i += len(chunk)
        return n

    def dollar(self, i: int) -> int:
        s, n = self.s, self.n
        self.in_word = True
        nxt = s[i + 1 : i + 2]
        if nxt == "(":
            script, end = self.nested(i + 2)
            self.add_sub(script)
            self.parts.append(SUB)
            self.dynamic = True
            return end
        if nxt == "{":
            depth, pos = 1, i + 2
            budget = self.budget
            while depth and pos < n:
                budget.spend(1)
                m = _BRACES.search(s, pos)
                if m is None:
                    pos = n
                    break
                depth += 1 if m.group(0) == "{" else -1
                pos = m.end()
            body = s[i + 2 : pos - 1 if depth == 0 else pos]
            ident = _IDENT.match(body)
            if ident and ident.end() == len(body):
                self.parts.append("$" + body)
            elif ident and body[ident.end() : ident.end() + 1] in (":", "-", "=", "+", "?"):
                self.parts.append("$" + ident.group(0))
            else:
                self.parts.append("${" + body + "}")
            if "$(" in body or "`" in body:
                self.add_sub(self.sub_text(body))
            self.dynamic = True
            return pos
        if nxt == "'":
            m = _ANSI_BODY.match(s, i + 2)
            body = m.group(0) if m else ""
            self.parts.append(decode_escapes(body))
            self.quoted = True
            return min(i + 2 + len(body) + 1, n)
        if nxt == '"':
            return self.double(i + 2)
        m = _NAME.match(s, i + 1)
        if m:
            self.parts.append("$" + m.group(0))
            self.dynamic = True
            return m.end()
        self.parts.append("$")
        return i + 1

    def backtick(self, i: int) -> int:
        m = _BACKTICK_BODY.match(self.s, i + 1)
        body = m.group(0) if m else ""
        inner = re.sub(r"\\([`\\$])", r"\1", body) if "\\" in body else body
        self.add_sub(self.sub_text(inner))
        self.parts.append(SUB)
        self.in_word = self.dynamic = True
        return min(i + 1 + len(body) + 1, self.n)


def lex(text: str, depth: int = 0) -> list[Token]:
    """Split ``text`` into words and operators (substitutions are parsed on the way)."""
    lexer = _Lexer(text, depth)
    lexer.run()
    return lexer.toks


def parse_tokens(toks: list[Token], source: str | None = None) -> Script:
    """Group tokens into pipelines of simple commands."""
    pipelines: list[list[Command]] = []
    pipeline: list[Command] = []
    cmd = Command()
    redirect: Op | None = None
    for tok in toks:
        if isinstance(tok, Word):
            if redirect is not None:
                cmd.redirects.append((redirect.op, tok))
                if redirect.op in ("<<", "<<-"):
                    cmd.stdin_texts.append(redirect.body)
                elif redirect.op == "<<<":
                    cmd.stdin_texts.append(tok.text)
                redirect = None
            else:
                cmd.words.append(tok)
            continue
        op = tok.op
        if op in REDIRECTS:
            redirect = tok
            continue
        redirect = None
        if cmd.words or cmd.redirects:
            pipeline.append(cmd)
        cmd = Command()
        if op not in ("|", "|&") and pipeline:
            pipelines.append(pipeline)
            pipeline = []
    if cmd.words or cmd.redirects:
        pipeline.append(cmd)
    if pipeline:
        pipelines.append(pipeline)
    maybe_bomb = source is None or (("(" in source or "function" in source) and ("&" in source or "|" in source))
    return Script(pipelines, maybe_bomb and has_fork_bomb(toks))


def parse(text: str, depth: int = 0) -> Script:
    """Parse a command line; raises :class:`TooComplex` past :data:`MAX_DEPTH` levels of nesting."""
    return parse_tokens(lex(text, depth), text)
