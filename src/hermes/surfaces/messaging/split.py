"""Cutting a long answer into messages a platform accepts, at sensible boundaries.

:func:`split_text` prefers, in order: a blank line (between paragraphs), a line end, the end of a
sentence, a space; only a single unbroken run longer than the limit is cut mid-word. A code fence
cut in two is closed at the end of one part and reopened (same language) at the start of the next,
so every part renders. Lengths are measured with the platform's own measure (Telegram counts UTF-16
code units, not characters).
"""

from __future__ import annotations

import re
from collections.abc import Callable

_FENCE = re.compile(r"^```([^\n`]*)$", re.MULTILINE)
_SENTENCE_END = re.compile(r"[.!?。！？][\"')\]]?\s")


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units (what Telegram's 4096 limit counts)."""
    return len(text.encode("utf-16-le")) // 2


def _open_fence(text: str) -> str | None:
    """The language tag of a code fence left open at the end of ``text`` ("" for none), or None."""
    open_lang: str | None = None
    for match in _FENCE.finditer(text):
        open_lang = match.group(1) if open_lang is None else None
    return open_lang


def _fit(text: str, limit: int, measure: Callable[[str], int]) -> int:
    """The longest prefix length (in characters) of ``text`` whose measure is within ``limit``."""
    if measure(text) <= limit:
        return len(text)
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if measure(text[:mid]) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _cut(window: str) -> int:
    """Where to cut ``window`` (a prefix that fits): the best boundary in its second half, else its end."""
    floor = len(window) // 2
    for boundary in ("\n\n", "\n"):
        at = window.rfind(boundary)
        if at >= floor:
            return at + 1
    ends = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() >= floor]
    if ends:
        return ends[-1]
    at = window.rfind(" ")
    if at >= floor:
        return at + 1
    return len(window)


def _take(text: str, limit: int, keep: int, measure: Callable[[str], int]) -> tuple[str, str]:
    """The next part of ``text`` within ``limit`` (never just its first ``keep`` characters) and the rest."""
    window = text[:_fit(text, limit, measure)]
    at = _cut(window) if len(window) > keep else len(window)
    at = max(at, keep + 1)
    return text[:at].rstrip("\n"), text[at:].lstrip("\n")


def split_text(text: str, limit: int, measure: Callable[[str], int] = len) -> list[str]:
    """``text`` as parts each within ``limit`` by ``measure`` (see the module docstring)."""
    if limit < 16:
        raise ValueError("a message limit under 16 leaves no room for text")
    parts: list[str] = []
    rest = text
    reopen = ""
    while rest:
        rest = reopen + rest
        if measure(rest) <= limit:
            parts.append(rest)
            break
        closing = "\n```"
        part, after = _take(rest, limit, len(reopen), measure)
        lang = _open_fence(part)
        if lang is not None and measure(part + closing) > limit:  # leave room to close the fence
            part, after = _take(rest, limit - measure(closing), len(reopen), measure)
            lang = _open_fence(part)
        rest = after
        if lang is not None:
            part += closing
            reopen = f"```{lang}\n"
        else:
            reopen = ""
        if part.strip():
            parts.append(part)
    return [p for p in parts if p.strip()] or ([text] if text else [])
