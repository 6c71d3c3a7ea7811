"""xAI's video API (Grok Imagine; ``api.x.ai``), asynchronous: submit, then poll by request id.

With ``Authorization: Bearer <XAI_API_KEY>`` and JSON bodies:

* ``POST {origin}/v1/videos/generations`` ``{"model", "prompt", "duration", "aspect_ratio", "resolution",
  "image": {"url"}}`` (``image`` only for image-to-video) → ``{"request_id"}``;
* ``POST {origin}/v1/videos/edits`` ``{"model", "prompt", "video": {"url"}}`` → ``{"request_id"}``;
* ``POST {origin}/v1/videos/extensions`` ``{"model", "prompt", "video": {"url"}, "duration"}`` →
  ``{"request_id"}`` (``duration`` is the length added);
* ``GET {origin}/v1/videos/{request_id}`` → ``{"status": "pending" | "done" | "expired" | "failed",
  "video": {"url", "duration"}, "progress"?, "error"?}``.

The result URL is temporary: download it at once (without credentials).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes.vendors.base import JsonApiClient, VendorError
from hermes.vendors.xai import XAI_RETRY

VENDOR = "xAI"
_REQUEST_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


@dataclass(frozen=True)
class XaiVideoStatus:
    """One poll of a video request."""

    status: str
    video_url: str | None = None
    duration: float | None = None
    progress: int | None = None
    error: str | None = None


class XaiVideoClient(JsonApiClient):
    """Video requests at ``origin`` with ``auth`` (``Auth.bearer(key)``)."""

    vendor = VENDOR
    default_retry = XAI_RETRY
    default_timeout = 120.0
    default_max_bytes = 4 * 1024 * 1024
    strip_v1 = True

    async def _start(self, path: str, body: Mapping[str, Any]) -> str:
        answer = await self._post_json(path, dict(body))
        request_id = answer.get("request_id")
        if not isinstance(request_id, str) or not _REQUEST_ID.match(request_id):
            raise VendorError(VENDOR, f"{VENDOR} answered without a usable request_id", kind="bad_response")
        return request_id

    async def generate(self, body: Mapping[str, Any]) -> str:
        """Start a text- or image-to-video request; its request id."""
        return await self._start("v1/videos/generations", body)

    async def edit(self, body: Mapping[str, Any]) -> str:
        """Start a video edit; its request id."""
        return await self._start("v1/videos/edits", body)

    async def extend(self, body: Mapping[str, Any]) -> str:
        """Start a video extension; its request id."""
        return await self._start("v1/videos/extensions", body)

    async def status(self, request_id: str) -> XaiVideoStatus:
        """The request's state now."""
        if not _REQUEST_ID.match(request_id):
            raise ValueError(f"not an xAI request id: {request_id!r}")
        body = await self._json("GET", self._url(f"v1/videos/{request_id}"))
        state = body.get("status")
        if not isinstance(state, str):
            raise VendorError(VENDOR, f"{VENDOR} answered a video status without 'status'", kind="bad_response")
        video = body.get("video")
        url = video.get("url") if isinstance(video, Mapping) else None
        duration = video.get("duration") if isinstance(video, Mapping) else None
        progress = body.get("progress")
        error = body.get("error")
        if isinstance(error, Mapping):
            error = error.get("message")
        return XaiVideoStatus(
            state, url if isinstance(url, str) and url else None,
            float(duration) if isinstance(duration, int | float) and not isinstance(duration, bool) else None,
            progress if isinstance(progress, int) and not isinstance(progress, bool) else None,
            error if isinstance(error, str) else None,
        )
