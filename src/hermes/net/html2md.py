"""A small HTML → Markdown converter on :mod:`html.parser` (main text of a page, for the local scrape).

Not a browser and not a readability engine — a careful one-pass converter:

* headings, paragraphs, line breaks, bold/italic, inline code and ``<pre>`` blocks, links (made
  absolute against the page URL), images (``data:`` images dropped), nested lists, block quotes,
  simple tables and rules;
* never output: ``script``, ``style``, ``noscript``, ``template``, ``svg``, ``iframe``, ``canvas``,
  form controls and everything in ``<head>`` (the ``<title>`` and meta description become metadata);
* ``only_main=True`` (Firecrawl's ``onlyMainContent``) also drops page chrome — ``nav``, ``header``,
  ``footer``, ``aside``, ``form``, ``dialog`` and elements with a navigation/banner/contentinfo/
  complementary role — and, when the page has ``<main>`` or ``<article>`` elements, keeps only those.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin

_NEVER = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "canvas", "object", "select",
                    "button", "textarea", "head", "math"})
_CHROME = frozenset({"nav", "header", "footer", "aside", "form", "dialog"})
_CHROME_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                   "track", "wbr"})
_BLOCK = frozenset({"p", "div", "section", "main", "article", "body", "html", "figure", "figcaption", "dl", "dt",
                    "dd", "address", "details", "summary", "center"})
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_EMPHASIS = {"strong": "**", "b": "**", "em": "*", "i": "*"}
_MAIN_RE = re.compile(r"<(main|article)[\s>]", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
_BR = "\ue000"  # a line break inside a block, kept through whitespace collapsing
_BR_RE = re.compile(f" ?{_BR} ?")


def _collapse(parts: list[str], breaks: str = "\n") -> str:
    return _BR_RE.sub(breaks, _SPACES.sub(" ", "".join(parts))).strip()


@dataclass
class Extracted:
    """The converted page."""

    markdown: str
    title: str | None = None
    description: str | None = None
    language: str | None = None
    links: list[str] = field(default_factory=list)


class _Converter(HTMLParser):
    def __init__(self, base_url: str, only_main: bool, main_mode: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.only_main = only_main
        self.main_mode = main_mode
        self.blocks: list[str] = []
        self.item_blocks: set[int] = set()
        self.inline: list[str] = []
        self.skip: list[str] = []
        self.main_depth = 0
        self.lists: list[list[str | int]] = []
        self.pending_marker: str | None = None
        self.pre: list[str] | None = None
        self.quote = 0
        self.links: list[tuple[str | None, int]] = []
        self.rows: list[list[str]] | None = None
        self.cell: list[str] | None = None
        self.in_title = False
        self.title_parts: list[str] = []
        self.description: str | None = None
        self.language: str | None = None
        self.hrefs: list[str] = []

    # -- output helpers ------------------------------------------------------------------------------
    @property
    def capturing(self) -> bool:
        return not self.skip and (not self.main_mode or self.main_depth > 0)

    def _emit(self, text: str) -> None:
        if self.cell is not None:
            self.cell.append(text)
        else:
            self.inline.append(text)

    def _flush(self) -> None:
        text = _collapse(self.inline)
        self.inline = []
        if not text:
            return
        item = self.pending_marker is not None or bool(self.lists)
        if self.pending_marker is not None:
            text = self.pending_marker + text
            self.pending_marker = None
        elif self.lists:
            text = "  " * len(self.lists) + text
        if self.quote:
            text = "\n".join("> " * self.quote + line for line in text.split("\n"))
        if item:
            self.item_blocks.add(len(self.blocks))
        self.blocks.append(text)

    def _block(self, text: str) -> None:
        self._flush()
        self.blocks.append(text)

    # -- parser callbacks ----------------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v or "") for k, v in attrs}
        if tag == "html" and a.get("lang"):
            self.language = a["lang"]
        if tag == "title":
            self.in_title = True
        elif tag == "body" and self.skip and self.skip[0] == "head":  # <head> never closed
            self.skip.clear()
        elif tag == "meta" and a.get("name", "").lower() == "description" and self.description is None:
            self.description = a.get("content", "").strip() or None
        if self.skip:
            if tag not in _VOID:
                self.skip.append(tag)
            return
        if tag in _NEVER or (self.only_main and (tag in _CHROME or a.get("role", "").lower() in _CHROME_ROLES)):
            if tag not in _VOID:
                self.skip.append(tag)
            return
        if tag in ("main", "article"):
            self.main_depth += 1
        if not self.capturing:
            return
        self._open(tag, a)

    def _open(self, tag: str, a: dict[str, str]) -> None:
        if self.pre is not None:
            if tag == "br":
                self.pre.append("\n")
            return
        if tag in _HEADINGS or tag in _BLOCK or tag == "blockquote":
            self._flush()
            if tag == "blockquote":
                self.quote += 1
        elif tag == "br":
            self._emit(_BR)
        elif tag in _EMPHASIS:
            self._emit(_EMPHASIS[tag])
        elif tag == "code":
            self._emit("`")
        elif tag == "pre":
            self._flush()
            self.pre = []
        elif tag in ("ul", "ol"):
            self._flush()
            self.lists.append([tag, 0])
        elif tag == "li":
            self._flush()
            if self.lists:
                current = self.lists[-1]
                current[1] = int(current[1]) + 1
                marker = f"{current[1]}. " if current[0] == "ol" else "- "
                self.pending_marker = "  " * (len(self.lists) - 1) + marker
            else:
                self.pending_marker = "- "
        elif tag == "a":
            href = a.get("href", "").strip()
            usable = href and not href.lower().startswith(("javascript:", "#"))
            target = urljoin(self.base_url, href) if usable else None
            if target:
                self.hrefs.append(target)
            self._emit("")
            self.links.append((target, len(self.cell if self.cell is not None else self.inline)))
        elif tag == "img":
            src = a.get("src", "").strip()
            if src and not src.lower().startswith("data:"):
                self._emit(f"![{a.get('alt', '').strip()}]({urljoin(self.base_url, src)})")
        elif tag == "hr":
            self._block("---")
        elif tag == "table" and self.rows is None:
            self._flush()
            self.rows = []
        elif tag == "tr" and self.rows is not None:
            self.rows.append([])
        elif tag in ("td", "th") and self.rows is not None:
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if self.skip:
            if tag in self.skip:
                while self.skip and self.skip.pop() != tag:
                    pass
            return
        was_capturing = self.capturing
        if tag in ("main", "article") and self.main_depth:
            if was_capturing:
                self._flush()
            self.main_depth -= 1
            return
        if was_capturing:
            self._close(tag)

    def _close(self, tag: str) -> None:
        if self.pre is not None:
            if tag == "pre":
                code = "".join(self.pre).strip("\n")
                self.pre = None
                self._block(f"```\n{code}\n```")
            return
        if tag in _HEADINGS:
            text = _collapse(self.inline, " ")
            self.inline = []
            if text:
                self.blocks.append("#" * _HEADINGS[tag] + " " + text)
        elif tag in _BLOCK or tag == "li":
            self._flush()
        elif tag == "blockquote":
            self._flush()
            self.quote = max(0, self.quote - 1)
        elif tag in _EMPHASIS:
            self._emit(_EMPHASIS[tag])
        elif tag == "code":
            self._emit("`")
        elif tag in ("ul", "ol") and self.lists:
            self._flush()
            self.lists.pop()
        elif tag == "a" and self.links:
            self._close_link()
        elif tag in ("td", "th") and self.cell is not None and self.rows is not None:
            text = _collapse(self.cell, " ").replace("|", "\\|")
            self.cell = None
            if not self.rows:
                self.rows.append([])
            self.rows[-1].append(text)
        elif tag == "table" and self.rows is not None:
            rows = [r for r in self.rows if any(r)]
            self.rows = None
            if rows:
                self._block(_table(rows))

    def _close_link(self) -> None:
        target, start = self.links.pop()
        buf = self.cell if self.cell is not None else self.inline
        text = _collapse(buf[start:], " ")
        del buf[start:]
        if target and text:
            buf.append(f"[{text}]({target})")
        elif text:
            buf.append(text)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title_parts.append(data)
            return
        if not self.capturing:
            return
        if self.pre is not None:
            self.pre.append(data)
        else:
            self._emit(data)

    def finish(self) -> str:
        while self.links:
            self._close_link()
        if self.pre is not None:
            self._block("```\n" + "".join(self.pre).strip("\n") + "\n```")
            self.pre = None
        self._flush()
        if not self.blocks:
            return ""
        parts = [self.blocks[0]]
        for i in range(1, len(self.blocks)):
            tight = i in self.item_blocks and i - 1 in self.item_blocks
            parts.append(("\n" if tight else "\n\n") + self.blocks[i])
        return "".join(parts).strip() + "\n"


def _table(rows: list[list[str]]) -> str:
    width = max(len(r) for r in rows)
    padded = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(r) + " |" for r in padded[1:]]
    return "\n".join(lines)


def html_to_markdown(html: str, base_url: str = "", *, only_main: bool = True) -> Extracted:
    """Convert ``html`` to Markdown; ``base_url`` makes links and images absolute."""
    main_mode = only_main and bool(_MAIN_RE.search(html))
    conv = _Converter(base_url, only_main, main_mode)
    conv.feed(html)
    conv.close()
    markdown = conv.finish()
    if main_mode and not markdown.strip():  # an empty <main> shell: fall back to the whole body
        conv = _Converter(base_url, only_main, False)
        conv.feed(html)
        conv.close()
        markdown = conv.finish()
    title = _SPACES.sub(" ", "".join(conv.title_parts)).strip() or None
    return Extracted(markdown, title, conv.description, conv.language, list(dict.fromkeys(conv.hrefs)))
