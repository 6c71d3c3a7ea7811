"""Turning an MCP ``CallToolResult`` into hermes's tool result (a JSON-ready dict).

Text blocks are joined into ``result``; ``structuredContent`` comes along as ``structured_content``;
images, audio and binary resources are written to files (their base64 never reaches the model) and
listed in ``files`` with their type and size; text resources and resource links are listed under
``resources``. A result the server marks ``isError`` becomes ``{"error": ...}`` naming the server and
the tool. The budget and the secret masking are applied afterwards by the session's finish step.
Content is read by its ``type`` field, so this module needs no SDK import.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
from pathlib import Path
from typing import Any

from hermes.config.atomic import atomic_write


def _save(data_b64: str, mime: str | None, media_dir: Path | None) -> dict[str, Any]:
    try:
        data = base64.b64decode(data_b64, validate=False)
    except (binascii.Error, ValueError):
        return {"mime_type": mime, "error": "the server sent data that is not base64"}
    entry: dict[str, Any] = {"mime_type": mime, "bytes": len(data)}
    if media_dir is None:
        return entry
    suffix = mimetypes.guess_extension(mime or "") or ".bin"
    path = media_dir / f"{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
    if not path.exists():
        media_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data)
    entry["path"] = str(path)
    return entry


def _field(block: Any, name: str) -> Any:
    if isinstance(block, dict):
        return block.get(name)
    return getattr(block, name, None)


def convert_result(result: Any, *, server: str, tool: str, media_dir: Path | None) -> dict[str, Any]:
    """The dict a tool call answers with (``{"error": ...}`` when the server reports a failure)."""
    texts: list[str] = []
    files: list[dict[str, Any]] = []
    resources: list[dict[str, Any]] = []
    for block in _field(result, "content") or []:
        kind = _field(block, "type")
        if kind == "text":
            texts.append(str(_field(block, "text") or ""))
        elif kind in ("image", "audio"):
            files.append({"kind": kind, **_save(str(_field(block, "data") or ""), _field(block, "mime_type"),
                                                media_dir)})
        elif kind == "resource_link":
            resources.append({"uri": str(_field(block, "uri")), "name": _field(block, "name"),
                              "mime_type": _field(block, "mime_type")})
        elif kind == "resource":
            inner = _field(block, "resource")
            uri = str(_field(inner, "uri"))
            if _field(inner, "text") is not None:
                resources.append({"uri": uri, "mime_type": _field(inner, "mime_type"), "text": _field(inner, "text")})
            else:
                files.append({"kind": "resource", "uri": uri,
                              **_save(str(_field(inner, "blob") or ""), _field(inner, "mime_type"), media_dir)})
    text = "\n".join(texts)
    if _field(result, "is_error"):
        return {"error": f"MCP server '{server}' tool '{tool}' failed: {text or 'no message'}"}
    out: dict[str, Any] = {"result": text}
    structured = _field(result, "structured_content")
    if structured is not None:
        out["structured_content"] = structured
    if files:
        out["files"] = files
    if resources:
        out["resources"] = resources
    return out
