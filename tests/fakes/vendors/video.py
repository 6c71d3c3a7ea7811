"""Video vendor fakes: FAL's queue with video models, and xAI's video API, plus a tiny real MP4.

``FakeFalVideo(key=...)`` speaks the queue protocol (reference: fal.ai's queue docs, as fal-client uses
it): ``POST /{model-path}`` → ``request_id`` and absolute ``status_url``/``response_url``/``cancel_url``;
``GET …/status`` → ``IN_QUEUE`` with each of ``queue_positions`` in turn, then ``IN_PROGRESS`` (``logs``)
``running_polls`` times, then ``COMPLETED`` (with ``error`` when ``fail_with`` is set); ``GET …/requests/{id}``
→ ``{"video": {"url": …/files/<id>.mp4}}``. ``hold = True`` keeps every job in the queue until it is
cleared. ``submits()`` counts the paid submits.

``FakeXaiVideo(key=...)`` speaks ``POST /v1/videos/generations|edits|extensions`` → ``{"request_id"}``
and ``GET /v1/videos/{id}`` → ``pending`` (with ``progress``) ``pending_polls`` times, then ``done`` with
``video.url`` — or ``failed`` with ``error`` when ``fail_with`` is set (also: an extension ``duration``
outside 2-10 fails on poll, as xAI does).
"""

from __future__ import annotations

import struct
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fakes.vendors.fal import Recorder, base_of


def _box(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body) + 8) + kind + body


def tiny_mp4(seconds: float = 4.0) -> bytes:
    """An MP4 header (``ftyp`` + ``moov/mvhd``) saying the video lasts ``seconds``: enough to be recognised
    by its magic bytes and to have its length read."""
    mvhd = struct.pack(">IIIII", 0, 0, 0, 1000, round(seconds * 1000)) + b"\x00\x01\x00\x00" + b"\x01\x00" \
        + b"\x00" * 10 + b"\x00" * 36 + b"\x00" * 24 + struct.pack(">I", 2)
    return _box(b"ftyp", b"isom\x00\x00\x02\x00isomiso2mp41") + _box(b"moov", _box(b"mvhd", mvhd)) \
        + _box(b"mdat", b"\x00" * 64)


class VideoFake(Recorder):
    """What every video fake shares: its key, the jobs it holds, a scripted failure (``fail_with``), the MP4
    it serves under ``/files/`` or another path, and the paid submits (every POST)."""

    #: the authorization scheme the vendor expects (``Bearer KEY``; FAL: ``Key KEY``)
    scheme = "Bearer"

    def __init__(self, key: str, seconds: float) -> None:
        super().__init__()
        self.key = key
        self.fail_with: str | None = None
        self.video = tiny_mp4(seconds)
        self.jobs: dict[str, dict[str, Any]] = {}

    def submits(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == "POST"]

    def authorised(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"{self.scheme} {self.key}"

    def refusal(self, message: str, status: int) -> Response:
        """The vendor's error answer (overridden per vendor shape)."""
        return JSONResponse({"error": message}, status)

    async def _file(self, request: Request) -> Response:
        await self.record(request)
        return Response(self.video, media_type="video/mp4")

    async def polled_job(self, request: Request, param: str = "job_id") -> dict[str, Any] | Response:
        """A status request: recorded, its key checked, its job found and its poll counted — or the refusal."""
        await self.record(request)
        if not self.authorised(request):
            return self.refusal("Unauthorized", 401)
        job = self.jobs.get(request.path_params[param])
        if job is None:
            return self.refusal("not found", 404)
        job["polls"] += 1
        return job


class FakeFalVideo(VideoFake):
    scheme = "Key"

    def __init__(self, key: str = "fal-test") -> None:
        super().__init__(key, 4.0)
        self.queue_positions: list[int] = [2, 1]
        self.running_polls = 1
        self.hold = False
        self.app = Starlette(routes=[Route("/files/{name}", self._file, methods=["GET"]),
                                     Route("/{path:path}", self._dispatch, methods=["GET", "POST", "PUT"])])

    async def _dispatch(self, request: Request) -> Response:
        entry, _ = await self.record(request)
        if not self.authorised(request):
            return JSONResponse({"detail": "Unauthorized"}, 401)
        path = request.url.path.strip("/")
        base = base_of(request)
        if "/requests/" not in path:
            status = self.take_failure()
            if status is not None:
                return JSONResponse({"detail": f"scripted failure {status}"}, status, {"retry-after": "0"})
            request_id = self.next_id("vreq-")
            self.jobs[request_id] = {"model": path, "arguments": entry["json"], "polls": 0}
            root = f"{base}/{path}/requests/{request_id}"
            return JSONResponse({"request_id": request_id, "status_url": f"{root}/status", "response_url": root,
                                 "cancel_url": f"{root}/cancel", "queue_position": len(self.queue_positions)})
        _model, _, rest = path.partition("/requests/")
        request_id, _, action = rest.partition("/")
        job = self.jobs.get(request_id)
        if job is None:
            return JSONResponse({"detail": "no such request"}, 404)
        if action == "status":
            if self.hold:
                return JSONResponse({"status": "IN_QUEUE", "queue_position": 5})
            job["polls"] += 1
            polls = job["polls"]
            if polls <= len(self.queue_positions):
                return JSONResponse({"status": "IN_QUEUE", "queue_position": self.queue_positions[polls - 1]})
            if polls <= len(self.queue_positions) + self.running_polls:
                return JSONResponse({"status": "IN_PROGRESS", "logs": [{"message": "rendering frames"}]})
            done: dict[str, Any] = {"status": "COMPLETED", "logs": None}
            if self.fail_with is not None:
                done["error"] = self.fail_with
            return JSONResponse(done)
        if action == "cancel":
            return JSONResponse({"status": "CANCELLATION_REQUESTED"})
        if self.fail_with is not None:
            return JSONResponse({"detail": self.fail_with}, 422)
        return JSONResponse({"video": {"url": f"{base}/files/{request_id}.mp4", "content_type": "video/mp4"},
                             "seed": 7})


class FakeXaiVideo(VideoFake):
    def __init__(self, key: str = "xai-test") -> None:
        super().__init__(key, 6.0)
        self.pending_polls = 2
        self.app = Starlette(routes=[
            Route("/files/{name}", self._file, methods=["GET"]),
            Route("/v1/videos/{kind}", self._start, methods=["POST"]),
            Route("/v1/videos/{request_id}", self._status, methods=["GET"]),
        ])

    def refusal(self, message: str, status: int) -> Response:
        return JSONResponse({"error": "Incorrect API key provided" if status == 401 else message}, status)

    async def _start(self, request: Request) -> Response:
        entry, _ = await self.record(request)
        if not self.authorised(request):
            return self.refusal("", 401)
        kind = request.path_params["kind"]
        if kind not in ("generations", "edits", "extensions"):
            return JSONResponse({"error": "not found"}, 404)
        body = entry["json"] or {}
        if not isinstance(body.get("prompt"), str) or not body.get("model"):
            return JSONResponse({"error": "prompt and model are required"}, 400)
        request_id = self.next_id("xvid-")
        self.jobs[request_id] = {"kind": kind, "body": body, "polls": 0}
        return JSONResponse({"request_id": request_id})

    async def _status(self, request: Request) -> Response:
        job = await self.polled_job(request, "request_id")
        if isinstance(job, Response):
            return job
        if job["polls"] <= self.pending_polls:
            return JSONResponse({"status": "pending", "progress": 50 * job["polls"] // (self.pending_polls + 1)})
        duration = job["body"].get("duration")
        if job["kind"] == "extensions" and not (isinstance(duration, int) and 2 <= duration <= 10):
            return JSONResponse({"status": "failed", "error": "Duration must be between 2 and 10 seconds"})
        if self.fail_with is not None:
            return JSONResponse({"status": "failed", "error": self.fail_with})
        rid = request.path_params["request_id"]
        return JSONResponse({"status": "done", "model": job["body"].get("model"),
                             "video": {"url": f"{base_of(request)}/files/{rid}.mp4", "duration": 6}})


class FakeOpenRouterVideo(VideoFake):
    """OpenRouter's video API (openrouter.ai/docs/api_reference/videos): ``GET /v1/videos/models`` (the
    catalog in ``catalog``), ``POST /v1/videos`` → 202 ``{"id", "polling_url", "status": "pending"}``,
    ``GET /v1/videos/{id}`` → ``pending``, ``in_progress`` (with ``progress``), then ``completed`` with
    signed ``urls`` (or ``failed`` with ``error`` when ``fail_with`` is set)."""

    def __init__(self, key: str = "or-test") -> None:
        super().__init__(key, 5.0)
        self.catalog: list[dict[str, Any]] = [
            {"id": "google/veo-3.1", "name": "Veo 3.1", "generate_audio": True, "seed": None,
             "supported_aspect_ratios": ["16:9", "9:16"], "supported_durations": [4, 6, 8],
             "supported_resolutions": ["720p", "1080p"], "supported_frame_images": ["first_frame", "last_frame"]},
            {"id": "alibaba/wan-2.6", "name": "Wan 2.6", "generate_audio": False, "seed": 1,
             "supported_aspect_ratios": ["16:9"], "supported_durations": [5, 10], "supported_resolutions": ["1080p"],
             "supported_frame_images": []},
        ]
        self.app = Starlette(routes=[
            Route("/files/{name}", self._file, methods=["GET"]),
            Route("/v1/videos/models", self._models, methods=["GET"]),
            Route("/v1/videos", self._submit, methods=["POST"]),
            Route("/v1/videos/{job_id}", self._status, methods=["GET"]),
        ])

    def refusal(self, message: str, status: int) -> Response:
        text = "No auth credentials found" if status == 401 else message
        return JSONResponse({"error": {"message": text, "code": status}}, status)

    async def _models(self, request: Request) -> Response:
        await self.record(request)
        if not self.authorised(request):
            return self.refusal("", 401)
        return JSONResponse({"data": self.catalog})

    async def _submit(self, request: Request) -> Response:
        entry, _ = await self.record(request)
        if not self.authorised(request):
            return self.refusal("", 401)
        body = entry["json"] or {}
        if body.get("model") not in {m["id"] for m in self.catalog}:
            return self.refusal("model not found", 400)
        job_id = self.next_id("orv-")
        self.jobs[job_id] = {"body": body, "polls": 0}
        return JSONResponse({"id": job_id, "polling_url": f"/api/v1/videos/{job_id}", "status": "pending"}, 202)

    async def _status(self, request: Request) -> Response:
        job = await self.polled_job(request)
        if isinstance(job, Response):
            return job
        job_id = request.path_params["job_id"]
        if job["polls"] == 1:
            return JSONResponse({"id": job_id, "status": "pending"})
        if job["polls"] == 2:
            return JSONResponse({"id": job_id, "status": "in_progress", "progress": 40})
        if self.fail_with is not None:
            return JSONResponse({"id": job_id, "status": "failed", "error": self.fail_with})
        return JSONResponse({"id": job_id, "status": "completed",
                             "urls": [f"{base_of(request)}/files/{job_id}.mp4?sig=abc"],
                             "unsigned_urls": [f"/api/v1/videos/{job_id}/content?index=0"]})


class FakeDeepInfraVideo(VideoFake):
    """DeepInfra's OpenAI-compatible videos endpoint: ``GET /models/list`` (LLMs and video models mixed),
    ``POST /v1/openai/videos`` → ``{"id", "status": "queued"}``, ``GET /v1/openai/videos/{id}`` →
    ``processing`` once, then ``succeeded`` with a URL relative to the host (or ``failed``)."""

    def __init__(self, key: str = "di-test") -> None:
        super().__init__(key, 5.0)
        self.app = Starlette(routes=[
            Route("/generated/{name}", self._file, methods=["GET"]),
            Route("/models/list", self._models, methods=["GET"]),
            Route("/v1/openai/videos", self._submit, methods=["POST"]),
            Route("/v1/openai/videos/{job_id}", self._status, methods=["GET"]),
        ])

    def refusal(self, message: str, status: int) -> Response:
        return JSONResponse({"detail": {"error": message}}, status)

    async def _models(self, request: Request) -> Response:
        await self.record(request)
        if not self.authorised(request):
            return self.refusal("Unauthorized", 401)
        return JSONResponse([
            {"model_name": "deepseek-ai/DeepSeek-V3.2", "type": "text-generation"},
            {"model_name": "Pixverse/Pixverse-T2V", "type": "text-to-video", "reported_type": "text-to-video"},
            {"model_name": "Wan-AI/Wan2.6-T2V", "type": "text-to-video"},
        ])

    async def _submit(self, request: Request) -> Response:
        entry, _ = await self.record(request)
        if not self.authorised(request):
            return self.refusal("Unauthorized", 401)
        job_id = self.next_id("videos_")
        self.jobs[job_id] = {"body": entry["json"], "polls": 0}
        return JSONResponse({"id": job_id, "status": "queued"})

    async def _status(self, request: Request) -> Response:
        job = await self.polled_job(request)
        if isinstance(job, Response):
            return job
        job_id = request.path_params["job_id"]
        if job["polls"] == 1:
            return JSONResponse({"id": job_id, "status": "processing"})
        if self.fail_with is not None:
            return JSONResponse({"id": job_id, "status": "failed", "error": {"message": self.fail_with}})
        return JSONResponse({"id": job_id, "status": "succeeded", "data": [{"url": f"/generated/{job_id}.mp4"}]})
