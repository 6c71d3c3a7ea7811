"""``image_generate`` at execution time: route, model, source image, vendor call, Krea → FAL fallback, files.

1. The route of ``image_gen`` is resolved now (GW-3: the saved ``image_gen.provider`` wins; a missing key
   is routing's GW-3 error, passed through untouched).
2. The model is ``image_gen.model`` — the tool has no model argument (GW-11). Unset: on the gateway the
   plan's default (Krea 2 Medium Turbo when paid, FLUX 2 Klein 9B on the free tier), otherwise the
   vendor's default. On the gateway the model id picks the relay (routing did that: ``krea``,
   ``fal-queue`` or the portal's own image API on the shared origin); with a key of your own the model
   must belong to the selected vendor.
3. A source image (``image_url``: a web URL, a local path or a ``data:`` URI) is passed by URL when it is
   one; a local file is uploaded to the gateway's upload endpoint on managed routes, and sent inline
   (``data:`` URI, or multipart for OpenAI) on BYOK routes.
4. On the gateway, when the Krea relay refuses before a job exists (unreachable, or 429 after retries),
   the request is repeated on the FAL relay with FAL's default model and the result says so in
   ``fallback_from`` — unless ``image_gen.krea.fallback_to_fal: false`` or a source image was given.
5. Every image is downloaded (without credentials), checked by its magic bytes and saved under
   ``HERMES_HOME/media/``; the result lists each file's path and source URL.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import replace
from typing import Any

import httpx

from hermes.errors import SelectionError, ToolError
from hermes.routing import Route
from hermes.routing.categories import DEFAULT_IMAGE_MODEL_FREE, DEFAULT_IMAGE_MODEL_PAID, KREA_NATIVE_MODELS
from hermes.tools.image import backends
from hermes.tools.image.backends import KREA_CREATIVITY, ImageJob, ProducedImage
from hermes.tools.routed.context import Access, RoutedContext, http_client, text_arg, vendor_failure
from hermes.tools.routed.media import save_media, sniff_image
from hermes.tools.routed.source import allow_private_urls, is_web_url, load_media
from hermes.vendors.base import VendorError, download, origin_of
from hermes.vendors.fal_queue import valid_model_path

DEFAULT_OPENAI_MODEL = "gpt-image-1"
#: FAL's default model, also the model of the Krea → FAL fallback
DEFAULT_FAL_MODEL = DEFAULT_IMAGE_MODEL_FREE
SOURCE_MAX_BYTES = 20 * 1024 * 1024
RESULT_MAX_BYTES = 50 * 1024 * 1024
_RELAY_BACKENDS = {"fal-queue": "fal", "krea": "krea", "tool": "openai"}
_DISPLAY = {"fal": "FAL", "krea": "Krea", "openai": "OpenAI"}
_HINT = "Run 'hermes tools' to change it."


def backend_of(route: Route) -> str:
    """``fal``, ``krea`` or ``openai``: the protocol a route speaks."""
    if route.kind == "gateway":
        return _RELAY_BACKENDS.get(route.gateway_label or "", "openai")
    return route.vendor or ""


def choose_model(route: Route, ctx: RoutedContext) -> str:
    """The model id to use on ``route`` (see the module docstring); SelectionError when it cannot run there."""
    configured = ctx.get_str("image_gen.model")
    if route.kind == "gateway":
        return configured or (DEFAULT_IMAGE_MODEL_PAID if ctx.credentials().paid_access else DEFAULT_IMAGE_MODEL_FREE)
    vendor = route.vendor or ""
    if vendor == "fal":
        model = configured or DEFAULT_FAL_MODEL
        fits = model not in KREA_NATIVE_MODELS and valid_model_path(model)
    elif vendor == "krea":
        model = configured or DEFAULT_IMAGE_MODEL_PAID
        fits = model in KREA_NATIVE_MODELS
    else:
        model = configured or DEFAULT_OPENAI_MODEL
        fits = model not in KREA_NATIVE_MODELS and not model.startswith("fal-ai/")
    if not fits:
        name = _DISPLAY.get(vendor, vendor)
        raise SelectionError(f"image_gen.model is set to {model!r}, which is not a {name} model, but image_gen is "
                             f"configured to use {vendor} (set via hermes tools). Pick a {name} model, or choose "
                             f"the backend that serves it. {_HINT}")
    return model


def _parse_args(args: dict[str, Any]) -> tuple[str, str, int | None, str | None]:
    prompt = text_arg(args, "prompt", "a non-empty description of the image") or ""
    aspect = args.get("aspect_ratio") or "square"
    if aspect not in backends.FAL_SIZES:
        raise ToolError("'aspect_ratio' must be one of square, landscape, portrait")
    seed = args.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ToolError("'seed' must be an integer")
    source = text_arg(args, "image_url", "a URL or a local file path", required=False)
    return prompt, str(aspect), seed, source


async def _prepare_job(ctx: RoutedContext, http: httpx.AsyncClient, access: Access, backend: str, prompt: str,
                       aspect: str, seed: int | None, source: str | None) -> ImageJob:
    creativity = ctx.get_str("image_gen.krea.creativity", "medium") or "medium"
    if creativity not in KREA_CREATIVITY:
        raise ToolError(f"image_gen.krea.creativity must be one of {', '.join(KREA_CREATIVITY)}")
    job = ImageJob(prompt=prompt, aspect=aspect, seed=seed, krea_creativity=creativity,
                   fal_edit_model=ctx.get_str("image_gen.fal.edit_model"))
    if source is None:
        return job
    if is_web_url(source) and origin_of(source) is None:
        raise ToolError("'image_url' is not a valid http(s) URL")
    if is_web_url(source) and (access.gateway or backend != "openai"):
        return _with_source(job, url=source)
    loaded = await load_media(source, ctx, kind="image", max_bytes=SOURCE_MAX_BYTES, field="image_url")
    if access.gateway:
        try:
            reference = await ctx.upload(http, access, loaded.data, filename=loaded.filename,
                                         content_type=loaded.type.mime)
        except VendorError as exc:
            raise vendor_failure(exc, access, "uploading the source image") from None
        return _with_source(job, url=reference, data=loaded.data, name=loaded.filename, mime=loaded.type.mime)
    inline = None if backend == "openai" else loaded.data_uri()
    return _with_source(job, url=inline, data=loaded.data, name=loaded.filename, mime=loaded.type.mime)


def _with_source(job: ImageJob, *, url: str | None, data: bytes | None = None, name: str = "source.png",
                 mime: str = "image/png") -> ImageJob:
    return replace(job, source_url=url, source_bytes=data, source_name=name, source_mime=mime)


async def _run(backend: str, http: httpx.AsyncClient, access: Access, model: str, job: ImageJob) -> list[ProducedImage]:
    if backend == "fal":
        return await backends.run_fal(http, access, model, job)
    if backend == "krea":
        return await backends.run_krea(http, access, model, job)
    return await backends.run_openai(http, access, model, job)


def _fallback_allowed(ctx: RoutedContext, access: Access, backend: str, job: ImageJob, exc: VendorError) -> bool:
    return (access.gateway and backend == "krea" and exc.before_start and job.source_url is None
            and job.source_bytes is None and ctx.get_bool("image_gen.krea.fallback_to_fal", True))


async def generate_image(args: dict[str, Any], ctx: RoutedContext) -> dict[str, Any]:
    """Run one ``image_generate`` call; returns the result object (see the module docstring)."""
    prompt, aspect, seed, source = _parse_args(args)
    route = ctx.route("image_gen")
    model = choose_model(route, ctx)
    backend = backend_of(route)
    access = ctx.access(route)
    fallback_from: dict[str, Any] | None = None
    async with http_client(120.0) as http:
        job = await _prepare_job(ctx, http, access, backend, prompt, aspect, seed, source)
        try:
            images = await _run(backend, http, access, model, job)
        except VendorError as exc:
            if not _fallback_allowed(ctx, access, backend, job, exc):
                raise vendor_failure(exc, access, "image generation") from None
            fallback_from = {"provider": "krea", "model": model, "reason": str(exc)}
            fal_route = ctx.gateway_route(route, "fal-queue", "fal")
            access = ctx.access(fal_route)
            backend, model = "fal", DEFAULT_FAL_MODEL
            try:
                images = await _run(backend, http, access, model, job)
            except VendorError as again:
                raise vendor_failure(again, access, "image generation (after Krea refused, on FAL)") from None
        saved = await _save(images, http, ctx, _DISPLAY.get(backend, backend), access.origin)
    result: dict[str, Any] = {
        "success": True,
        "path": saved[0]["path"],
        "url": saved[0]["url"],
        "images": saved,
        "model": model,
        "provider": access.route.vendor,
        "route": access.route.kind,
        "prompt": prompt,
    }
    if fallback_from is not None:
        result["fallback_from"] = fallback_from
    return result


async def _save(images: list[ProducedImage], http: httpx.AsyncClient, ctx: RoutedContext,
                vendor: str, vendor_origin: str) -> list[dict[str, Any]]:
    saved: list[dict[str, Any]] = []
    for image in images:
        source_url = image.url if image.url and not image.url.startswith("data:") else None
        if image.b64 is not None:
            try:
                data = base64.b64decode(image.b64, validate=True)
            except (binascii.Error, ValueError):
                raise ToolError(f"{vendor} returned an image that is not valid base64") from None
        elif image.url is not None:
            try:
                data, _ctype = await download(http, image.url, vendor=vendor, max_bytes=RESULT_MAX_BYTES,
                                              trusted_origin=vendor_origin, allow_private=allow_private_urls(ctx))
            except VendorError as exc:
                raise ToolError(f"the image was generated but could not be downloaded from {source_url}: {exc}") \
                    from None
        else:  # pragma: no cover - ProducedImage always has one of both
            continue
        kind = sniff_image(data)
        if kind is None:
            raise ToolError(f"{vendor} returned a file that is not an image (checked by its first bytes)")
        path = save_media(ctx.home, data, prefix="image", ext=kind.ext)
        saved.append({"path": str(path), "url": source_url, "format": kind.name, "bytes": len(data),
                      "width": image.width, "height": image.height})
    if not saved:
        raise ToolError(f"{vendor} returned no image")
    return saved
