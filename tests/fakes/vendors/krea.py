"""A Krea 2 fake (``api.krea.ai`` or the gateway's ``krea`` relay).

``FakeKrea(key="krea-test")`` checks ``Authorization: Bearer krea-test``:

* ``POST /generate/image/krea/krea-2/{medium|large|medium-turbo}`` → ``{"job_id"}``; ``fail_next`` queues
  statuses, ``always_status`` answers every submit with one status (e.g. 429: "refused before starting");
* ``GET /jobs/{id}`` → ``processing`` on the first poll, then ``completed`` with ``result.urls``
  (``fail_jobs=True``: ``failed`` with ``result.error`` — the job started, so no fallback may happen);
* ``GET /files/<name>`` → a real PNG.

``error_text`` (when set) replaces the message of scripted failures and failed jobs, e.g. to check that a
gateway scrubs its operator key from what the vendor says.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fakes.vendors.fal import Recorder, base_of, tiny_png

VARIANTS = ("medium", "large", "medium-turbo")


class FakeKrea(Recorder):
    def __init__(self, key: str = "krea-test") -> None:
        super().__init__()
        self.key = key
        self.always_status: int | None = None
        self.fail_jobs = False
        self.error_text: str | None = None
        self.image = tiny_png(4, 4, (30, 200, 30))
        self.jobs: dict[str, dict[str, Any]] = {}
        self.app = Starlette(routes=[
            Route("/generate/image/krea/krea-2/{variant}", self._submit, methods=["POST"]),
            Route("/jobs/{job_id}", self._job, methods=["GET"]),
            Route("/files/{name}", self._file, methods=["GET"]),
        ])

    def _authorised(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {self.key}"

    async def _submit(self, request: Request) -> Response:
        entry, _ = await self.record(request)
        if not self._authorised(request):
            return JSONResponse({"error": "Unauthorized"}, 401)
        status = self.always_status or self.take_failure()
        if status is not None:
            return JSONResponse({"error": self.error_text or f"scripted failure {status}"}, status,
                                {"retry-after": "0"})
        variant = request.path_params["variant"]
        if variant not in VARIANTS:
            return JSONResponse({"error": "unknown model"}, 404)
        job_id = self.next_id("job-")
        self.jobs[job_id] = {"variant": variant, "body": entry["json"], "polls": 0}
        return JSONResponse({"job_id": job_id, "status": "queued"})

    async def _job(self, request: Request) -> Response:
        await self.record(request)
        if not self._authorised(request):
            return JSONResponse({"error": "Unauthorized"}, 401)
        job_id = request.path_params["job_id"]
        job = self.jobs.get(job_id)
        if job is None:
            return JSONResponse({"error": "no such job"}, 404)
        job["polls"] += 1
        if job["polls"] == 1:
            return JSONResponse({"job_id": job_id, "status": "processing", "completed_at": None})
        if self.fail_jobs:
            return JSONResponse({"job_id": job_id, "status": "failed", "completed_at": "2025-01-01T00:00:00Z",
                                 "result": {"error": self.error_text or "scripted job failure"}})
        return JSONResponse({"job_id": job_id, "status": "completed", "completed_at": "2025-01-01T00:00:00Z",
                             "result": {"urls": [f"{base_of(request)}/files/{job_id}.png"]}})

    async def _file(self, request: Request) -> Response:
        await self.record(request)
        return Response(self.image, media_type="image/png")
