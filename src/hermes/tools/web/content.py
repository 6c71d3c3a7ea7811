"""Turning fetched documents into text for the model: HTML → Markdown, PDF → text, budget, untrusted marking.

* :func:`html_to_main_markdown` — the main content of an HTML page as Markdown. It uses **trafilatura**
  (an optional dependency, imported on first use) and falls back to hermes' own converter
  (:func:`hermes.net.html2md.html_to_markdown`, ``only_main=True``) when trafilatura is not installed or
  finds no main content;
* :func:`pdf_to_text` — the text of a PDF with **pypdf** (optional; a clear error names the package when
  it is missing);
* :func:`cut_to_budget` — cuts long text at a line boundary near the budget and appends
  :data:`TRUNCATION_MARKER` (an open code fence is closed first);
* :func:`mark_untrusted` (:mod:`hermes.tools.untrusted`) — wraps page text between a header line and
  an end line that tell the model the text comes from the web and must not be obeyed (fetched text is untrusted).

Everything here is pure and synchronous (CPU work); the tools run it in a worker thread.
"""

from __future__ import annotations

import html as htmllib
import importlib
import io
import logging
import re
from dataclasses import dataclass
from typing import Any

from hermes.errors import ToolError
from hermes.net.html2md import html_to_markdown
from hermes.tools.untrusted import UNTRUSTED_FOOTER as UNTRUSTED_FOOTER
from hermes.tools.untrusted import UNTRUSTED_HEADER as UNTRUSTED_HEADER
from hermes.tools.untrusted import mark_untrusted as mark_untrusted

#: appended where a page was cut; ``{shown}``/``{total}`` are character counts
TRUNCATION_MARKER = ("[hermes: page truncated — showing the first {shown:,} of {total:,} characters "
                     "(web.extract_max_chars budget); the rest of the page was not included]")
log = logging.getLogger(__name__)

PDF_PACKAGE = "pypdf"
PDF_MISSING = ("reading PDF documents needs the Python package 'pypdf', which is not installed. Install it with "
               "'pip install pypdf'.")
MAX_PDF_PAGES = 300

_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_HEADERLINK = re.compile(r"\[(?:¶|#|🔗|§)\]\([^)\s]*\)")
_HEADING_MARK = re.compile(r"^(#{1,6} .*?)\s*[¶§]\s*$", re.MULTILINE)
_TAGS = re.compile(r"<[^>]{0,500}>")
_SPACES = re.compile(r"\s+")
_BLANKS = re.compile(r"\n{3,}")
_BLOCK_START = re.compile(r"^(?:[-*+] |\d+[.)] |>|\||#|```)")
_HTML_START = re.compile(r"^\s*(?:<!doctype html|<html[\s>]|<head[\s>]|<body[\s>])", re.IGNORECASE)
#: trafilatura answers shorter than this are compared with hermes' own converter
_SHORT = 200


@dataclass(frozen=True)
class Converted:
    """Converted page text, the page title, and which converter produced it."""

    markdown: str
    title: str
    converter: str


def looks_like_html(text: str) -> bool:
    """Whether a backend handed back an HTML document instead of Markdown or text."""
    return bool(_HTML_START.match(text[:512]))


def page_title(html: str) -> str:
    """The ``<title>`` of an HTML document (entities decoded, whitespace collapsed), or ``""``."""
    match = _TITLE.search(html[:65536])
    return _SPACES.sub(" ", htmllib.unescape(match.group(1))).strip() if match else ""


def _trafilatura() -> Any | None:
    """The trafilatura module, or None when it is not installed (or its installation is broken)."""
    try:
        return importlib.import_module("trafilatura")
    except Exception as exc:  # ImportError, or a broken lxml underneath: the own converter takes over
        if not isinstance(exc, ImportError):
            log.warning("trafilatura could not be imported (%s); using the built-in converter", type(exc).__name__)
        return None


def strip_permalinks(text: str) -> str:
    """Drop heading permalinks (``[¶](#id)`` links, a trailing ``¶`` or ``§`` on a heading)."""
    return _HEADING_MARK.sub(r"\1", _HEADERLINK.sub("", text))


def tidy_markdown(text: str) -> str:
    """trafilatura's Markdown cleaned: permalinks dropped, paragraphs wrapped in the page source re-joined.

    Code blocks, tables, lists, quotes and headings are left as they are.
    """
    text = strip_permalinks(text)
    lines: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            lines.append(line.rstrip())
            continue
        if fenced:
            lines.append(line)
            continue
        stripped = line.strip()
        previous = lines[-1] if lines else ""
        if stripped and previous.strip() and not previous.lstrip().startswith(("|", "```", "#")) \
                and not _BLOCK_START.match(stripped):
            lines[-1] = f"{previous} {stripped}"  # a paragraph wrapped in the page source: one line again
        else:
            lines.append(line.rstrip())
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def html_to_main_markdown(html: str, url: str) -> Converted:
    """The main content of ``html`` as Markdown (see the module docstring for the converters)."""
    title = page_title(html)
    module = _trafilatura()
    extracted: str | None = None
    if module is not None:
        try:
            result = module.extract(html, url=url or None, output_format="markdown", include_links=True,
                                    include_tables=True, include_formatting=True, include_images=False,
                                    include_comments=False, deduplicate=False)
        except Exception:  # a converter bug must not lose the page: the own converter still runs
            result = None
        extracted = tidy_markdown(result) if isinstance(result, str) else None
        if extracted and len(extracted) >= _SHORT:
            return Converted(extracted, title, "trafilatura")
    own = html_to_markdown(html, url, only_main=True)
    markdown = strip_permalinks(own.markdown).strip()
    if extracted and len(extracted) >= len(markdown):
        return Converted(extracted, title or own.title or "", "trafilatura")
    return Converted(markdown, title or own.title or "", "html2md")


def plain_to_markdown(text: str) -> str:
    """Plain text as it is, with line endings normalised."""
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()


def pdf_to_text(data: bytes, max_pages: int = MAX_PDF_PAGES) -> Converted:
    """The text of a PDF, page by page (``[page N]`` lines between pages); ToolError when unreadable."""
    try:
        pypdf = importlib.import_module(PDF_PACKAGE)
    except ImportError:
        raise ToolError(PDF_MISSING) from None
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ToolError("the PDF is encrypted and cannot be read without a password")
        total = len(reader.pages)
        parts: list[str] = []
        for number, page in enumerate(reader.pages, start=1):
            if number > max_pages:
                parts.append(f"[hermes: only the first {max_pages} of {total} PDF pages were read]")
                break
            text = page.extract_text() or ""
            parts.append(f"[page {number}]\n{text.strip()}")
        title = ""
        meta = reader.metadata
        if meta is not None and isinstance(meta.title, str):
            title = meta.title.strip()
    except ToolError:
        raise
    except Exception as exc:  # pypdf raises many types for damaged files
        raise ToolError(f"the PDF could not be read ({type(exc).__name__})") from None
    return Converted("\n\n".join(parts).strip(), title, "pypdf")


def cut_to_budget(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most about ``limit`` characters plus the marker; (text, whether it was cut)."""
    if len(text) <= limit:
        return text, False
    cut = text.rfind("\n", int(limit * 0.8), limit)
    kept = text[: cut if cut > 0 else limit].rstrip()
    if kept.count("```") % 2:
        kept += "\n```"
    return f"{kept}\n\n{TRUNCATION_MARKER.format(shown=len(kept), total=len(text))}", True


def clean_snippet(text: str, limit: int = 500) -> str:
    """A search snippet or title as plain text: tags removed, entities decoded, whitespace collapsed."""
    plain = _SPACES.sub(" ", htmllib.unescape(_TAGS.sub("", text))).strip()
    return plain if len(plain) <= limit else plain[: limit - 1].rstrip() + "…"
