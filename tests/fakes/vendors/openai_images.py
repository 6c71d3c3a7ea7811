"""An OpenAI Images fake — also the gateway's shared ``tool-gateway`` origin (portal image API + uploads).

``FakeOpenAIImages(key="sk-test")`` checks ``Authorization: Bearer sk-test``:

* ``POST /v1/images/generations`` → ``data[0].b64_json`` (a real PNG), or ``data[0].url`` with ``use_urls``;
* ``POST /v1/images/edits`` → the same; multipart (``image`` file part, recorded in ``edits``) or JSON
  (``images: [{"image_url"}]``);
* ``POST /api/uploads/{vendor}`` (multipart, part ``file``) → ``{"url": "<origin>/uploads/<id>.<ext>"}``; the
  upload endpoint the gateway offers on its shared origin (recorded in ``uploads``);
* ``GET /files/<name>`` and ``GET /uploads/<name>`` → the stored bytes.
"""

from __future__ import annotations

import base64
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fakes.vendors.fal import Recorder, base_of, tiny_png
from fakes.vendors.openai_audio import Part, parse_multipart


class FakeOpenAIImages(Recorder):
    def __init__(self, key: str = "sk-test") -> None:
        super().__init__()
        self.key = key
        self.use_urls = False
        self.image = tiny_png(5, 5, (30, 30, 200))
        self.edits: list[dict[str, Any]] = []
        self.uploads: list[dict[str, Any]] = []
        self.stored: dict[str, bytes] = {}
        self.app = Starlette(routes=[
            Route("/v1/images/generations", self._generate, methods=["POST"]),
            Route("/v1/images/edits", self._edit, methods=["POST"]),
            Route("/api/uploads/{vendor}", self._upload, methods=["POST"]),
            Route("/files/{name}", self._file, methods=["GET"]),
            Route("/uploads/{name}", self._file, methods=["GET"]),
        ])

    def _refuse(self, request: Request) -> Response | None:
        if request.headers.get("authorization") != f"Bearer {self.key}":
            return JSONResponse({"error": {"message": "Incorrect API key provided"}}, 401)
        status = self.take_failure()
        if status is not None:
            return JSONResponse({"error": {"message": f"scripted failure {status}"}}, status, {"retry-after": "0"})
        return None

    def _answer(self, request: Request) -> Response:
        if self.use_urls:
            name = self.next_id("img-") + ".png"
            self.stored[name] = self.image
            return JSONResponse({"created": 1, "data": [{"url": f"{base_of(request)}/files/{name}"}]})
        return JSONResponse({"created": 1, "data": [{"b64_json": base64.b64encode(self.image).decode(),
                                                     "revised_prompt": "revised"}]})

    async def _generate(self, request: Request) -> Response:
        entry, _ = await self.record(request)
        refused = self._refuse(request)
        if refused is not None:
            return refused
        if not isinstance(entry["json"], dict) or not entry["json"].get("prompt"):
            return JSONResponse({"error": {"message": "prompt is required"}}, 400)
        return self._answer(request)

    async def _edit(self, request: Request) -> Response:
        entry, raw = await self.record(request)
        refused = self._refuse(request)
        if refused is not None:
            return refused
        ctype = request.headers.get("content-type", "")
        if ctype.startswith("multipart/"):
            parts: dict[str, Part] = parse_multipart(ctype, raw)
            self.edits.append({"kind": "multipart", "parts": parts})
            if "image" not in parts:
                return JSONResponse({"error": {"message": "image is required"}}, 400)
        else:
            self.edits.append({"kind": "json", "json": entry["json"]})
        return self._answer(request)

    async def _upload(self, request: Request) -> Response:
        _entry, raw = await self.record(request)
        refused = self._refuse(request)
        if refused is not None:
            return refused
        parts = parse_multipart(request.headers.get("content-type", ""), raw)
        if "file" not in parts:
            return JSONResponse({"error": {"message": "file is required"}}, 400)
        filename, data, ctype = parts["file"]
        name = self.next_id("up-") + "." + (filename or "bin").rsplit(".", 1)[-1]
        self.stored[name] = data
        self.uploads.append({"vendor": request.path_params["vendor"], "filename": filename, "bytes": data,
                             "content_type": ctype})
        return JSONResponse({"url": f"{base_of(request)}/uploads/{name}"}, 201)

    async def _file(self, request: Request) -> Response:
        await self.record(request)
        data = self.stored.get(request.path_params["name"])
        if data is None:
            return JSONResponse({"error": "not found"}, 404)
        return Response(data, media_type="image/png")
