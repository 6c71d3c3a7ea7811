"""The three image protocols behind ``image_generate``: FAL queue, Krea 2 and OpenAI Images.

Each ``run_*`` function turns one :class:`ImageJob` into vendor arguments, calls the vendor client built
from an :class:`~hermes.tools.routed.context.Access` (the same client for the gateway relay and for the
vendor's own API) and returns the produced images as :class:`ProducedImage` (a URL to download or inline
base64). No routing decisions are made here; :mod:`hermes.tools.image.generate` makes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from hermes.tools.routed.context import Access
from hermes.vendors.base import Auth, RetryPolicy, VendorError
from hermes.vendors.fal_queue import QUEUE_RETRY, FalQueueClient
from hermes.vendors.krea import KREA_RETRY, KreaClient
from hermes.vendors.openai_images import OpenAIImagesClient

FAL_SIZES = {"square": "square_hd", "landscape": "landscape_16_9", "portrait": "portrait_16_9"}
KREA_RATIOS = {"square": "1:1", "landscape": "16:9", "portrait": "9:16"}
OPENAI_SIZES = {"square": "1024x1024", "landscape": "1536x1024", "portrait": "1024x1536"}
KREA_CREATIVITY = ("raw", "low", "medium", "high")


@dataclass(frozen=True)
class Timing:
    """Polling and retry pace of the image backends (tests make it fast)."""

    fal_poll: float = 0.1
    fal_deadline: float = 300.0
    fal_retry: RetryPolicy = QUEUE_RETRY
    krea_first_poll: float = 2.0
    krea_max_poll: float = 5.0
    krea_deadline: float = 180.0
    krea_retry: RetryPolicy = KREA_RETRY


TIMING = Timing()


@dataclass(frozen=True)
class ImageJob:
    """What to make: the prompt, the shape, an optional seed and an optional source image URL.

    ``source_url`` is what the vendor reads: an http(s) URL, a gateway upload reference or a ``data:`` URI.
    ``source_bytes`` (with its name and MIME type) is set when the image is local, for multipart APIs.
    """

    prompt: str
    aspect: str = "square"
    seed: int | None = None
    source_url: str | None = None
    source_bytes: bytes | None = None
    source_name: str = "source.png"
    source_mime: str = "image/png"
    krea_creativity: str = "medium"
    fal_edit_model: str | None = None


@dataclass(frozen=True)
class ProducedImage:
    """One image a vendor made."""

    url: str | None = None
    b64: str | None = None
    width: int | None = None
    height: int | None = None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def fal_edit_path(model: str, configured: str | None) -> str:
    """The FAL application that edits images for ``model``: configured, else ``<model>/edit``."""
    if configured:
        return configured
    return model if model.endswith("/edit") else f"{model}/edit"


async def run_fal(http: httpx.AsyncClient, access: Access, model: str, job: ImageJob) -> list[ProducedImage]:
    """Generate (or edit, with a source) through FAL's queue."""
    client = FalQueueClient(http, access.origin, Auth.key(access.secret), allow_url=access.allow_url,
                            retry=TIMING.fal_retry)
    arguments: dict[str, Any] = {"prompt": job.prompt, "image_size": FAL_SIZES.get(job.aspect, "square_hd"),
                                 "num_images": 1, "output_format": "png"}
    if job.seed is not None:
        arguments["seed"] = job.seed
    path = model
    if job.source_url is not None:
        path = fal_edit_path(model, job.fal_edit_model)
        arguments["image_urls"] = [job.source_url]
        arguments["image_url"] = job.source_url
    result = await client.run(path, arguments, poll_interval=TIMING.fal_poll, deadline=TIMING.fal_deadline)
    return parse_fal_result(result)


def parse_fal_result(result: dict[str, Any]) -> list[ProducedImage]:
    """``images[].url`` (or ``image.url``) of a FAL result."""
    found: list[ProducedImage] = []
    images = result.get("images")
    for item in images if isinstance(images, list) else []:
        if isinstance(item, dict) and isinstance(item.get("url"), str) and item["url"]:
            found.append(ProducedImage(url=item["url"], width=_int_or_none(item.get("width")),
                                       height=_int_or_none(item.get("height"))))
    single = result.get("image")
    if not found and isinstance(single, dict) and isinstance(single.get("url"), str) and single["url"]:
        found.append(ProducedImage(url=single["url"], width=_int_or_none(single.get("width")),
                                   height=_int_or_none(single.get("height"))))
    if not found:
        raise VendorError("FAL", "FAL finished without any image in its result", kind="bad_response")
    return found


async def run_krea(http: httpx.AsyncClient, access: Access, model: str, job: ImageJob) -> list[ProducedImage]:
    """Generate with Krea 2 (a source image becomes a style reference)."""
    client = KreaClient(http, access.origin, Auth.bearer(access.secret), allow_url=access.allow_url,
                        retry=TIMING.krea_retry)
    body: dict[str, Any] = {"prompt": job.prompt, "aspect_ratio": KREA_RATIOS.get(job.aspect, "1:1"),
                            "resolution": "1K", "creativity": job.krea_creativity}
    if job.seed is not None:
        body["seed"] = job.seed
    if job.source_url is not None:
        body["image_style_references"] = [{"url": job.source_url, "strength": 0.6}]
    result = await client.generate(model, body, first_poll=TIMING.krea_first_poll, max_poll=TIMING.krea_max_poll,
                                   deadline=TIMING.krea_deadline)
    return [ProducedImage(url=url) for url in result.urls[:1]]


async def run_openai(http: httpx.AsyncClient, access: Access, model: str, job: ImageJob) -> list[ProducedImage]:
    """Generate or edit with the OpenAI Images protocol (the vendor, or the portal's own image API)."""
    client = OpenAIImagesClient(http, access.origin, Auth.bearer(access.secret), allow_url=access.allow_url)
    size = OPENAI_SIZES.get(job.aspect, "1024x1024")
    if job.source_url is None and job.source_bytes is None:
        images = await client.generate(model, job.prompt, size=size)
    elif job.source_bytes is not None and not access.gateway:
        images = await client.edit(model, job.prompt, job.source_bytes, filename=job.source_name,
                                   mime=job.source_mime, size=size)
    elif job.source_url is not None:
        images = await client.edit_from_urls(model, job.prompt, [job.source_url], size=size)
    else:  # pragma: no cover - generate.py always gives the gateway a URL
        raise VendorError("OpenAI Images", "no usable source image", kind="failed")
    return [ProducedImage(url=i.url, b64=i.b64_json) for i in images[:1]]
