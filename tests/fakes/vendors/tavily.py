"""A Tavily fake: ``POST /search`` and ``POST /extract`` in the shapes of api.tavily.com.

``FakeTavily(api_key="tvly-test")`` checks ``Authorization: Bearer tvly-test`` (401 otherwise) and logs every
request in ``requests``. ``/extract`` answers per URL: a URL containing ``fail`` lands in
``failed_results``; one containing ``as-html`` comes back as a whole HTML document (as some extraction
backends do), every other one as Markdown.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

HTML_DOC = ("<!doctype html><html><head><title>Raw HTML page</title></head><body><nav>Menu Home About</nav>"
            "<main><h1>Raw HTML page</h1><p>{paragraph}</p></main><footer>Footer links</footer></body></html>")


class FakeTavily:
    def __init__(self, api_key: str = "tvly-test") -> None:
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/search", self._search, methods=["POST"]),
                                     Route("/extract", self._extract, methods=["POST"])])

    async def _common(self, request: Request) -> tuple[dict[str, Any], JSONResponse | None]:
        body = json.loads(await request.body() or b"{}")
        self.requests.append({"path": request.url.path, "headers": dict(request.headers), "json": body})
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return body, JSONResponse({"detail": {"error": "Unauthorized: missing or invalid API key."}}, 401)
        return body, None

    async def _search(self, request: Request) -> JSONResponse:
        body, failure = await self._common(request)
        if failure is not None:
            return failure
        query, limit = str(body.get("query", "")), int(body.get("max_results", 5))
        results = [{"title": f"Tavily {i}: {query}", "url": f"https://tavily.example/{i}",
                    "content": f"Relevant excerpt {i} about {query}.", "score": 1 - i / 100, "raw_content": None}
                   for i in range(1, limit + 1)]
        return JSONResponse({"query": query, "answer": None, "images": [], "results": results,
                             "response_time": 0.42})

    async def _extract(self, request: Request) -> JSONResponse:
        body, failure = await self._common(request)
        if failure is not None:
            return failure
        results: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for url in body.get("urls", []):
            if "fail" in url:
                failed.append({"url": url, "error": "Failed to fetch url"})
            elif "as-html" in url:
                paragraph = f"The backend sent HTML for {url}, which hermes converts itself. " * 4
                results.append({"url": url, "raw_content": HTML_DOC.format(paragraph=paragraph), "images": []})
            else:
                results.append({"url": url, "raw_content": f"# Tavily page\n\nExtracted text of {url}.",
                                "images": []})
        return JSONResponse({"results": results, "failed_results": failed, "response_time": 0.9})
