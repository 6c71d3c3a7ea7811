"""A Firecrawl v2 fake: ``POST /v2/search`` and ``POST /v2/scrape`` in the shapes firecrawl-py reads.

``FakeFirecrawl(api_key="fc-test")`` checks ``Authorization: Bearer fc-test`` (401 otherwise), logs
every request (path, headers, JSON body) in ``requests``, and answers the statuses queued in
``fail_next`` first (``fake.fail_next = [503, 503]`` → two 503s, then success) — for retry tests — and
the raw 200 bodies queued in ``answer_next`` after them (answers that are not Firecrawl's usual shape).
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


class FakeFirecrawl:
    def __init__(self, api_key: str = "fc-test", delay: float = 0.0) -> None:
        self.api_key = api_key
        self.delay = delay
        self.fail_next: list[int] = []
        self.answer_next: list[bytes] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.app = Starlette(routes=[Route("/v2/search", self._search, methods=["POST"]),
                                     Route("/v2/scrape", self._scrape, methods=["POST"])])

    async def _common(self, request: Request) -> tuple[dict[str, Any], Response | None]:
        body = json.loads(await request.body() or b"{}")
        with self._lock:
            self.requests.append({"path": request.url.path, "headers": dict(request.headers), "json": body})
            status = self.fail_next.pop(0) if self.fail_next else None
            raw = self.answer_next.pop(0) if status is None and self.answer_next else None
        if self.delay:
            await asyncio.sleep(self.delay)
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return body, JSONResponse({"success": False, "error": "Unauthorized: Invalid token"}, 401)
        if status is not None:
            headers = {"retry-after": "0"} if status == 429 else {}
            return body, JSONResponse({"success": False, "error": f"scripted failure {status}"}, status, headers)
        if raw is not None:
            return body, Response(raw, 200, media_type="application/json")
        return body, None

    async def _search(self, request: Request) -> Response:
        body, failure = await self._common(request)
        if failure is not None:
            return failure
        query, limit = str(body.get("query", "")), int(body.get("limit", 5))
        web = [{"url": f"https://example.com/{i}", "title": f"Result {i} for {query}",
                "description": f"About {query} ({i})", "position": i} for i in range(1, limit + 1)]
        return JSONResponse({"success": True, "data": {"web": web}, "creditsUsed": 1})

    async def _scrape(self, request: Request) -> Response:
        body, failure = await self._common(request)
        if failure is not None:
            return failure
        url = str(body.get("url", ""))
        data: dict[str, Any] = {"metadata": {"title": "Fake page", "sourceURL": url, "url": url, "statusCode": 200}}
        formats = body.get("formats", ["markdown"])
        if "markdown" in formats:
            data["markdown"] = f"# Fake page\n\nScraped {url}\n"
        if "html" in formats:
            data["html"] = f"<h1>Fake page</h1><p>Scraped {url}</p>"
        return JSONResponse({"success": True, "data": data})
