"""An Exa fake: ``POST /search`` and ``POST /contents`` in the shapes of api.exa.ai.

``FakeExa(api_key="exa-test")`` checks ``x-api-key`` (401 otherwise) and logs every request. In
``/contents`` a URL containing ``missing`` fails with ``CRAWL_NOT_FOUND`` in ``statuses`` (HTTP 200
overall, as the real API does since 2025).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


class FakeExa:
    def __init__(self, api_key: str = "exa-test") -> None:
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/search", self._search, methods=["POST"]),
                                     Route("/contents", self._contents, methods=["POST"])])

    async def _common(self, request: Request) -> tuple[dict[str, Any], JSONResponse | None]:
        body = json.loads(await request.body() or b"{}")
        self.requests.append({"path": request.url.path, "headers": dict(request.headers), "json": body})
        if request.headers.get("x-api-key") != self.api_key:
            return body, JSONResponse({"requestId": "req_1", "error": "Invalid API key", "tag": "INVALID_API_KEY"},
                                      401)
        return body, None

    async def _search(self, request: Request) -> JSONResponse:
        body, failure = await self._common(request)
        if failure is not None:
            return failure
        query, limit = str(body.get("query", "")), int(body.get("numResults", 10))
        max_chars = int(body.get("contents", {}).get("text", {}).get("maxCharacters", 1000))
        text = f"Exa page text about {query}. " * 40
        results = [{"id": f"https://exa.example/{i}", "url": f"https://exa.example/{i}", "title": f"Exa {i}: {query}",
                    "publishedDate": "2024-05-01T00:00:00.000Z", "author": None, "text": text[:max_chars]}
                   for i in range(1, limit + 1)]
        return JSONResponse({"requestId": "req_2", "resolvedSearchType": "neural", "results": results})

    async def _contents(self, request: Request) -> JSONResponse:
        body, failure = await self._common(request)
        if failure is not None:
            return failure
        results: list[dict[str, Any]] = []
        statuses: list[dict[str, Any]] = []
        for url in body.get("urls", []):
            if "missing" in url:
                statuses.append({"id": url, "status": "error",
                                 "error": {"tag": "CRAWL_NOT_FOUND", "httpStatusCode": 404}})
                continue
            statuses.append({"id": url, "status": "success"})
            results.append({"id": url, "url": url, "title": "Exa document", "text": f"Full text of {url} from Exa."})
        return JSONResponse({"requestId": "req_3", "results": results, "statuses": statuses})
