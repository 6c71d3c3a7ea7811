"""FAL's queue protocol (``queue.fal.run``, or the ``fal-queue`` relay of the Tool Gateway).

The wire format is the one fal-client speaks (reference: upstream-gateway-protocol.md, "fal-queue"):

* **submit** ``POST {origin}/{model-path}`` with the model's arguments as JSON and the headers
  ``Authorization: Key <token>``, ``User-Agent`` and ``x-idempotency-key``. The answer must carry
  ``request_id``, ``status_url``, ``response_url`` and ``cancel_url`` — absolute URLs that are then
  followed verbatim (with the same credential, but only where the URL guard allows it);
* **status** ``GET {status_url}?logs=false``: ``IN_QUEUE`` (with ``queue_position``), ``IN_PROGRESS`` (with a
  ``logs`` key) or ``COMPLETED`` (with a ``logs`` key, possibly null); anything else is an error;
* **result** ``GET {response_url}``: the model's output, e.g. ``{"images": [{"url", "width", "height"}]}``.

Transport errors and 408/409/429 are retried (up to 10 tries in all, as fal-client does).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hermes.vendors.base import (
    DEFAULT_MAX_BYTES,
    NO_RETRY,
    JsonApiClient,
    RetryPolicy,
    VendorError,
    idempotency_key,
)

VENDOR = "FAL"
USER_AGENT = "hermes-agent (fal-queue)"
#: transport errors and 408/409/429, ten tries in all (fal-client's policy)
QUEUE_RETRY = RetryPolicy(attempts=10, base_delay=0.25, max_delay=5.0, statuses=frozenset({408, 409, 429}))
_MODEL_PATH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(?:/[A-Za-z0-9][A-Za-z0-9._-]*)+$")

QueueState = Literal["IN_QUEUE", "IN_PROGRESS", "COMPLETED"]


@dataclass(frozen=True)
class QueueHandle:
    """What a submit returns: the request id and the URLs to follow."""

    request_id: str
    status_url: str
    response_url: str
    cancel_url: str


@dataclass(frozen=True)
class QueueStatus:
    """One status poll."""

    status: QueueState
    queue_position: int | None = None
    logs: list[Any] | None = None
    #: FAL's ``error`` of a request that finished without a result (COMPLETED with an error)
    error: str | None = None


def valid_model_path(model: str) -> bool:
    """Whether ``model`` looks like a FAL application path (``fal-ai/flux-2/klein/9b``)."""
    return bool(_MODEL_PATH.match(model)) and ".." not in model


class FalQueueClient(JsonApiClient):
    """Submit, poll and fetch FAL queue requests at ``origin`` with ``auth`` (``Auth.key(token)``)."""

    vendor = VENDOR
    default_retry = QUEUE_RETRY
    default_timeout = 60.0
    default_max_bytes = 32 * 1024 * 1024

    async def _call(self, method: str, url: str, *, json_body: Any = None,
                    params: Mapping[str, str] | None = None, idempotent_key: str | None = None) -> dict[str, Any]:
        headers = {"user-agent": USER_AGENT}
        if idempotent_key is not None:
            headers["x-idempotency-key"] = idempotent_key
        return await self._json(method, url, headers=headers, params=params, json_body=json_body)

    async def submit(self, model: str, arguments: Mapping[str, Any]) -> QueueHandle:
        """Queue one request for ``model`` (a FAL application path)."""
        if not valid_model_path(model):
            raise ValueError(f"not a FAL model path: {model!r}")
        body = await self._call("POST", self._url(model), json_body=dict(arguments),
                                idempotent_key=idempotency_key())
        try:
            handle = QueueHandle(*(str(body[k]) for k in ("request_id", "status_url", "response_url", "cancel_url")))
        except KeyError as exc:
            raise VendorError(VENDOR, f"{VENDOR} queue answer lacks {exc.args[0]!r}", kind="bad_response") from None
        return handle

    async def status(self, handle: QueueHandle) -> QueueStatus:
        """Poll the request's state once (strictly checked, as fal-client does)."""
        body = await self._call("GET", handle.status_url, params={"logs": "false"})
        state = body.get("status")
        if state == "IN_QUEUE":
            position = body.get("queue_position")
            if "queue_position" not in body:
                raise VendorError(VENDOR, "IN_QUEUE status without queue_position", kind="bad_response")
            return QueueStatus("IN_QUEUE", position if isinstance(position, int) else None)
        if state in ("IN_PROGRESS", "COMPLETED"):
            if "logs" not in body:
                raise VendorError(VENDOR, f"{state} status without a logs key", kind="bad_response")
            logs = body.get("logs")
            error = body.get("error")
            return QueueStatus(state, None, logs if isinstance(logs, list) else None,
                               error if isinstance(error, str) and error else None)
        raise VendorError(VENDOR, f"{VENDOR} reported an unknown queue status {str(state)[:40]!r}",
                          kind="bad_response")

    async def result(self, handle: QueueHandle) -> dict[str, Any]:
        """The finished request's output."""
        return await self._call("GET", handle.response_url)

    async def cancel(self, handle: QueueHandle) -> None:
        """Ask the queue to drop the request (best effort)."""
        with contextlib.suppress(VendorError):
            await self._send("PUT", handle.cancel_url, accept=None, headers={"user-agent": USER_AGENT},
                             retry=NO_RETRY, timeout=10.0, max_bytes=DEFAULT_MAX_BYTES)

    async def run(self, model: str, arguments: Mapping[str, Any], *, poll_interval: float = 0.1,
                  deadline: float = 300.0) -> dict[str, Any]:
        """Submit, poll until COMPLETED (at most ``deadline`` seconds), then fetch the result."""
        handle = await self.submit(model, arguments)
        give_up = time.monotonic() + deadline
        while True:
            state = await self.status(handle)
            if state.status == "COMPLETED":
                return await self.result(handle)
            if time.monotonic() >= give_up:
                await self.cancel(handle)
                raise VendorError(VENDOR, f"{VENDOR} did not finish within {deadline:g} s", kind="timeout")
            await asyncio.sleep(poll_interval)
