"""An xAI Responses fake with the built-in ``x_search`` tool (``api.x.ai``).

``FakeXAI(key="xai-test")`` checks ``Authorization: Bearer xai-test``; ``POST /v1/responses`` answers an
``x_search_call`` item and a ``message`` whose ``output_text`` cites one post (``url_citation``), plus a
top-level ``citations`` list. ``cite=False`` answers without any citation (a filter that matched nothing).
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fakes.vendors.fal import Recorder

POST_URL = "https://x.com/hermes/status/1234567890"


class FakeXAI(Recorder):
    def __init__(self, key: str = "xai-test") -> None:
        super().__init__()
        self.key = key
        self.cite = True
        self.app = Starlette(routes=[Route("/v1/responses", self._responses, methods=["POST"])])

    async def _responses(self, request: Request) -> Response:
        entry, _ = await self.record(request)
        if request.headers.get("authorization") != f"Bearer {self.key}":
            return JSONResponse({"error": "Incorrect API key provided"}, 401)
        status = self.take_failure()
        if status is not None:
            return JSONResponse({"error": f"scripted failure {status}"}, status, {"retry-after": "0"})
        body: dict[str, Any] = entry["json"] or {}
        query = str((body.get("input") or [{}])[0].get("content", ""))
        text = f"People on X say {query} is going well."
        annotations = [{"type": "url_citation", "url": POST_URL, "title": "1", "start_index": 0,
                        "end_index": 6}] if self.cite else []
        return JSONResponse({
            "id": "resp_1", "object": "response", "model": body.get("model"), "status": "completed",
            "output": [
                {"type": "x_search_call", "id": "xs_1", "status": "completed"},
                {"type": "message", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": text, "annotations": annotations}]},
            ],
            "citations": [POST_URL] if self.cite else [],
            "usage": {"input_tokens": 10, "output_tokens": 12},
        })
