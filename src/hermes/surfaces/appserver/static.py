"""The desktop app's front end: plain HTML, CSS and JavaScript shipped in the package (``web/``), no build step.

Served by the app server at ``/`` (the page) and ``/app/<file>`` (its scripts and styles). The files hold
no secret: a page reached beyond loopback reads the bearer token from its address (``#token=...``) and
presents it on the WebSocket, like any other client. The page may not be framed by another site.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

WEB_DIR = Path(__file__).with_name("web")
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
_HEADERS = {"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache",
            "Referrer-Policy": "no-referrer"}


def static_routes() -> list[BaseRoute]:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    def serve(name: str) -> Response:
        path = (WEB_DIR / name).resolve()
        if path.parent != WEB_DIR.resolve() or path.suffix not in _TYPES or not path.is_file():
            return Response("not found", status_code=404, media_type="text/plain")
        return Response(path.read_bytes(), media_type=_TYPES[path.suffix], headers=_HEADERS)

    async def index(request: Request) -> Response:
        return serve("index.html")

    async def asset(request: Request) -> Response:
        name: Any = request.path_params.get("name", "")
        return serve(str(name))

    return [Route("/", index), Route("/app/{name}", asset)]
