"""A Brave Search fake: ``GET /res/v1/web/search?q=…&count=N`` with ``X-Subscription-Token``.

Descriptions carry ``<strong>`` highlight markup, as Brave's do. ``q=nothing`` answers without a ``web``
section (Brave's answer when nothing matched).
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


class FakeBrave:
    def __init__(self, api_key: str = "brave-test") -> None:
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/res/v1/web/search", self._search, methods=["GET"])])

    async def _search(self, request: Request) -> JSONResponse:
        self.requests.append({"path": request.url.path, "headers": dict(request.headers),
                              "params": dict(request.query_params)})
        if request.headers.get("x-subscription-token") != self.api_key:
            error = {"code": "SUBSCRIPTION_TOKEN_INVALID", "detail": "The provided subscription token is invalid.",
                     "status": 422}
            return JSONResponse({"type": "ErrorResponse", "error": error}, 422)
        query = request.query_params.get("q", "")
        count = min(int(request.query_params.get("count", "20")), 20)
        body: dict[str, Any] = {"type": "search", "query": {"original": query}}
        if query != "nothing":
            body["web"] = {"type": "search", "results": [
                {"title": f"Brave {i}: {query}", "url": f"https://brave.example/{i}", "age": "2 days ago",
                 "description": f"A page about <strong>{query}</strong> &amp; more ({i})."}
                for i in range(1, count + 1)]}
        return JSONResponse(body)
