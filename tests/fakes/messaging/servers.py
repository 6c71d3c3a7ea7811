"""Loopback servers the platform fakes are built on: a WebSocket server on its own event loop, and a
threaded HTTP server whose answers come from one function."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable
from email.message import Message
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: (method, path, headers, body bytes) → (status, JSON payload, raw bytes or None)
Answer = Callable[[str, str, Any, bytes], tuple[int, Any]]


def multipart_parts(ctype: str, raw: bytes) -> dict[str, Message]:
    """The parts of a ``multipart/form-data`` body by field name."""
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {ctype}\r\n\r\n".encode() + raw)
    return {str(p.get_param("name", header="content-disposition")): p for p in message.iter_parts()}


class JsonHttp:
    """``answer`` serves every request of a ``ThreadingHTTPServer`` on 127.0.0.1."""

    def __init__(self, answer: Answer) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _any(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, payload = answer(self.command, self.path, self.headers, raw)
                raw_bytes = isinstance(payload, bytes)
                body = payload if raw_bytes else b"" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/octet-stream" if raw_bytes else "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class WsLoop:
    """A WebSocket server on 127.0.0.1 with its own event loop thread; ``session`` runs per connection
    and should add the connection to :attr:`conns` once it may receive pushed events."""

    def __init__(self, session: Callable[[Any], Awaitable[None]]) -> None:
        self.conns: list[Any] = []
        self.loop = asyncio.new_event_loop()
        self._session = session
        started = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self.thread.start()
        if not started.wait(10):
            raise RuntimeError("the WebSocket server did not start")

    def _run(self, started: threading.Event) -> None:
        from websockets.asyncio.server import serve

        asyncio.set_event_loop(self.loop)

        async def main() -> None:
            self.stopping = asyncio.Event()
            server = await serve(self._session, "127.0.0.1", 0)
            self.url = f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}"
            started.set()
            await self.stopping.wait()
            server.close()
            await server.wait_closed()

        self.loop.run_until_complete(main())

    def run(self, make: Callable[[], Awaitable[Any]]) -> Any:
        """Run a coroutine on the server's loop and wait for it."""
        return asyncio.run_coroutine_threadsafe(make(), self.loop).result(10)

    def send_latest(self, text: str | bytes) -> bool:
        """Send ``text`` (a text or binary message) on the newest connection; False when none is open."""
        async def send() -> bool:
            if not self.conns:
                return False
            await self.conns[-1].send(text)
            return True

        return bool(self.run(send))

    def drop(self, code: int = 1001) -> None:
        async def drop() -> None:
            for ws in list(self.conns):
                await ws.close(code, "going away")

        self.run(drop)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stopping.set)
        self.thread.join(10)
        self.loop.close()
