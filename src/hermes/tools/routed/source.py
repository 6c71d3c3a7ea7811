"""Loading an image or video the model points at: a local path, a ``file://`` or ``data:`` URI, or a web URL.

Shared by ``image_generate`` (source images), ``vision_analyze`` and ``video_analyze``. Every load is
size-capped and type-checked by magic bytes (:mod:`hermes.tools.routed.media`):

* **local paths** go through the file tools' rules (:mod:`hermes.tools.paths`): ``~`` expanded,
  symlinks resolved, and secret files (SSH keys, hermes's ``.env`` and ``auth.json`` …) refused;
* **web URLs** are fetched with the SSRF-safe fetcher :mod:`hermes.net.safefetch`: private, loopback,
  link-local and metadata addresses are refused (every redirect and the connected IP re-checked) unless
  ``security.allow_private_urls: true`` (or ``HERMES_ALLOW_PRIVATE_URLS=1``) allows private and loopback
  ones; metadata addresses stay refused whatever the setting.
"""

from __future__ import annotations

import base64
import os
import re
import stat as stat_module
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

from hermes.config.reader import truth
from hermes.errors import HermesError, ToolError
from hermes.tools.routed.context import RoutedContext, http_client
from hermes.tools.routed.media import MediaType, sniff_image, sniff_video

MediaKind = Literal["image", "video"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_IMAGE_CONTENT_TYPES = ("image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp", "image/bmp",
                        "application/octet-stream", "binary/octet-stream")
_VIDEO_CONTENT_TYPES = ("video/mp4", "video/quicktime", "video/webm", "video/x-matroska", "video/x-msvideo",
                        "video/avi", "video/mpeg", "application/octet-stream", "binary/octet-stream")
_FETCH_TIMEOUT = 30.0


@dataclass(frozen=True)
class LoadedMedia:
    """Bytes of a recognised image or video, with where they came from."""

    data: bytes
    type: MediaType
    source: str
    path: Path | None = None

    def data_uri(self) -> str:
        """``data:<mime>;base64,...`` for an OpenAI-compatible ``image_url`` part or a vendor argument."""
        return f"data:{self.type.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    @property
    def filename(self) -> str:
        return self.path.name if self.path is not None else f"upload.{self.type.ext}"


def is_web_url(ref: str) -> bool:
    """Whether ``ref`` is an http(s) URL (to be passed on or fetched), not a path or a data: URI."""
    match = _SCHEME.match(ref.strip())
    return match is not None and match.group(1).lower() in ("http", "https")


def _sniff(kind: MediaKind, data: bytes) -> MediaType | None:
    return sniff_image(data) if kind == "image" else sniff_video(data)


def _unrecognised(kind: MediaKind, field: str, source: str) -> ToolError:
    wanted = "PNG, JPEG, GIF, WebP or BMP image" if kind == "image" else "MP4, MOV, WebM/MKV, AVI or MPEG video"
    return ToolError(f"'{field}': {source} is not a {wanted} (checked by its first bytes)")


def _too_large(field: str, source: str, max_bytes: int) -> ToolError:
    return ToolError(f"'{field}': {source} is larger than the limit of {max_bytes // (1024 * 1024)} MB")


async def load_media(ref: str, ctx: RoutedContext, *, kind: MediaKind, max_bytes: int, field: str) -> LoadedMedia:
    """Load ``ref`` (path, ``file://``, ``data:`` or http(s) URL) as ``kind``; ToolError on any problem."""
    ref = ref.strip()
    if not ref:
        raise ToolError(f"'{field}' must not be empty")
    match = _SCHEME.match(ref)
    scheme = match.group(1).lower() if match else ""
    if scheme == "data":
        return _from_data_uri(ref, kind=kind, max_bytes=max_bytes, field=field)
    if scheme in ("http", "https"):
        data = await fetch_url(ref, ctx, kind=kind, max_bytes=max_bytes, field=field)
        found = _sniff(kind, data)
        if found is None:
            raise _unrecognised(kind, field, "the downloaded file")
        return LoadedMedia(data, found, ref)
    if scheme == "file":
        ref = unquote(urlsplit(ref).path)
    elif len(scheme) > 1:  # "C:" style drive letters are paths; anything longer is a scheme we do not read
        raise ToolError(f"'{field}' must be a local path or an http(s), file: or data: URL, not a {scheme}: URL")
    return _from_path(ref, kind=kind, max_bytes=max_bytes, field=field)


def _from_data_uri(ref: str, *, kind: MediaKind, max_bytes: int, field: str) -> LoadedMedia:
    from hermes.vendors.base import decode_data_uri

    try:
        data, _declared = decode_data_uri(ref, max_bytes=max_bytes)
    except ValueError as exc:
        raise ToolError(f"'{field}': {exc}") from None
    found = _sniff(kind, data)
    if found is None:
        raise _unrecognised(kind, field, "the data: URI")
    return LoadedMedia(data, found, "data: URI")


def _from_path(ref: str, *, kind: MediaKind, max_bytes: int, field: str) -> LoadedMedia:
    from hermes.tools.paths import display, resolve_path, sensitive_for_reading, stat_or_none

    path = resolve_path(ref, field)
    why = sensitive_for_reading(path)
    if why is not None:
        raise ToolError(f"'{field}': {display(path)} may not be read: {why}")
    st = stat_or_none(path, field)
    if st is None:
        raise ToolError(f"'{field}': no file at {display(path)}")
    if not stat_module.S_ISREG(st.st_mode):
        raise ToolError(f"'{field}': {display(path)} is not a regular file")
    if st.st_size > max_bytes:
        raise _too_large(field, display(path), max_bytes)
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise ToolError(f"'{field}': cannot read {display(path)}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise _too_large(field, display(path), max_bytes)
    found = _sniff(kind, data)
    if found is None:
        raise _unrecognised(kind, field, display(path))
    return LoadedMedia(data, found, display(path), path)


def allow_private_urls(ctx: RoutedContext) -> bool:
    """`security.allow_private_urls` (or HERMES_ALLOW_PRIVATE_URLS): private and loopback URLs allowed."""
    flag = os.environ.get("HERMES_ALLOW_PRIVATE_URLS", ctx.env.get("HERMES_ALLOW_PRIVATE_URLS", ""))
    return ctx.get_bool("security.allow_private_urls", False) or truth(flag) is True


async def fetch_url(url: str, ctx: RoutedContext, *, kind: MediaKind, max_bytes: int, field: str) -> bytes:
    """The body of an http(s) URL, fetched with the SSRF-safe fetcher (see the module docstring)."""
    from hermes.net.address_policy import FetchPolicy
    from hermes.net.safefetch import safe_fetch

    allow = allow_private_urls(ctx)
    policy = FetchPolicy(allow_loopback=allow, allow_private=allow, timeout=_FETCH_TIMEOUT, max_bytes=max_bytes,
                         max_redirects=5, user_agent="hermes-agent (media)",
                         content_types=_IMAGE_CONTENT_TYPES if kind == "image" else _VIDEO_CONTENT_TYPES)
    async with http_client(_FETCH_TIMEOUT) as http:
        try:
            page = await safe_fetch(http, url, policy)
        except HermesError as exc:  # FetchError: refused (private address), too large, too slow, failed
            raise ToolError(f"'{field}': {url} was not fetched: {exc}") from None
    if not 200 <= page.status < 300:
        raise ToolError(f"'{field}': {url} answered HTTP {page.status}")
    if len(page.body) > max_bytes:
        raise _too_large(field, url, max_bytes)
    return page.body
