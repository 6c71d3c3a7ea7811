"""Turning an MCP ``CallToolResult`` into hermes's tool result (a JSON-ready dict).

Text blocks are joined into ``result``; ``structuredContent`` comes along as ``structured_content``;
images, audio and binary resources are written to files (their base64 never reaches the model) and
listed in ``files`` with their type and size — one over :data:`MAX_MEDIA_BYTES` is listed with an error
and never decoded, and the media folder keeps its newest :data:`MAX_MEDIA_FILES` files (at most
:data:`MAX_MEDIA_TOTAL` bytes); text resources and resource links are listed under
``resources``. A result the server marks ``isError`` becomes ``{"error": ...}`` naming the server and
the tool. The budget and the secret masking are applied afterwards by the session's finish step.
Content is read by its ``type`` field, so this module needs no SDK import.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import mimetypes
import os
from pathlib import Path
from typing import Any

from hermes.config.atomic import atomic_write

#: the largest image, audio or binary resource kept from one content block (decoded bytes)
MAX_MEDIA_BYTES = 25 * 1024 * 1024
#: at most this many files in ``cache/mcp_media`` (the oldest are removed) and this many bytes together
MAX_MEDIA_FILES = 500
MAX_MEDIA_TOTAL = 1024 * 1024 * 1024


def _prune(media_dir: Path, keep: Path, max_files: int, max_total: int) -> None:
    """Remove the oldest files of ``media_dir`` beyond ``max_files`` files or ``max_total`` bytes."""
    entries: list[tuple[float, int, Path]] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(media_dir):
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                entries.append((st.st_mtime, st.st_size, Path(entry.path)))
    entries.sort(reverse=True)  # newest first
    total = 0
    for count, (_mtime, size, path) in enumerate(entries, start=1):
        total += size
        if path != keep and (count > max_files or total > max_total):
            with contextlib.suppress(OSError):
                path.unlink()


def _save(data_b64: str, mime: str | None, media_dir: Path | None, limits: tuple[int, int, int]) -> dict[str, Any]:
    max_bytes, max_files, max_total = limits
    if len(data_b64) * 3 // 4 > max_bytes + 2:  # judged before decoding: a huge block is never held twice
        return {"mime_type": mime, "bytes": len(data_b64) * 3 // 4,
                "error": f"the server sent {len(data_b64) * 3 // 4} bytes; at most {max_bytes} are kept"}
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
        _prune(media_dir, path, max_files, max_total)
    entry["path"] = str(path)
    return entry


def _field(block: Any, name: str) -> Any:
    if isinstance(block, dict):
        return block.get(name)
    return getattr(block, name, None)


def convert_result(result: Any, *, server: str, tool: str, media_dir: Path | None,
                   max_media_bytes: int = MAX_MEDIA_BYTES, max_media_files: int = MAX_MEDIA_FILES,
                   max_media_total: int = MAX_MEDIA_TOTAL) -> dict[str, Any]:
    """The dict a tool call answers with (``{"error": ...}`` when the server reports a failure)."""
    limits = (max_media_bytes, max_media_files, max_media_total)
    texts: list[str] = []
    files: list[dict[str, Any]] = []
    resources: list[dict[str, Any]] = []
    for block in _field(result, "content") or []:
        kind = _field(block, "type")
        if kind == "text":
            texts.append(str(_field(block, "text") or ""))
        elif kind in ("image", "audio"):
            files.append({"kind": kind, **_save(str(_field(block, "data") or ""), _field(block, "mime_type"),
                                                media_dir, limits)})
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
                              **_save(str(_field(inner, "blob") or ""), _field(inner, "mime_type"), media_dir, limits)})
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
