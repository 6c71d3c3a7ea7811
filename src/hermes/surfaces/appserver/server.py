"""The app server's Starlette app: JSON-RPC 2.0 over the WebSocket at ``/rpc``, served by uvicorn.

Each connection is checked by the :class:`~hermes.surfaces.appserver.auth.Gate` before it is accepted
(a refused one gets HTTP 403). Messages are JSON-RPC 2.0 requests, one per WebSocket text frame; each
is handled on a worker thread, so a slow one (``models.list``) does not hold up the others, and its
response may come after notifications it caused. Notifications leave in the order the host produced them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError
from hermes.surfaces.appserver.auth import SUBPROTOCOL, Gate, bearer_from
from hermes.surfaces.appserver.rpc import APP_ERROR, INVALID_PARAMS, AppApi, RpcError

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.websockets import WebSocket

logger = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
RPC_PATH = "/rpc"


class WsClient:
    """One WebSocket connection: notifications from any thread are queued for its one writer task."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    def send(self, message: dict[str, Any] | None) -> None:
        self.loop.call_soon_threadsafe(self.outbox.put_nowait, message)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


#: requests answered one after another, in the order they came (each other request gets a thread at once,
#: so a slow one holds up nothing): a terminal's keys, one message each, must reach the shell in order.
#: A plain text test: a message that only mentions the name elsewhere is merely ordered too.
_ORDERED = '"terminal.input"'


def handle(api: AppApi, client: WsClient, raw: str) -> dict[str, Any] | None:
    """One JSON-RPC message → its response (None for a notification from the client)."""
    try:
        message = json.loads(raw)
    except ValueError as exc:
        return _error(None, PARSE_ERROR, f"not JSON: {exc}")
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "send one JSON-RPC 2.0 request object per message (no batches)")
    request_id = message.get("id")
    method, params = message.get("method"), message.get("params", {})
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return _error(request_id, INVALID_REQUEST, "a request needs \"jsonrpc\": \"2.0\" and a \"method\" string")
    if not isinstance(params, dict):
        return _error(request_id, INVALID_PARAMS, "params must be an object")
    try:
        result = api.call(client, method, params)
    except RpcError as exc:
        response = _error(request_id, exc.code, exc.message)
    except HermesError as exc:
        response = _error(request_id, APP_ERROR, str(exc))
    except Exception as exc:  # a bug answers this request, never the connection
        logger.exception("app server: %s failed", method)
        response = _error(request_id, INTERNAL_ERROR, f"{method} failed: {type(exc).__name__}")
    else:
        response = {"jsonrpc": "2.0", "id": request_id, "result": result}
    return None if "id" not in message else response


def build_app(api: AppApi, gate: Gate) -> Starlette:
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocketDisconnect

    async def endpoint(websocket: WebSocket) -> None:
        offered = [p.strip() for p in websocket.headers.get("sec-websocket-protocol", "").split(",") if p.strip()]
        presented = bearer_from(websocket.headers.get("authorization"), websocket.query_params.get("token"),
                                offered)
        if not gate.allows(presented, websocket.headers.get("origin")):
            await websocket.close(code=1008)  # before accept: the handshake is refused with HTTP 403
            return
        # a browser offering subprotocols needs one chosen: the plain name, never the one carrying the token
        await websocket.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered else None)
        client = WsClient(asyncio.get_running_loop())

        async def writer() -> None:
            while (message := await client.outbox.get()) is not None:
                await websocket.send_text(json.dumps(message, ensure_ascii=False, default=str))

        async def answer(raw: str, after: asyncio.Task[None] | None = None) -> None:
            if after is not None:  # a key of a terminal: the one sent before it is written first
                await asyncio.wait({after})
            response = await asyncio.to_thread(handle, api, client, raw)
            if response is not None:
                client.send(response)

        writing = asyncio.create_task(writer())
        pending: set[asyncio.Task[None]] = set()
        keys: asyncio.Task[None] | None = None  # the last terminal.input: they are handled in order
        try:
            while True:
                raw = await websocket.receive_text()
                if _ORDERED in raw:
                    task = keys = asyncio.create_task(answer(raw, keys))
                else:
                    task = asyncio.create_task(answer(raw))
                pending.add(task)
                task.add_done_callback(pending.discard)
        except WebSocketDisconnect:
            pass
        finally:
            api.forget(client)
            writing.cancel()

    from hermes.surfaces.appserver.static import static_routes

    return Starlette(routes=[WebSocketRoute(RPC_PATH, endpoint), *static_routes()])


def bind(host: str, port: int) -> socket.socket:
    """Listen on ``host:port`` now (port 0: any free one), so the caller knows the port before serving."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise HermesError(f"cannot listen on {host}:{port}: {exc}") from exc
    sock.listen(128)
    return sock


class AppServer:
    """The whole server: the API, its gate and uvicorn on a socket bound at construction."""

    def __init__(self, api: AppApi, gate: Gate, host: str, port: int) -> None:
        import uvicorn

        self.api, self.host = api, host
        self.socket = bind(host, port)
        self.port = int(self.socket.getsockname()[1])
        config = uvicorn.Config(build_app(api, gate), log_level="warning", lifespan="off", access_log=False,
                                ws="websockets-sansio" if _has_sansio() else "websockets")
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    def serve_forever(self) -> None:
        """Serve on this thread until Ctrl-C / SIGTERM (uvicorn's handlers) or :meth:`stop`."""
        try:
            self.server.run(sockets=[self.socket])
        finally:
            self.api.close()
            self.socket.close()

    def start(self) -> None:
        """Serve from a background thread (tests, an embedding process)."""
        # uvicorn installs its signal handlers only on the main thread, so none are set here
        self._thread = threading.Thread(target=self.serve_forever, name="hermes-app-server", daemon=True)
        self._thread.start()
        while not self.server.started and self._thread.is_alive():
            self._thread.join(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(15)


def _has_sansio() -> bool:
    import importlib.util

    return importlib.util.find_spec("uvicorn.protocols.websockets.websockets_sansio_impl") is not None
