"""The ``fal-queue`` relay: FAL's queue API (submit, status, response, cancel) for image generation.

The upstream client (fal-client over ``_ManagedFalSyncClient``, ``Authorization: Key <gateway token>``)::

    POST /{model-path} {arguments}
         → {"request_id", "status_url", "response_url", "cancel_url", …}   (all four required)
    GET  {status_url}?logs=false
         → {"status": "IN_QUEUE", "queue_position"} | {"status": "IN_PROGRESS"|"COMPLETED", "logs"}
    GET  {response_url}  → the model's result (``images[].url`` …)
    PUT  {cancel_url}    → {"status": "CANCELLATION_REQUESTED"}

The client follows the three URLs verbatim with the same credentials, so the relay **rewrites** them to
its own origin (``fal-queue-gateway.<domain>`` or the pinned ``…/relay/fal-queue`` prefix), as
``{origin}/{model-path}/requests/{request_id}[/status|/cancel]``; the vendor's own URLs are kept
server side, with the user that submitted the request (a :class:`~hermes.toolgateway.storage.jobs.JobTable`).
Polling a request another user submitted (or one no gateway process knows) answers 404. Status
replies always carry the keys the client requires (``queue_position`` for ``IN_QUEUE``, ``logs``
otherwise; ``null`` when the vendor left them out).

Backend (``[relays.fal-queue]``): ``vendor`` forwards to a FAL-compatible queue at ``url`` with the
operator's ``api_key`` (``Authorization: Key …``); the vendor URLs are only followed when they are on
that backend's origin. ``off`` answers 503.

Metering: a submit is ``num_images`` units (1 when absent; at most :data:`MAX_IMAGES`); status,
response and cancel are free (0 units, still recorded). A **video** model (:func:`is_video_model`: a path
segment holding ``video`` or starting with ``veo``, e.g. ``fal-ai/veo3.1``,
``fal-ai/kling-video/v3/pro/text-to-video``) is authorised and metered under the plan category
``fal-video`` instead of ``fal`` — one unit per submitted video — so a plan covering images only does not
pay for videos.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from starlette.datastructures import Headers

from hermes.toolgateway.errors import GatewayHTTPError, json_object
from hermes.toolgateway.relays.base import Operation, Relay, RelayCall, RelayResult
from hermes.toolgateway.relays.vendor import operator_headers, raise_for_vendor, vendor_request
from hermes.toolgateway.storage.jobs import JobTable

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway

_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
MAX_SEGMENTS = 8
MAX_IMAGES = 8
STATUSES = frozenset({"IN_QUEUE", "IN_PROGRESS", "COMPLETED"})


@dataclass(frozen=True)
class Job:
    """A submitted request: its model path and the vendor's own URLs for it (the owner is the table's)."""

    model: str
    status_url: str
    response_url: str
    cancel_url: str

    def to_data(self) -> dict[str, str]:
        return {"model": self.model, "status_url": self.status_url, "response_url": self.response_url,
                "cancel_url": self.cancel_url}

    @classmethod
    def from_data(cls, data: dict[str, str]) -> Job:
        return cls(data["model"], data["status_url"], data["response_url"], data["cancel_url"])


def model_path(path: str) -> str:
    """``fal-ai/flux-2/klein/9b`` from ``/fal-ai/flux-2/klein/9b``, or 404 for a path no model has."""
    segments = path.strip("/").split("/")
    if not 1 <= len(segments) <= MAX_SEGMENTS or not all(_SEGMENT.match(s) and s != ".." for s in segments):
        raise GatewayHTTPError(404, "not_found", "not a FAL model path")
    return "/".join(segments)


def is_video_model(model: str) -> bool:
    """Whether the FAL application ``model`` makes videos (see the module docstring)."""
    return any("video" in segment or segment.startswith("veo") for segment in model.split("/"))


def video_submit_units(body: bytes, headers: Headers) -> int:
    """One unit per video (the arguments must be a JSON object)."""
    json_object(body)
    return 1


def submit_units(body: bytes, headers: Headers) -> int:
    """``num_images`` of the arguments (1 when absent or not a sensible count)."""
    data = json_object(body)
    count = data.get("num_images", 1)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_IMAGES:
        raise GatewayHTTPError(400, "invalid_request", f"'num_images' must be an integer from 1 to {MAX_IMAGES}")
    return count


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class FalQueueRelay(Relay):
    """FAL's queue protocol, with the vendor's request URLs rewritten to the gateway."""

    label = "fal-queue"
    category = "fal"
    token_sources = ("key", "bearer")

    def __init__(self, gateway: Gateway) -> None:
        self.jobs = JobTable(lambda: gateway.conn, self.label)
        super().__init__(gateway)
        self._video_routes: dict[str, dict[str, Operation]] = {}
        for op in self.operations():
            video = replace(op, category="fal-video", measure=video_submit_units if op.name == "submit" else None)
            self._video_routes.setdefault(op.path, {})[op.method] = video

    def operations(self) -> Sequence[Operation]:
        return (Operation("POST", "/{model}", "submit", self.submit, measure=submit_units),
                Operation("GET", "/{model}/requests/{id}/status", "status", self.status, units=0),
                Operation("GET", "/{model}/requests/{id}", "result", self.result, units=0),
                Operation("PUT", "/{model}/requests/{id}/cancel", "cancel", self.cancel, units=0))

    def match(self, path: str, method: str) -> Operation:
        head, sep, tail = path.partition("/requests/")
        routes = self._video_routes if is_video_model(model_path(head if sep else path)) else self._routes
        if not sep:
            if method != "POST":
                raise GatewayHTTPError(405, "method_not_allowed", "submit with POST", headers={"allow": "POST"})
            return routes["/{model}"]["POST"]
        request_id, _, action = tail.partition("/")
        if not _REQUEST_ID.match(request_id):
            raise GatewayHTTPError(404, "not_found", "not a FAL request id")
        template = {"status": "/{model}/requests/{id}/status", "": "/{model}/requests/{id}",
                    "cancel": "/{model}/requests/{id}/cancel"}.get(action)
        if template is None:
            raise GatewayHTTPError(404, "not_found", f"the {self.label} relay has no {path} endpoint")
        methods = routes[template]
        op = methods.get(method)
        if op is None:
            allowed = ", ".join(sorted(methods))
            raise GatewayHTTPError(405, "method_not_allowed", f"use {allowed} on {path}", headers={"allow": allowed})
        return op

    def backend(self, operation: str) -> str:
        return "fal" if self.gateway.config.fal_queue.backend == "vendor" else "off"

    # -- helpers -------------------------------------------------------------------------------------
    def _require_backend(self) -> None:
        if self.gateway.config.fal_queue.backend != "vendor":
            raise GatewayHTTPError(503, "backend_not_configured",
                                   "this gateway has no FAL backend (set relays.fal-queue.url / api_key)")

    def _headers(self, call: RelayCall) -> dict[str, str]:
        return operator_headers(self.gateway.config.fal_queue.api_key, "Key", call.headers, accept="application/json")

    def _vendor_url(self, data: dict[str, Any], key: str) -> str:
        url = data.get(key)
        cfg = self.gateway.config.fal_queue
        if not isinstance(url, str) or _origin(url) != _origin(cfg.url):
            raise GatewayHTTPError(502, "vendor_bad_response", f"fal answered without a usable {key}")
        return url

    async def _job(self, call: RelayCall) -> tuple[str, Job]:
        model, _, tail = call.path.strip("/").partition("/requests/")
        request_id = tail.partition("/")[0]
        data = await self.jobs.get(request_id, call.principal.user.uid)
        job = Job.from_data(data) if data is not None else None
        if job is None or job.model != model:
            raise GatewayHTTPError(404, "unknown_request", f"no FAL request {request_id} for this token")
        return request_id, job

    def _ours(self, call: RelayCall, model: str, request_id: str) -> dict[str, str]:
        root = f"{call.base_url}/{model}/requests/{request_id}"
        return {"status_url": f"{root}/status", "response_url": root, "cancel_url": f"{root}/cancel"}

    async def _call(self, call: RelayCall, method: str, url: str, *, json_body: Any = None,
                    params: dict[str, str] | None = None) -> Any:
        cfg = self.gateway.config.fal_queue
        resp = await vendor_request(self.gateway.vendor_client, method, url, vendor="fal",
                                    limits=self.gateway.config.limits, deadline=call.deadline, json_body=json_body,
                                    params=params, headers=self._headers(call))
        raise_for_vendor(resp, "fal", (cfg.api_key,))
        return resp.json_object("fal")

    # -- operations ----------------------------------------------------------------------------------
    async def submit(self, call: RelayCall) -> RelayResult:
        self._require_backend()
        model = model_path(call.path)
        arguments = call.json()
        data = await self._call(call, "POST", f"{self.gateway.config.fal_queue.url}/{model}", json_body=arguments)
        request_id = data.get("request_id")
        if not isinstance(request_id, str) or not _REQUEST_ID.match(request_id):
            raise GatewayHTTPError(502, "vendor_bad_response", "fal answered without a request_id")
        job = Job(model, self._vendor_url(data, "status_url"), self._vendor_url(data, "response_url"),
                  self._vendor_url(data, "cancel_url"))
        if not await self.jobs.remember(request_id, call.principal.user.uid, job.to_data()):
            raise GatewayHTTPError(502, "vendor_bad_response", "fal answered with a request id already in use")
        reply: dict[str, Any] = {"request_id": request_id, **self._ours(call, model, request_id)}
        if isinstance(data.get("queue_position"), int):
            reply["queue_position"] = data["queue_position"]
        return RelayResult.of_json(reply)

    async def status(self, call: RelayCall) -> RelayResult:
        self._require_backend()
        request_id, job = await self._job(call)
        logs = parse_qs(call.query).get("logs", ["false"])[-1]
        data = await self._call(call, "GET", job.status_url, params={"logs": "true" if logs in ("1", "true") else
                                                                     "false"})
        status = data.get("status")
        reply: dict[str, Any] = {k: v for k, v in data.items()
                                 if k in ("status", "queue_position", "logs", "metrics", "error", "error_type")}
        if status == "IN_QUEUE":
            position = data.get("queue_position")
            reply["queue_position"] = position if isinstance(position, int) and position >= 0 else 0
        elif status in ("IN_PROGRESS", "COMPLETED"):
            reply.setdefault("logs", None)
        if status == "COMPLETED":
            reply["response_url"] = self._ours(call, job.model, request_id)["response_url"]
        return RelayResult.of_json(reply)

    async def result(self, call: RelayCall) -> RelayResult:
        self._require_backend()
        _request_id, job = await self._job(call)
        return RelayResult.of_json(await self._call(call, "GET", job.response_url))

    async def cancel(self, call: RelayCall) -> RelayResult:
        self._require_backend()
        _request_id, job = await self._job(call)
        return RelayResult.of_json(await self._call(call, "PUT", job.cancel_url))


__all__ = ["FalQueueRelay", "Job", "is_video_model", "model_path", "submit_units", "video_submit_units"]
