"""A small MCP server (the SDK's MCPServer) for the client's tests: stdio by default, Streamable HTTP with
``--http PORT`` (bound to 127.0.0.1; every request must carry ``X-Test-Token: <--token>``).

Tools: ``echo`` (text back), ``add`` (integers), ``pixel`` (a 1x1 PNG as image content), ``crash``
(the process exits mid-call), ``hang`` (never answers), ``env_value`` (one variable of the server's
environment).
"""

from __future__ import annotations

import argparse
import base64
import os
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")

app = MCPServer("flaky")


@app.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def pixel() -> Image:
    """A one-pixel PNG image."""
    return Image(data=PNG, format="png")


@app.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    os._exit(3)


@app.tool()
def hang() -> str:
    """Never answer."""
    while True:
        time.sleep(3600)


@app.tool()
def env_value(name: str) -> str:
    """The value of one environment variable of the server ('<unset>' when it is not set)."""
    return os.environ.get(name, "<unset>")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=0)
    parser.add_argument("--token", default="")
    args = parser.parse_args()
    if not args.http:
        app.run()
        return
    import uvicorn
    from starlette.responses import PlainTextResponse

    inner = app.streamable_http_app()

    async def guarded(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"x-test-token", b"").decode() != args.token:
                await PlainTextResponse("missing or wrong X-Test-Token", status_code=401)(scope, receive, send)
                return
        await inner(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=args.http, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
