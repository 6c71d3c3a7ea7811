"""The OpenAI Images API (``api.openai.com``, or the portal's own image API on the shared gateway origin).

* **generate** ``POST {origin}/v1/images/generations`` JSON ``{"model", "prompt", "n", "size"}`` (plus any
  extra model options);
* **edit** ``POST {origin}/v1/images/edits`` — multipart with the source image as ``image`` (BYOK), or JSON
  ``{"model", "prompt", "images": [{"image_url": ...}]}`` when the source is a URL (used on the gateway,
  where local files are uploaded first and referenced by URL).

Answers list ``data[]`` with ``b64_json`` (GPT Image models) or ``url`` (older models), and maybe
``revised_prompt``. Authentication is ``Authorization: Bearer <key or portal token>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes.vendors.base import JsonApiClient, RetryPolicy, VendorError

VENDOR = "OpenAI Images"
IMAGES_RETRY = RetryPolicy(attempts=3, base_delay=1.0, max_delay=8.0, statuses=frozenset({429, 500, 502, 503}))


@dataclass(frozen=True)
class GeneratedImage:
    """One image of an answer: inline base64 or a URL to download."""

    b64_json: str | None = None
    url: str | None = None
    revised_prompt: str | None = None


class OpenAIImagesClient(JsonApiClient):
    """Generate and edit images at ``origin`` with ``auth`` (``Auth.bearer(token)``)."""

    vendor = VENDOR
    default_retry = IMAGES_RETRY
    default_timeout = 180.0
    default_max_bytes = 64 * 1024 * 1024
    strip_v1 = True

    async def _post(self, path: str, **kwargs: Any) -> list[GeneratedImage]:
        return parse_images(await self._json("POST", self._url(path), **kwargs))

    async def generate(self, model: str, prompt: str, *, size: str | None = None, n: int = 1,
                       extra: Mapping[str, Any] | None = None) -> list[GeneratedImage]:
        """Images for ``prompt``."""
        body: dict[str, Any] = {"model": model, "prompt": prompt, "n": n, **dict(extra or {})}
        if size:
            body["size"] = size
        return await self._post("v1/images/generations", json_body=body)

    async def edit(self, model: str, prompt: str, image: bytes, *, filename: str, mime: str,
                   size: str | None = None) -> list[GeneratedImage]:
        """Edit ``image`` (bytes, sent as multipart) following ``prompt``."""
        data = {"model": model, "prompt": prompt, "n": "1"}
        if size:
            data["size"] = size
        return await self._post("v1/images/edits", data=data, files={"image": (filename, image, mime)})

    async def edit_from_urls(self, model: str, prompt: str, image_urls: list[str], *,
                             size: str | None = None) -> list[GeneratedImage]:
        """Edit images given by URL (JSON form of the edits endpoint)."""
        body: dict[str, Any] = {"model": model, "prompt": prompt, "n": 1,
                                "images": [{"image_url": url} for url in image_urls]}
        if size:
            body["size"] = size
        return await self._post("v1/images/edits", json_body=body)


def parse_images(body: Mapping[str, Any]) -> list[GeneratedImage]:
    """The ``data[]`` entries of an Images API answer (at least one, else a VendorError)."""
    raw = body.get("data")
    images: list[GeneratedImage] = []
    if isinstance(raw, list):
        for item in raw:
            if not isinstance(item, Mapping):
                continue
            b64 = item.get("b64_json")
            url = item.get("url")
            revised = item.get("revised_prompt")
            if (isinstance(b64, str) and b64) or (isinstance(url, str) and url):
                images.append(GeneratedImage(b64 if isinstance(b64, str) and b64 else None,
                                             url if isinstance(url, str) and url else None,
                                             revised if isinstance(revised, str) else None))
    if not images:
        raise VendorError(VENDOR, f"{VENDOR} answered without any image", kind="bad_response")
    return images
