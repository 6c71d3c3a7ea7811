"""A Browser Use API v3 fake (``api.browser-use.com/api/v3`` or the gateway's ``browser-use`` relay).

``FakeBrowserUse(key="bu-test")`` checks ``X-Browser-Use-API-Key: bu-test``:

* ``POST /browsers`` → 201 ``{"id", "status": "active", "cdpUrl": "wss://cdp.browser-use.invalid/<id>",
  "liveUrl", "startedAt", "timeoutAt", "finishedAt": null}`` and the header ``x-external-call-id``; a
  repeated ``X-Idempotency-Key`` answers the first session again;
* ``GET /browsers/{id}`` → the session; ``PATCH /browsers/{id}`` ``{"action": "stop"}`` → it, stopped;
* unknown ids → 404; ``fail_next`` queues statuses for creates; ``delay`` (seconds) slows creates down;
  ``requests`` logs every call.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fakes.vendors.fal import Recorder


class FakeBrowserUse(Recorder):
    def __init__(self, key: str = "bu-test") -> None:
        super().__init__()
        self.key = key
        self.sessions: dict[str, dict[str, Any]] = {}
        self.by_idempotency: dict[str, str] = {}
        self.delay = 0.0
        self.app = Starlette(routes=[
            Route("/browsers", self._create, methods=["POST"]),
            Route("/browsers/{session_id}", self._session, methods=["GET", "PATCH"]),
        ])

    def _authorised(self, request: Request) -> bool:
        return request.headers.get("x-browser-use-api-key") == self.key

    async def _create(self, request: Request) -> Response:
        entry, _ = await self.record(request)
        if not self._authorised(request):
            return JSONResponse({"detail": "Invalid API key"}, 401)
        await asyncio.sleep(self.delay)
        status = self.take_failure()
        if status is not None:
            return JSONResponse({"detail": f"scripted failure {status}"}, status)
        idem = request.headers.get("x-idempotency-key", "")
        if idem and idem in self.by_idempotency:
            session = self.sessions[self.by_idempotency[idem]]
        else:
            session_id = self.next_id("bu-session-")
            session = {"id": session_id, "status": "active", "cdpUrl": f"wss://cdp.browser-use.invalid/{session_id}",
                       "liveUrl": f"https://live.browser-use.invalid/{session_id}",
                       "startedAt": "2026-01-01T00:00:00Z", "timeoutAt": "2026-01-01T00:05:00Z", "finishedAt": None,
                       "timeout": (entry["json"] or {}).get("timeout")}
            self.sessions[session_id] = session
            if idem:
                self.by_idempotency[idem] = session_id
        return JSONResponse(session, 201, {"x-external-call-id": f"call-{session['id']}"})

    async def _session(self, request: Request) -> Response:
        entry, _ = await self.record(request)
        if not self._authorised(request):
            return JSONResponse({"detail": "Invalid API key"}, 401)
        session = self.sessions.get(request.path_params["session_id"])
        if session is None:
            return JSONResponse({"detail": "Browser session not found"}, 404)
        if request.method == "PATCH":
            if (entry["json"] or {}).get("action") != "stop":
                return JSONResponse({"detail": "unknown action"}, 422)
            session.update(status="stopped", finishedAt="2026-01-01T00:01:00Z")
        return JSONResponse(session)
