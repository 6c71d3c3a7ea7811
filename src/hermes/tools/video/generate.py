"""``video_generate`` at execution time: backend and model, limits, source image, the job, the file.

1. The active backend and model (:func:`hermes.tools.video.backend.active_backend`): the saved
   ``video_gen.provider`` wins (GW-3); the model is ``video_gen.model``, never an argument.
2. The arguments are checked against what that model can do (:meth:`Capabilities.check`) **before** any
   upload or paid call: a wrong duration, aspect ratio, resolution, mode or reference count is a clear
   error naming the field.
3. ``image_url`` makes it image-to-video: a web URL is passed on; a local file or ``data:`` URI is sent
   inline (``data:`` URI) on your own key, and uploaded to the gateway's upload endpoint on the gateway.
4. The job runs through :func:`hermes.tools.video.jobs.run_job` (stored before polling, resumable).
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

import httpx

from hermes.errors import ToolError
from hermes.plugins.video_gen.base import Submitted, VideoRequest
from hermes.tools.routed.context import RoutedContext, http_client, text_arg
from hermes.tools.routed.source import is_web_url, load_media
from hermes.tools.video.backend import active_backend, connection, refresh_model
from hermes.tools.video.jobs import Call, Pace, run_job, session_id_of
from hermes.vendors.base import VendorError, origin_of

SOURCE_MAX_BYTES = 20 * 1024 * 1024


def parse_request(args: dict[str, Any]) -> VideoRequest:
    """The request the arguments describe (types were checked by the schema already)."""
    prompt = text_arg(args, "prompt", "a non-empty description of the video") or ""
    image = text_arg(args, "image_url", "a URL, a local file path or a data: URI", required=False)
    refs = args.get("reference_image_urls") or []
    if not isinstance(refs, list) or not all(isinstance(r, str) and r.strip() for r in refs):
        raise ToolError("'reference_image_urls' must be a list of non-empty image URLs")
    for ref in refs:
        if not is_web_url(ref) or origin_of(ref) is None:
            raise ToolError(f"'reference_image_urls' holds {ref[:80]!r}, which is not an http(s) URL")
    return VideoRequest(
        prompt=prompt, image_url=image, reference_image_urls=tuple(r.strip() for r in refs),
        duration=args.get("duration"), aspect_ratio=args.get("aspect_ratio"), resolution=args.get("resolution"),
        audio=args.get("audio"), negative_prompt=text_arg(args, "negative_prompt", "non-empty text", required=False),
        seed=args.get("seed"))


async def _source_image(ctx: RoutedContext, http: httpx.AsyncClient, gateway: bool, request: VideoRequest,
                        route: Any) -> tuple[VideoRequest, VideoRequest]:
    """(the request to send, the request to store): a local image is sent inline or uploaded, and stored as
    its name and content hash (so the same call with a changed file is a new job)."""
    source = request.image_url
    if source is None:
        return request, request
    if is_web_url(source):
        if origin_of(source) is None:
            raise ToolError("'image_url' is not a valid http(s) URL")
        return request, request
    loaded = await load_media(source, ctx, kind="image", max_bytes=SOURCE_MAX_BYTES, field="image_url")
    shown = source if len(source) <= 200 else source[:200] + "…"
    stored = replace(request, image_url=f"{shown} sha256:{hashlib.sha256(loaded.data).hexdigest()[:16]}")
    if not gateway:
        return replace(request, image_url=loaded.data_uri()), stored
    access = ctx.access(route)
    try:
        reference = await ctx.upload(http, access, loaded.data, filename=loaded.filename, content_type=loaded.type.mime)
    except VendorError as exc:
        from hermes.tools.routed.context import vendor_failure

        raise vendor_failure(exc, access, "uploading the source image") from None
    return replace(request, image_url=reference), stored


async def generate_video(args: dict[str, Any], ctx: RoutedContext, kw: dict[str, Any]) -> dict[str, Any]:
    """Run one ``video_generate`` call (see the module docstring)."""
    request = parse_request(args)
    active = active_backend(ctx)
    async with http_client(120.0) as http:
        conn, via = connection(ctx, active, http)
        try:
            active = await refresh_model(ctx, active, conn)  # a live catalog not cached yet (free)
        except VendorError as exc:
            raise ToolError(f"reading the model catalog failed via {via}: {exc}") from None
        active.model.capabilities.check(request, active.model.id)  # before anything is sent or paid
        cost = active.backend.estimate_cost(active.model, request)
        sent, stored = await _source_image(ctx, http, conn.gateway, request, active.route)

        async def submit() -> Submitted:
            return await active.backend.submit(conn, active.model, sent)

        try:
            result = await run_job(ctx, backend=active.backend, model=active.model.id, route=active.route_kind,
                                   kind="generate", request=stored, cost=cost, conn=conn, submit=submit,
                                   call=Call("video_generate", kw, session_id_of(kw)), pace=Pace.of(ctx))
        except VendorError as exc:
            raise ToolError(f"video generation failed via {via}: {exc}") from None
    result["via"] = via
    result["mode"] = request.mode
    return result
