"""OpenRouter's video generation API (``openrouter.ai/api``): catalog, submit, poll.

With ``Authorization: Bearer <OPENROUTER_API_KEY>`` (reference: openrouter.ai/docs/api_reference/videos):

* ``GET {origin}/v1/videos/models`` → ``{"data": [{"id", "name", "generate_audio", "seed",
  "supported_aspect_ratios", "supported_durations", "supported_resolutions", "supported_frame_images", …}]}``;
* ``POST {origin}/v1/videos`` ``{"model", "prompt", "duration", "resolution", "aspect_ratio", "generate_audio",
  "seed", "frame_images": [{"type": "image_url", "image_url": {"url"}, "frame_type": "first_frame"}]}`` →
  ``202 {"id", "polling_url", "status": "pending"}``;
* ``GET {origin}/v1/videos/{id}`` → ``{"status", "urls"?, "unsigned_urls"?, "error"?, "progress"?}``; terminal
  states ``completed``, ``failed``, ``cancelled``, ``expired``. ``urls[0]`` is a signed download URL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes.vendors.base import JsonApiClient, RetryPolicy, VendorError

VENDOR = "OpenRouter"
OPENROUTER_RETRY = RetryPolicy(attempts=3, base_delay=1.0, max_delay=5.0, statuses=frozenset({429, 500, 502, 503}))
_JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


@dataclass(frozen=True)
class OpenRouterVideoStatus:
    status: str
    url: str | None = None
    progress: int | None = None
    error: str | None = None


class OpenRouterVideoClient(JsonApiClient):
    """Video jobs at ``origin`` (``https://openrouter.ai/api``) with ``Auth.bearer(key)``."""

    vendor = VENDOR
    default_retry = OPENROUTER_RETRY
    default_timeout = 60.0
    default_max_bytes = 8 * 1024 * 1024
    strip_v1 = True

    async def models(self) -> list[dict[str, Any]]:
        """The catalog's entries (objects only)."""
        body = await self._json("GET", self._url("v1/videos/models"))
        data = body.get("data")
        return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []

    async def submit(self, body: Mapping[str, Any]) -> str:
        """Start a job; its id."""
        answer = await self._post_json("v1/videos", dict(body))
        job_id = answer.get("id")
        if not isinstance(job_id, str) or not _JOB_ID.match(job_id):
            raise VendorError(VENDOR, f"{VENDOR} answered without a usable job id", kind="bad_response")
        return job_id

    async def status(self, job_id: str) -> OpenRouterVideoStatus:
        if not _JOB_ID.match(job_id):
            raise ValueError(f"not an OpenRouter job id: {job_id!r}")
        body = await self._json("GET", self._url(f"v1/videos/{job_id}"))
        state = body.get("status")
        if not isinstance(state, str):
            raise VendorError(VENDOR, f"{VENDOR} answered a job status without 'status'", kind="bad_response")
        urls = body.get("urls")
        url = urls[0] if isinstance(urls, list) and urls and isinstance(urls[0], str) else None
        progress = body.get("progress")
        error = body.get("error")
        if isinstance(error, Mapping):
            error = error.get("message")
        return OpenRouterVideoStatus(state, url, progress if isinstance(progress, int) and
                                     not isinstance(progress, bool) else None,
                                     error if isinstance(error, str) else None)
