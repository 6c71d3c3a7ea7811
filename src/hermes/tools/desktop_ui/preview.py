"""``desktop_preview``, ``drive_preview``, ``annotate_preview``: the app's preview pane.

The pane shows HTML, an image, a text file or a live page in a sandboxed frame (scripts run, but the
frame has no origin of its own: it cannot reach the app or its API). Content given by ``html`` or
``path`` is shown with the app's small preview agent inside it, which is what ``drive_preview`` and
``annotate_preview`` talk to; a live page (``url``) is another site's and can only be shown and closed.
"""

from __future__ import annotations

import base64
import html as html_lib
import mimetypes
from typing import Any

from hermes.errors import ToolError
from hermes.tools.desktop_ui.app import SELECTOR, TOOLSET, ask_app, handler, schema
from hermes.tools.registry import registry

MAX_PREVIEW_BYTES = 5 * 1024 * 1024
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml")

DESKTOP_PREVIEW_SCHEMA = schema(
    "desktop_preview",
    "Show something in the desktop app's preview pane, read what it shows, or close it. action 'show' takes "
    "exactly one of html (a document you wrote), path (a local HTML, image or text file) or url (a live "
    "http(s) page); 'read' returns the shown page's title and text; 'close' hides the pane.",
    {"action": {"type": "string", "enum": ["show", "read", "close"], "description": "Default 'show'"},
     "html": {"type": "string", "maxLength": MAX_PREVIEW_BYTES, "description": "An HTML document to show"},
     "path": {"type": "string", "minLength": 1, "description": "A local file to show"},
     "url": {"type": "string", "pattern": "^https?://", "description": "A live page to show"},
     "title": {"type": "string", "maxLength": 200, "description": "The pane's caption"}},
)

DRIVE_PREVIEW_SCHEMA = schema(
    "drive_preview",
    "Act on the page in the preview pane (HTML or a file shown with desktop_preview): click an element, type "
    "into a field, press a key, scroll to an element, or read text. Returns what happened and the page's "
    "title and text afterwards.",
    {"action": {"type": "string", "enum": ["click", "type", "press", "scroll", "read"]},
     "selector": SELECTOR,
     "text": {"type": "string", "maxLength": 10000, "description": "What to type (type) or the key (press)"}},
    ("action",),
)

ANNOTATE_PREVIEW_SCHEMA = schema(
    "annotate_preview",
    "Draw an outlined box with a short note on an element of the preview page, to show the person "
    "something. clear=true removes all notes. Returns the element's box.",
    {"selector": SELECTOR, "note": {"type": "string", "maxLength": 300, "description": "The note's text"},
     "clear": {"type": "boolean", "description": "Remove every note instead"}},
)


def _file_document(raw: str) -> tuple[str, str]:
    """``(kind, html)`` of a local file for the preview pane."""
    from hermes.tools.paths import check_read, resolve_path

    path = resolve_path(raw)
    check_read(path)
    if not path.is_file():
        raise ToolError(f"'path': {path} is not a file")
    size = path.stat().st_size
    if size > MAX_PREVIEW_BYTES:
        raise ToolError(f"'path': {path} is {size:,} bytes; the preview shows files up to {MAX_PREVIEW_BYTES:,}")
    data = path.read_bytes()
    kind = mimetypes.guess_type(path.name)[0] or ""
    if kind in _IMAGE_TYPES:
        encoded = base64.b64encode(data).decode("ascii")
        alt = html_lib.escape(path.name)
        return "image", (f'<img alt="{alt}" src="data:{kind};base64,{encoded}" '
                         'style="max-width:100%;max-height:100vh;display:block;margin:auto">')
    text = data.decode("utf-8", errors="replace")
    if path.suffix.lower() in (".html", ".htm"):
        return "html", text
    return "text", f"<pre style=\"white-space:pre-wrap;font:13px monospace\">{html_lib.escape(text)}</pre>"


def desktop_preview(args: dict[str, Any], **kw: Any) -> str:
    action = args.get("action", "show")
    given = [name for name in ("html", "path", "url") if args.get(name) is not None]
    if action != "show":
        return ask_app("desktop_preview", {"action": action}, kw)
    if len(given) != 1:
        raise ToolError("action 'show' takes exactly one of 'html', 'path' or 'url'"
                        + (f" (got {', '.join(given)})" if given else ""))
    title = args.get("title")
    if "url" in given:
        shown: dict[str, Any] = {"kind": "url", "url": args["url"]}
    elif "path" in given:
        kind, document = _file_document(str(args["path"]))
        shown = {"kind": kind, "html": document}
        title = title or str(args["path"])
    else:
        shown = {"kind": "html", "html": args["html"]}
    return ask_app("desktop_preview", {"action": "show", "title": title or "", **shown}, kw)


registry.register(name="desktop_preview", toolset=TOOLSET, schema=DESKTOP_PREVIEW_SCHEMA, handler=desktop_preview,
                  needs_session=True, max_result_chars=20_000)
registry.register(name="drive_preview", toolset=TOOLSET, schema=DRIVE_PREVIEW_SCHEMA, handler=handler("drive_preview"),
                  needs_session=True, max_result_chars=20_000)
registry.register(name="annotate_preview", toolset=TOOLSET, schema=ANNOTATE_PREVIEW_SCHEMA,
                  handler=handler("annotate_preview"), needs_session=True)
