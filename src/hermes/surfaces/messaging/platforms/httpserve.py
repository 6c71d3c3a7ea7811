"""Serving a Starlette app from inside the gateway's event loop (uvicorn on a socket bound up front)."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

from hermes.surfaces.messaging.adapter import PlatformError

logger = logging.getLogger(__name__)


class AppServer:
    """Binds ``host:port`` at :meth:`start` (port 0: any; :attr:`port` is the one bound), serves in
    :meth:`serve` until :meth:`stop`."""

    def __init__(self, name: str, host: str, port: int) -> None:
        self.name, self.host, self.port = name, host, port
        self._socket: socket.socket | None = None
        self._server: Any = None

    def start(self, app: Any) -> None:
        import uvicorn

        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise PlatformError(f"{self.name}: cannot listen on {self.host}:{self.port}: {exc}") from exc
        sock.listen(128)
        self.port = int(sock.getsockname()[1])
        self._socket = sock
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False))
        self._server.install_signal_handlers = lambda: None  # the gateway handles signals

    async def serve(self) -> None:
        if self._server is None or self._socket is None:
            raise PlatformError(f"{self.name}: not started")
        await self._server.serve(sockets=[self._socket])

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.should_exit = True
            if getattr(server, "servers", None):  # it was serving: close its connections too
                try:
                    await asyncio.wait_for(server.shutdown(), 10)
                except Exception as exc:
                    logger.debug("%s: shutdown: %s", self.name, exc)
        sock, self._socket = self._socket, None
        if sock is not None:
            sock.close()
