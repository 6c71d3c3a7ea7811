"""Accessibility snapshots the model can read: refs on what it can act on, a budget, paging and search.

The raw text is Playwright's AI-mode ARIA snapshot (``page.aria_snapshot(mode="ai")``): one YAML-like
line per node, ``[ref=e5]`` on each (``f1e2`` inside a frame). Playwright keeps a ref on the same
element across snapshots, so a ref stays valid while its element lives. :func:`compact` turns it into
what the model sees:

* every Playwright ref renamed to the tab's own ``e<n>`` (numbered over the tab's life: a ref of a page
  left behind is never reused for an element of the next one, so it is refused as stale);

* ``[@e5]`` only on interactive roles (buttons, links, fields, options …) — the refs the action tools
  take; other nodes lose their ref (they stay *known*, so an action on one is not called unknown);
* nameless ``generic`` wrappers are dropped and their children moved up one level, and
  ``[cursor=pointer]`` is removed (noise for a model).

A snapshot longer than ``browser.snapshot_budget`` tokens (about 4 characters each) is split into pages
of whole lines; the first page ends with a marker saying where the whole text is saved and how to page
(``page=N``) or search (``find=...``) it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from hermes.tools.browser.config import CHARS_PER_TOKEN

INTERACTIVE = frozenset({
    "button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox", "option",
    "menuitem", "menuitemcheckbox", "menuitemradio", "tab", "switch", "slider", "spinbutton", "treeitem",
    "textarea",
})
_REF = re.compile(r" \[ref=((?:f\d+)?e\d+)\]")
_ROLE = re.compile(r'^(\s*)- ([A-Za-z]+)( "(?:[^"\\]|\\.)*")?')
_NOISE = re.compile(r" \[cursor=pointer\]")
_WRAPPER = re.compile(r"^- generic(?: \[[^\]]*\])*:$")
REF_SHAPE = re.compile(r"^@?(e\d+)$")
CUT_MARKER = ("[hermes: snapshot cut here — page {page} of {pages} (lines {first}–{last} of {total}); the whole "
              "snapshot is saved at {path}. Call browser_snapshot with page={next} for the next part, or "
              "find=\"some words\" to search it.]")


@dataclass
class Snapshot:
    """A compacted snapshot: its lines, the interactive refs (ref → ``role "name"``) and every ref."""

    lines: list[str]
    interactive: dict[str, str] = field(default_factory=dict)
    every_ref: set[str] = field(default_factory=set)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def compact(raw: str, rename: Callable[[str], str] = str) -> Snapshot:
    """The model's view of Playwright's AI snapshot (see the module docstring); ``rename`` turns Playwright's
    ref into the one the model sees (the tab numbers them itself, so a ref never comes back for another
    page's element)."""
    out = Snapshot([])
    dropped: list[int] = []  # indents of the generic wrappers being skipped
    for line in raw.splitlines():
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        while dropped and indent <= dropped[-1]:
            dropped.pop()
        refs = [rename(ref) for ref in _REF.findall(line)]
        out.every_ref.update(refs)
        body = _NOISE.sub("", _REF.sub("", stripped))
        if _WRAPPER.match(body.replace(" [active]", "")):
            dropped.append(indent)
            continue
        match = _ROLE.match(body)
        if refs and match and match.group(2) in INTERACTIVE:
            ref = refs[0]
            name = (match.group(3) or "").strip()
            out.interactive[ref] = f"{match.group(2)}{' ' + name if name else ''}"
            body = _with_ref(body[:-1], ref) + ":" if body.endswith(":") else _with_ref(body, ref)
        out.lines.append(" " * max(0, indent - 2 * len(dropped)) + body)
    return out


def _with_ref(body: str, ref: str) -> str:
    """``- textbox "Name" [@e5]: value`` — the ref goes before an inline value."""
    match = _ROLE.match(body)
    assert match is not None
    end = match.end()
    rest = body[end:]
    attrs = re.match(r"(?: \[[^\]]*\])*", rest)
    cut = end + (attrs.end() if attrs else 0)
    return f"{body[:cut]} [@{ref}]{body[cut:]}"


def page_ranges(lines: list[str], budget_chars: int) -> list[tuple[int, int]]:
    """``(start, end)`` line ranges of pages of at most ``budget_chars`` characters (a longer line is a
    page of its own, cut when shown)."""
    ranges: list[tuple[int, int]] = []
    start, size = 0, 0
    for i, line in enumerate(lines):
        cost = len(line) + 1
        if i > start and size + cost > budget_chars:
            ranges.append((start, i))
            start, size = i, 0
        size += cost
    ranges.append((start, len(lines)))
    return ranges


def render_page(lines: list[str], budget_chars: int, page: int, saved_at: str) -> tuple[str, int]:
    """Page ``page`` (1-based) of ``lines`` and the number of pages; a marker closes every page but the
    last. A page number past the end is a ValueError naming the last one."""
    ranges = page_ranges(lines, budget_chars)
    if not 1 <= page <= len(ranges):
        raise ValueError(f"page {page} does not exist: the snapshot has {len(ranges)} page(s)")
    start, end = ranges[page - 1]
    text = "\n".join(lines[start:end])[:budget_chars]
    if page < len(ranges):
        text += "\n" + CUT_MARKER.format(page=page, pages=len(ranges), first=start + 1, last=end, total=len(lines),
                                         path=saved_at, next=page + 1)
    elif page > 1:
        text += f"\n[hermes: last page ({page} of {len(ranges)}) of the snapshot]"
    return text, len(ranges)


def find_lines(lines: list[str], query: str, budget_chars: int, limit: int = 40) -> list[dict[str, object]]:
    """Lines holding ``query`` (case-insensitive), with their line and page numbers, at most ``limit``."""
    needle = query.casefold()
    ranges = page_ranges(lines, budget_chars)
    hits: list[dict[str, object]] = []
    page = 0
    for i, line in enumerate(lines):
        while ranges[page][1] <= i:
            page += 1
        if needle in line.casefold():
            hits.append({"line": i + 1, "page": page + 1, "text": line.strip()[:300]})
            if len(hits) >= limit:
                break
    return hits


def tokens_of(text: str) -> int:
    """A quick estimate of the tokens of ``text`` (about 4 characters each)."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def parse_ref(value: object) -> str:
    """``e5`` from ``@e5`` / ``e5``; a ValueError for anything else."""
    match = REF_SHAPE.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{str(value)[:40]!r} is not an element ref; refs look like @e5 (from browser_snapshot)")
    return match.group(1)
