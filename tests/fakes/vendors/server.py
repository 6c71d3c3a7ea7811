"""Serve an ASGI app with uvicorn on 127.0.0.1 (ephemeral port) from a background thread."""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType
from typing import Any, Literal

import uvicorn


class ServerThread:
    """``with ServerThread(app) as srv: httpx.get(srv.url + "/path")`` — real HTTP, real lifespan."""

    def __init__(self, app: Any, *, lifespan: Literal["auto", "on", "off"] = "auto", port: int = 0) -> None:
        self.app = app
        self.lifespan = lifespan
        self.port = port  # 0: an ephemeral one
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerThread:
        # protocol IPPROTO_TCP (not 0) and TCP_NODELAY: asyncio only switches Nagle off on accepted sockets
        # of a TCP-protocol listener, and without it each response on a kept-alive connection waits ~40 ms
        # for the client's delayed ACK. Accepted sockets inherit the option (Linux).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan=self.lifespan,
                                timeout_graceful_shutdown=2, backlog=1024)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True,
                                        name=f"uvicorn-{self.port}")
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(15)
        self._server = self._thread = None

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
