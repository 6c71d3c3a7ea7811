"""A FAL queue fake (``queue.fal.run`` or the gateway's ``fal-queue`` relay), plus shared bits for media fakes.

``FakeFal(key="fal-test")`` checks ``Authorization: Key fal-test`` and speaks the queue protocol:

* ``POST /{model-path}`` → ``request_id`` and absolute ``status_url``/``response_url``/``cancel_url`` on its
  own origin (or on ``url_origin`` when a test sets one, to check that credentials are not sent there);
* ``GET .../requests/{id}/status`` → ``IN_QUEUE`` (``queue_position``), then ``IN_PROGRESS`` (``logs``), then
  ``COMPLETED`` (``logs: null``; ``omit_logs=True`` leaves the key out to test strict parsing);
* ``GET .../requests/{id}`` → ``{"images": [{"url": ".../files/<id>.png", "width", "height"}]}``;
* ``GET /files/<name>`` → a real PNG (no credentials needed; the fake records any that arrive).

``requests`` logs every call (method, path, headers, JSON); ``fail_next`` queues statuses for submits.

Shared by the other media fakes: :class:`Recorder` (request log, scripted failures), :func:`tiny_png`, and
:class:`FastServerThread` (a :class:`~fakes.vendors.server.ServerThread` with ``TCP_NODELAY``) and
:class:`SwapApp` (swap the app a running server serves).
"""

from __future__ import annotations

import itertools
import json
import struct
import threading
import zlib
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fakes.vendors.server import ServerThread

#: kept for the tests that import it: the shared ServerThread now sets TCP_NODELAY itself
FastServerThread = ServerThread


class SwapApp:
    """An ASGI app forwarding to ``app``: one server per test module can serve a fresh fake per test."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


def tiny_png(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A valid RGB PNG of the given size (standard library only)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + bytes(rgb) * width
    raw = row * height
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


class Recorder:
    """Request log and scripted failures shared by the media vendor fakes."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_next: list[int] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def next_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}{next(self._ids)}"

    async def record(self, request: Request) -> tuple[dict[str, Any], bytes]:
        body = await request.body()
        entry: dict[str, Any] = {"method": request.method, "path": request.url.path,
                                 "query": dict(request.query_params), "headers": dict(request.headers),
                                 "json": None, "body": body}
        if request.headers.get("content-type", "").startswith("application/json"):
            try:
                entry["json"] = json.loads(body or b"null")
            except ValueError:
                entry["json"] = None
        with self._lock:
            self.requests.append(entry)
        return entry, body

    def take_failure(self) -> int | None:
        with self._lock:
            return self.fail_next.pop(0) if self.fail_next else None

    def paths(self, method: str | None = None) -> list[str]:
        return [r["path"] for r in self.requests if method is None or r["method"] == method]


def base_of(request: Request) -> str:
    return str(request.base_url).rstrip("/")


class FakeFal(Recorder):
    def __init__(self, key: str = "fal-test", *, polls_before_done: int = 2) -> None:
        super().__init__()
        self.key = key
        self.polls_before_done = polls_before_done
        self.url_origin: str | None = None
        self.omit_logs = False
        self.image = tiny_png(3, 2)
        self.jobs: dict[str, dict[str, Any]] = {}
        self.app = Starlette(routes=[Route("/files/{name}", self._file, methods=["GET"]),
                                     Route("/{path:path}", self._dispatch, methods=["GET", "POST", "PUT"])])

    def _authorised(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Key {self.key}"

    async def _file(self, request: Request) -> Response:
        await self.record(request)
        return Response(self.image, media_type="image/png")

    async def _dispatch(self, request: Request) -> Response:
        entry, _ = await self.record(request)
        if not self._authorised(request):
            return JSONResponse({"detail": "Unauthorized"}, 401)
        path = request.url.path.strip("/")
        base = self.url_origin or base_of(request)
        if "/requests/" not in path:
            if request.method != "POST":
                return JSONResponse({"detail": "not found"}, 404)
            status = self.take_failure()
            if status is not None:
                return JSONResponse({"detail": f"scripted failure {status}"}, status, {"retry-after": "0"})
            request_id = self.next_id("req-")
            self.jobs[request_id] = {"model": path, "arguments": entry["json"], "polls": 0}
            root = f"{base}/{path}/requests/{request_id}"
            return JSONResponse({"request_id": request_id, "status_url": f"{root}/status", "response_url": root,
                                 "cancel_url": f"{root}/cancel", "queue_position": 0})
        model, _, rest = path.partition("/requests/")
        request_id, _, action = rest.partition("/")
        job = self.jobs.get(request_id)
        if job is None:
            return JSONResponse({"detail": "no such request"}, 404)
        if action == "status":
            job["polls"] += 1
            if job["polls"] == 1 and self.polls_before_done > 1:
                return JSONResponse({"status": "IN_QUEUE", "queue_position": 0})
            if job["polls"] < self.polls_before_done:
                return JSONResponse({"status": "IN_PROGRESS", "logs": []})
            done: dict[str, Any] = {"status": "COMPLETED", "response_url": f"{base}/{model}/requests/{request_id}"}
            if not self.omit_logs:
                done["logs"] = None
            return JSONResponse(done)
        if action == "cancel":
            return JSONResponse({"status": "CANCELLATION_REQUESTED"})
        return JSONResponse({"images": [{"url": f"{base_of(request)}/files/{request_id}.png", "width": 3, "height": 2,
                                         "content_type": "image/png"}], "seed": 42})
