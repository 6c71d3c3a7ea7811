"""Krea's image API (``api.krea.ai``, or the ``krea`` relay of the Tool Gateway).

Wire format (reference: upstream-gateway-protocol.md, "krea"):

* **submit** ``POST {origin}/generate/image/krea/krea-2/{medium|large|medium-turbo}`` with
  ``Authorization: Bearer <token>``, ``User-Agent`` and ``x-idempotency-key``; body
  ``{"prompt", "aspect_ratio": "16:9|1:1|9:16", "resolution": "1K", "creativity": "raw|low|medium|high"}``
  plus optional ``seed`` and ``image_style_references: [{"url", "strength"}]``. The answer carries ``job_id``;
* **poll** ``GET {origin}/jobs/{job_id}`` until ``status`` is ``completed``/``failed``/``cancelled`` (or
  ``completed_at`` is set); the image is ``result.urls[0]`` (or ``result.url``), a failure ``result.error``.

Submit is retried on 408/409/425/429/5xx and transport errors. When Krea could not be reached at all,
or still answered 429 after the retries, the :class:`~hermes.vendors.base.VendorError` has
``before_start=True``: no job exists, so a caller may fall back to another backend (GW-11).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes.vendors.base import (
    DEFAULT_MAX_BYTES,
    JsonApiClient,
    RetryPolicy,
    VendorError,
    idempotency_key,
)

VENDOR = "Krea"
USER_AGENT = "hermes-agent (krea-image-gen)"
#: Krea native model ids → the path segment of the generate endpoint
MODEL_VARIANTS: dict[str, str] = {
    "krea-2-medium": "medium",
    "krea-2-large": "large",
    "krea-2-medium-turbo": "medium-turbo",
}
KREA_RETRY = RetryPolicy(attempts=4, base_delay=1.0, max_delay=8.0,
                         statuses=frozenset({408, 409, 425, 429, 500, 502, 503, 504}))
_DONE = frozenset({"completed", "failed", "cancelled"})
_JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


@dataclass(frozen=True)
class KreaJob:
    """One job as Krea reports it."""

    job_id: str
    status: str
    urls: tuple[str, ...] = ()
    error: str | None = None
    finished: bool = False

    @property
    def succeeded(self) -> bool:
        return self.finished and self.status not in ("failed", "cancelled") and bool(self.urls)


#: codes a Tool Gateway answers when the Krea vendor was never asked: no job can exist (GW-11 fallback)
_NOT_STARTED_CODES = frozenset({"vendor_unreachable", "relay_not_available", "backend_not_configured"})


def _gateway_says_not_started(status: int, body: bytes) -> bool:
    """A gateway refusal (404/502/503 with one of :data:`_NOT_STARTED_CODES`) that proves no job started."""
    if status not in (404, 502, 503):
        return False
    try:
        answer = json.loads(body[:4096])
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(answer, dict) and answer.get("code") in _NOT_STARTED_CODES


class KreaClient(JsonApiClient):
    """Generate images with Krea 2 at ``origin`` with ``auth`` (``Auth.bearer(token)``)."""

    vendor = VENDOR
    default_retry = KREA_RETRY
    default_timeout = 60.0
    default_max_bytes = DEFAULT_MAX_BYTES

    async def submit(self, model: str, body: Mapping[str, Any]) -> str:
        """Start a job for a Krea native ``model``; returns its ``job_id``."""
        variant = MODEL_VARIANTS.get(model)
        if variant is None:
            raise ValueError(f"not a Krea native model: {model!r}")
        response = await self._send("POST", self._url(f"generate/image/krea/krea-2/{variant}"),
                                    headers={"user-agent": USER_AGENT, "x-idempotency-key": idempotency_key()},
                                    json_body=dict(body))
        if response.status == 429 or _gateway_says_not_started(response.status, response.body):
            error = response.http_error()
            error.before_start = True
            raise error
        answer = response.raise_for_status().json_object()
        job_id = answer.get("job_id")
        if not isinstance(job_id, str) or not _JOB_ID.match(job_id):
            raise VendorError(VENDOR, f"{VENDOR} answered without a usable job_id", kind="bad_response")
        return job_id

    async def job(self, job_id: str) -> KreaJob:
        """The job's current state."""
        if not _JOB_ID.match(job_id):
            raise ValueError(f"not a Krea job id: {job_id!r}")
        answer = await self._json("GET", self._url(f"jobs/{job_id}"), headers={"user-agent": USER_AGENT})
        return parse_job(job_id, answer)

    async def generate(self, model: str, body: Mapping[str, Any], *, first_poll: float = 2.0, max_poll: float = 5.0,
                       deadline: float = 180.0) -> KreaJob:
        """Submit and poll (first after ``first_poll`` s, backing off to ``max_poll``) until the job ends."""
        job_id = await self.submit(model, body)
        give_up = time.monotonic() + deadline
        wait = first_poll
        while True:
            await asyncio.sleep(wait)
            job = await self.job(job_id)
            if job.finished:
                if not job.succeeded:
                    reason = job.error or f"the job ended as {job.status} without an image"
                    raise VendorError(VENDOR, f"{VENDOR} job {job_id} failed: {reason}", kind="failed")
                return job
            if time.monotonic() >= give_up:
                raise VendorError(VENDOR, f"{VENDOR} job {job_id} did not finish within {deadline:g} s",
                                  kind="timeout")
            wait = min(max_poll, max(wait, 0.01) * 1.5)


def parse_job(job_id: str, body: Mapping[str, Any]) -> KreaJob:
    """Read a ``/jobs/{id}`` answer."""
    status = str(body.get("status") or "").lower()
    result = body.get("result")
    urls: list[str] = []
    error: str | None = None
    if isinstance(result, Mapping):
        raw_urls = result.get("urls")
        if isinstance(raw_urls, list):
            urls = [u for u in raw_urls if isinstance(u, str) and u]
        single = result.get("url")
        if not urls and isinstance(single, str) and single:
            urls = [single]
        raw_error = result.get("error")
        if isinstance(raw_error, str) and raw_error.strip():
            error = raw_error.strip()[:300]
        elif isinstance(raw_error, Mapping) and isinstance(raw_error.get("message"), str):
            error = str(raw_error["message"])[:300]
    finished = status in _DONE or bool(body.get("completed_at"))
    return KreaJob(job_id, status or "unknown", tuple(urls), error, finished)
