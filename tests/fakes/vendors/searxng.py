"""A SearXNG fake: ``GET /search?q=…&format=json`` → ``{"query", "results": [{url, title, content, engine}]}``.

Like a real instance with the JSON format disabled, any other ``format`` answers 403.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


async def _search(request: Request) -> Response:
    if request.query_params.get("format") != "json":
        return Response("Forbidden", 403)
    query = request.query_params.get("q", "")
    results = [{"url": f"https://searx.example/{i}", "title": f"Searx {i}: {query}", "content": f"snippet {i}",
                "engine": "fake"} for i in range(1, 9)]
    return JSONResponse({"query": query, "number_of_results": len(results), "results": results})


def searxng_app() -> Starlette:
    return Starlette(routes=[Route("/search", _search, methods=["GET"])])
