"""``xai_video_edit`` and ``xai_video_extend`` at execution time, on xAI's video API (T-VIDEO).

Both take a source video (an http(s) URL, a local path or a ``data:`` URI) and a prompt. The video is
loaded (size-capped, type-checked by magic bytes) and its length read from its MP4 header **before**
anything is sent: an edit takes at most :data:`~hermes.plugins.video_gen.xai.EDIT_MAX_INPUT_SECONDS`
seconds of source, an extension a source of :data:`~hermes.plugins.video_gen.xai.EXTEND_INPUT_SECONDS`
and adds :data:`~hermes.plugins.video_gen.xai.EXTEND_ADD_SECONDS` seconds. A web URL is passed on as it
is; a local file goes inline as a ``data:`` URI.

The key is ``XAI_API_KEY``; the API ``video_gen.xai.base_url`` or ``https://api.x.ai``. The model is
``video_gen.model`` when ``video_gen.provider`` is ``xai``, else ``grok-imagine-video``. The job is stored
and followed like ``video_generate``'s (:mod:`hermes.tools.video.jobs`).
"""

from __future__ import annotations

import hashlib
from typing import Any

from hermes.errors import SelectionError, ToolError
from hermes.plugins.video_gen.base import Connection, LimitError, Submitted, VideoRequest
from hermes.plugins.video_gen.discovery import builtin_backends
from hermes.plugins.video_gen.xai import (
    DEFAULT_MODEL,
    EDIT_MAX_INPUT_SECONDS,
    EXTEND_ADD_SECONDS,
    EXTEND_INPUT_SECONDS,
    XaiVideoBackend,
)
from hermes.tools.routed.context import RoutedContext, http_client, text_arg
from hermes.tools.routed.media import mp4_duration
from hermes.tools.routed.source import is_web_url, load_media
from hermes.tools.video.jobs import Call, Pace, run_job, session_id_of
from hermes.vendors.base import VendorError, same_origin

SOURCE_MAX_BYTES = 64 * 1024 * 1024


def _backend() -> XaiVideoBackend:
    backend = builtin_backends().get("xai")
    if not isinstance(backend, XaiVideoBackend):  # pragma: no cover - the package ships it
        raise ToolError("the xAI video backend is not installed")
    return backend


def _model(ctx: RoutedContext) -> str:
    provider = (ctx.get_str("video_gen.provider") or "").lower()
    return (ctx.get_str("video_gen.model") if provider == "xai" else None) or DEFAULT_MODEL


async def _source(ctx: RoutedContext, ref: str) -> tuple[str, float]:
    """(what to send as ``video.url``, the source's length in seconds)."""
    loaded = await load_media(ref, ctx, kind="video", max_bytes=SOURCE_MAX_BYTES, field="video_url")
    seconds = mp4_duration(loaded.data) if loaded.type.ext in ("mp4", "mov") else None
    if seconds is None:
        raise LimitError(f"'video_url': the length of {loaded.source} cannot be read; xAI takes MP4 videos")
    return (ref.strip() if is_web_url(ref) else loaded.data_uri()), seconds


async def edit_or_extend(args: dict[str, Any], ctx: RoutedContext, kw: dict[str, Any], *, extend: bool
                         ) -> dict[str, Any]:
    tool = "xai_video_extend" if extend else "xai_video_edit"
    prompt = text_arg(args, "prompt", "a non-empty description of the change") or ""
    ref = text_arg(args, "video_url", "a URL, a local file path or a data: URI") or ""
    raw_added = args.get("duration")
    seconds_added = 0
    if extend:
        low, high = EXTEND_ADD_SECONDS
        if not isinstance(raw_added, int) or isinstance(raw_added, bool) or not low <= raw_added <= high:
            raise LimitError(f"'duration' (the seconds to add) must be {low} to {high}, got {raw_added!r}")
        seconds_added = raw_added
    key = ctx.env.get("XAI_API_KEY", "").strip()
    if not key:
        raise SelectionError(f"{tool} needs XAI_API_KEY (set it with 'hermes config set-env XAI_API_KEY ...') or a "
                             "SuperGrok login ('hermes auth add xai --type oauth')")
    video_url, length = await _source(ctx, ref)
    if extend and not EXTEND_INPUT_SECONDS[0] <= length <= EXTEND_INPUT_SECONDS[1]:
        raise LimitError(f"'video_url': xAI extends videos of {EXTEND_INPUT_SECONDS[0]:g} to "
                         f"{EXTEND_INPUT_SECONDS[1]:g} seconds; this one is {length:.2f} s")
    if not extend and length > EDIT_MAX_INPUT_SECONDS:
        raise LimitError(f"'video_url': xAI edits videos of at most {EDIT_MAX_INPUT_SECONDS:g} seconds; this one is "
                         f"{length:.2f} s")
    backend = _backend()
    model = _model(ctx)
    origin = (ctx.get_str("video_gen.xai.base_url") or backend.api_origin or "").rstrip("/")
    # the stored request names the source as the model gave it; the inlined file is never stored
    digest = hashlib.sha256(ref.encode("utf-8", "replace")).hexdigest()[:16]
    shown = ref if len(ref) <= 200 else ref[:200] + "…"
    stored = VideoRequest(prompt=f"{prompt}\n[source: {shown} sha256:{digest}]",
                          duration=seconds_added if extend else None)
    price = backend.models()[0].price_per_second
    cost = round(price * (seconds_added if extend else length), 4) if price is not None else None

    async with http_client(120.0) as http:
        conn = Connection(http, origin, key, same_origin(origin))

        async def submit() -> Submitted:
            if extend:
                return await backend.submit_extend(conn, model, prompt, video_url, seconds_added)
            return await backend.submit_edit(conn, model, prompt, video_url)

        try:
            result = await run_job(ctx, backend=backend, model=model, route="byok",
                                   kind="extend" if extend else "edit", request=stored, cost=cost, conn=conn,
                                   submit=submit, call=Call(tool, kw, session_id_of(kw)), pace=Pace.of(ctx))
        except VendorError as exc:
            raise ToolError(f"{tool} failed via xAI (XAI_API_KEY): {exc}") from None
    result["source_seconds"] = round(length, 3)
    return result
