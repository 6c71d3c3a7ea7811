"""A small MCP server (the SDK's MCPServer) for the client's tests: stdio by default, Streamable HTTP with
``--http PORT`` (bound to 127.0.0.1; every request must carry ``X-Test-Token: <--token>``).

Tools: ``echo`` (text back), ``add`` (integers), ``pixel`` (a 1x1 PNG as image content), ``crash``
(the process exits mid-call), ``hang`` (never answers), ``env_value`` (one variable of the server's
environment), ``book`` (asks the person for a booking's details mid-call: MCP elicitation).
"""

from __future__ import annotations

import argparse
import base64
import os
import time
from typing import Annotated

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.server.mcpserver.utilities.types import Image
from pydantic import BaseModel, Field

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


class Booking(BaseModel):
    guests: int = Field(description="How many people")
    terrace: bool = Field(description="Sit outside?")
    note: str = Field(default="", description="Anything the restaurant should know")


def booking_details() -> Elicit[Booking]:
    return Elicit("Booking a table for tonight", Booking)


@app.tool()
async def book(answer: Annotated[ElicitationResult[Booking], Resolve(booking_details)]) -> str:
    """Book a table, asking the person for the details (an input request: either protocol era)."""
    if not isinstance(answer, AcceptedElicitation):
        return answer.action
    data = answer.data
    return f"booked {data.guests} guests, terrace={data.terrace}, note={data.note!r}"


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
