"""Finding ``old_string`` in a file for ``patch``: exact first, then whitespace-tolerant strategies.

Strategies, tried in order; the first that finds any candidate decides:

``exact``
    the text as given (plain substring search).
``trailing_whitespace``
    whole lines compared with trailing whitespace (and stray ``\\r``) ignored.
``indentation``
    whole lines compared with leading and trailing whitespace ignored; the replacement is re-indented
    to the file's indentation at the match.
``whitespace``
    whole lines compared with every run of whitespace collapsed to one space; re-indented as above.

More than one candidate is refused (the model is asked to add context or set ``replace_all``) rather
than guessed. The fuzzy strategies never run an edit distance over the file: each takes the most
selective line of ``old_string`` as an anchor, finds that line's longest token with ``str.find``, and
verifies the few candidate blocks line by line, so a miss on a 10,000-line file costs a few passes of
C-level substring search.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

from hermes.errors import ToolError
from hermes.redact import MASK

LABELS = {
    "exact": "exact match",
    "trailing_whitespace": "ignoring trailing whitespace",
    "indentation": "ignoring indentation",
    "whitespace": "with whitespace normalised",
}
_MAX_LISTED = 6
_NUMBERED = re.compile(r"^\s*\d+\|")


def _ws(line: str) -> str:
    return " ".join(line.split())


_KEYS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("trailing_whitespace", str.rstrip),
    ("indentation", str.strip),
    ("whitespace", _ws),
)


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` with ``replacement``; ``line`` is the 1-based first line."""

    start: int
    end: int
    replacement: str
    line: int


@dataclass(frozen=True)
class Plan:
    strategy: str
    edits: tuple[Edit, ...]

    def apply(self, text: str) -> str:
        parts, pos = [], 0
        for edit in self.edits:
            parts.append(text[pos : edit.start])
            parts.append(edit.replacement)
            pos = edit.end
        parts.append(text[pos:])
        return "".join(parts)


class _Lines:
    """The file's lines and where each starts, computed once and shared by the strategies."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.split("\n")
        self.starts = [0, *accumulate(len(line) + 1 for line in self.lines[:-1])]

    def line_of(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos) - 1

    def lines_containing(self, token: str) -> list[int]:
        found: list[int] = []
        pos = self.text.find(token)
        while pos >= 0:
            idx = self.line_of(pos)
            if not found or found[-1] != idx:
                found.append(idx)
            pos = self.text.find(token, self.starts[idx + 1] if idx + 1 < len(self.starts) else len(self.text))
        return found


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _listed(lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:_MAX_LISTED])
    return shown + (", …" if len(lines) > _MAX_LISTED else "")


def _ambiguous(where: str, lines: list[int], strategy: str, count: int | None = None) -> ToolError:
    how = "" if strategy == "exact" else f" ({LABELS[strategy]})"
    return ToolError(
        f"old_string matches {count or len(lines)} places in {where}{how}, at lines {_listed(lines)}. Include more "
        "surrounding lines in old_string so it matches exactly one place, or set replace_all=true to change "
        "every one."
    )


def _exact(text: str, old: str, new: str, replace_all: bool, where: str) -> Plan | None:
    first = text.find(old)
    if first < 0:
        return None
    if not replace_all:
        if text.find(old, first + 1) < 0:
            return Plan("exact", (Edit(first, first + len(old), new, text.count("\n", 0, first) + 1),))
        positions: list[int] = []
        pos = first
        while pos >= 0 and len(positions) <= _MAX_LISTED:
            positions.append(pos)
            pos = text.find(old, pos + 1)
        lines = [text.count("\n", 0, p) + 1 for p in positions]
        total = len(positions) if pos < 0 else text.count(old)
        raise _ambiguous(where, lines, "exact", max(total, len(lines)))
    edits, pos, line, last = [], first, 1, 0
    while pos >= 0:
        line += text.count("\n", last, pos)
        last = pos
        edits.append(Edit(pos, pos + len(old), new, line))
        pos = text.find(old, pos + len(old))
    return Plan("exact", tuple(edits))


def _split_old(old: str) -> list[str]:
    return (old[:-1] if old.endswith("\n") else old).split("\n")


def _candidates(doc: _Lines, keys_old: list[str], key: Callable[[str], str]) -> list[int]:
    """Start lines of blocks whose keyed lines equal ``keys_old``."""
    nonblank = [j for j, k in enumerate(keys_old) if k]
    anchor_at = max(nonblank, key=lambda j: len(keys_old[j]))
    anchor = keys_old[anchor_at]
    token = max(anchor.split(), key=len)
    m, n = len(keys_old), len(doc.lines)
    starts = []
    for idx in doc.lines_containing(token):
        s = idx - anchor_at
        if s < 0 or s + m > n or key(doc.lines[idx]) != anchor:
            continue
        if all(key(doc.lines[s + t]) == keys_old[t] for t in range(m)):
            starts.append(s)
    return starts


def _width(lead: str, tab: int) -> int:
    return len(lead.expandtabs(tab))


def reindent(new_lines: list[str], old_ind: str, file_ind: str) -> list[str]:
    """Shift ``new_lines`` so that indentation ``old_ind`` becomes the file's ``file_ind``."""
    if old_ind == file_ind:
        return new_lines
    tabs = bool(file_ind) and set(file_ind) == {"\t"}
    tab = 4
    if tabs and old_ind and "\t" not in old_ind:
        tab = max(1, len(old_ind) // len(file_ind))
    base_old, base_file = _width(old_ind, tab), _width(file_ind, tab)
    out = []
    for line in new_lines:
        body = line.lstrip()
        if not body:
            out.append("")
            continue
        width = max(0, _width(_indent(line), tab) - base_old + base_file)
        lead = "\t" * (width // tab) + " " * (width % tab) if tabs else " " * width
        out.append(lead + body)
    return out


def _line_plan(doc: _Lines, old: str, new: str, replace_all: bool, where: str) -> Plan | None:
    old_lines = _split_old(old)
    new_body = new[:-1] if old.endswith("\n") and new.endswith("\n") else new
    for name, key in _KEYS:
        keys_old = [key(line) for line in old_lines]
        if not any(keys_old):
            return None
        starts = _candidates(doc, keys_old, key)
        if not starts:
            continue
        if len(starts) > 1 and not replace_all:
            raise _ambiguous(where, [s + 1 for s in starts], name)
        chosen: list[int] = []
        for s in starts:
            if not chosen or s >= chosen[-1] + len(old_lines):
                chosen.append(s)
        first_nonblank = next(j for j, k in enumerate(keys_old) if k)
        edits = []
        for s in chosen:
            e = s + len(old_lines) - 1
            start, end = doc.starts[s], doc.starts[e] + len(doc.lines[e])
            if new == "" and old.endswith("\n"):
                if end < len(doc.text):
                    end += 1
                elif start > 0:
                    start -= 1
            replacement = new_body
            if name != "trailing_whitespace" and new_body:
                old_ind = _indent(old_lines[first_nonblank])
                file_ind = _indent(doc.lines[s + first_nonblank])
                replacement = "\n".join(reindent(new_body.split("\n"), old_ind, file_ind))
            edits.append(Edit(start, end, replacement, s + 1))
        return Plan(name, tuple(edits))
    return None


def _hint(doc: _Lines, old: str) -> str:
    """Where the first line of old_string occurs and where the block stops matching."""
    old_lines = _split_old(old)
    keys = [line.strip() for line in old_lines]
    j0 = next((j for j, k in enumerate(keys) if k), None)
    if j0 is None:
        return ""
    hits = [i for i in doc.lines_containing(keys[j0]) if doc.lines[i].strip() == keys[j0]]
    if not hits or len(hits) > 3:
        return ""
    parts = []
    for i in hits:
        s = i - j0
        for t in range(j0 + 1, len(old_lines)):
            if s + t >= len(doc.lines):
                parts.append(f"line {i + 1} matches old_string's first line but the file ends before its line {t + 1}")
                break
            if doc.lines[s + t].strip() != keys[t]:
                parts.append(
                    f"line {i + 1} matches old_string's first line, but old_string line {t + 1} "
                    f"({old_lines[t].strip()[:80]!r}) differs from file line {s + t + 1} "
                    f"({doc.lines[s + t].strip()[:80]!r})"
                )
                break
    return (" Hint: " + "; ".join(parts) + ".") if parts else ""


def plan_edit(text: str, old: str, new: str, replace_all: bool, where: str) -> Plan:
    """Find ``old`` in ``text`` and return the edits, or raise :class:`ToolError` saying why not."""
    plan = _exact(text, old, new, replace_all, where)
    if plan is not None:
        return plan
    doc = _Lines(text)
    plan = _line_plan(doc, old, new, replace_all, where)
    if plan is not None:
        return plan
    tried = ", ".join(LABELS[name] for name in ("exact", *(n for n, _ in _KEYS)))
    message = (
        f"old_string was not found in {where} (tried: {tried}). Read the lines you want to change with "
        "read_file and copy them exactly, without the line-number prefix."
    )
    if MASK in old:
        message += (
            f" old_string contains {MASK}: secrets are masked in what read_file shows, so text around them "
            "cannot be matched; choose old_string away from the secret."
        )
    if all(_NUMBERED.match(line) for line in _split_old(old) if line.strip()):
        message += " old_string seems to include read_file's line-number prefixes ('     7|'); leave them out."
    raise ToolError(message + _hint(doc, old))
