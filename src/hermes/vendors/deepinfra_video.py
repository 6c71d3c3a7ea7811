"""DeepInfra's OpenAI-compatible video endpoint (``api.deepinfra.com/v1/openai``) and its model list.

With ``Authorization: Bearer <DEEPINFRA_API_KEY>``:

* ``POST {origin}/v1/openai/videos`` ``{"model", "prompt", "seconds", "aspect_ratio", "seed",
  "negative_prompt"}`` → ``{"id", "status": "queued"}`` (a fast model may answer ``succeeded`` at once);
* ``GET {origin}/v1/openai/videos/{id}`` → ``{"status": "queued" | "processing" | "succeeded" | "failed",
  "data": [{"url"}], "error"?}`` — the URL may be relative to the API's host, or a ``data:`` URI;
* ``GET {origin}/models/list`` → ``[{"model_name", "type", "reported_type", "description", …}]``, of which
  the video models are those whose type is ``text-to-video`` (the live catalog).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from hermes.vendors.base import JsonApiClient, RetryPolicy, VendorError

VENDOR = "DeepInfra"
DEEPINFRA_RETRY = RetryPolicy(attempts=3, base_delay=1.0, max_delay=5.0, statuses=frozenset({429, 500, 502, 503}))
_JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
VIDEO_TYPES = frozenset({"text-to-video", "image-to-video"})


@dataclass(frozen=True)
class DeepInfraVideoStatus:
    status: str
    url: str | None = None
    error: str | None = None


class DeepInfraVideoClient(JsonApiClient):
    """Video jobs at ``origin`` (``https://api.deepinfra.com``) with ``Auth.bearer(key)``."""

    vendor = VENDOR
    default_retry = DEEPINFRA_RETRY
    default_timeout = 60.0
    default_max_bytes = 64 * 1024 * 1024  # a finished job may inline its video as a data: URI
    strip_v1 = True

    async def video_models(self) -> list[dict[str, Any]]:
        """The catalog entries whose type is a video one."""
        response = await self._send("GET", self._url("models/list"))
        listed = response.raise_for_status().json()
        items = listed if isinstance(listed, list) else []
        return [m for m in items if isinstance(m, dict)
                and (m.get("type") in VIDEO_TYPES or m.get("reported_type") in VIDEO_TYPES)]

    def _status(self, body: Mapping[str, Any]) -> DeepInfraVideoStatus:
        state = body.get("status")
        if not isinstance(state, str):
            raise VendorError(VENDOR, f"{VENDOR} answered a video job without 'status'", kind="bad_response")
        data = body.get("data")
        first = data[0] if isinstance(data, list) and data and isinstance(data[0], Mapping) else {}
        url = first.get("url")
        if isinstance(url, str) and url and not url.startswith(("data:", "http://", "https://")):
            url = urljoin(self.origin + "/", url)
        error = body.get("error")
        if isinstance(error, Mapping):
            error = error.get("message")
        return DeepInfraVideoStatus(state, url if isinstance(url, str) and url else None,
                                    error if isinstance(error, str) else None)

    async def submit(self, body: Mapping[str, Any]) -> tuple[str, DeepInfraVideoStatus]:
        """Start a job: its id and the first status (a fast model may already be done)."""
        answer = await self._post_json("v1/openai/videos", dict(body))
        job_id = answer.get("id")
        if not isinstance(job_id, str) or not _JOB_ID.match(job_id):
            raise VendorError(VENDOR, f"{VENDOR} answered without a usable job id", kind="bad_response")
        return job_id, self._status(answer)

    async def status(self, job_id: str) -> DeepInfraVideoStatus:
        if not _JOB_ID.match(job_id):
            raise ValueError(f"not a DeepInfra job id: {job_id!r}")
        return self._status(await self._json("GET", self._url(f"v1/openai/videos/{job_id}")))
