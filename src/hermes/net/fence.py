"""The network fence of the browsers we start: a SOCKS5 proxy every such Chromium must use.

Used by the gateway's local browser pool and by the local browser tools (:mod:`hermes.tools.browser`).
A browser on the gateway's (or the user's) host could otherwise open anything that host reaches: intranet services,
cloud metadata, and loopback ports (the gateway's own, other services of the host). So each Chromium runs
with ``--proxy-server=socks5://127.0.0.1:<fence>`` and ``--proxy-bypass-list=<-loopback>`` (loopback
goes through the proxy too), QUIC off and WebRTC limited to proxied traffic, and this proxy decides
every connection the way the gateway's page fetcher does (:func:`hermes.net.address_policy.resolve_allowed`):
the name is resolved here, **every** address must be public (loopback only with ``allow_loopback``,
private ranges only with ``allow_private``; link-local and cloud metadata never), and the connection
goes to the vetted address. The fence's own port, and any loopback port ``blocked_ports()`` names, are
refused even when loopback is allowed. (The pooled browsers themselves open no DevTools port: they
are driven over pipes, see :mod:`hermes.toolgateway.browser.cdppipe`.)

Only ``CONNECT`` without authentication is spoken (what Chromium uses); it listens on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import struct
from collections.abc import Callable

from hermes.errors import FetchError
from hermes.net.address_policy import FetchPolicy, IPAddress, resolve_allowed

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT = 10.0
CONNECT_TIMEOUT = 10.0
# SOCKS5 reply codes
OK, FAILURE, NOT_ALLOWED, HOST_UNREACHABLE, REFUSED, BAD_COMMAND, BAD_ADDRESS = 0, 1, 2, 4, 5, 7, 8


def _reply(code: int) -> bytes:
    return bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0])


class NetworkFence:
    """The proxy; ``blocked_ports()`` names loopback ports no browser may reach (besides the fence's own)."""

    def __init__(self, policy: FetchPolicy, blocked_ports: Callable[[], set[int]] = set) -> None:
        self.policy = policy
        self.blocked_ports = blocked_ports
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        """Listen on 127.0.0.1 (an ephemeral port); returns the port."""
        if self._server is None:
            self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (TimeoutError, OSError, asyncio.IncompleteReadError):
            pass  # the browser or the site went away
        except Exception:
            log.exception("browser fence: a connection failed")
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> tuple[str, int] | None:
        """The CONNECT target of a SOCKS5 handshake; None after answering a request it cannot serve."""
        version, count = await reader.readexactly(2)
        methods = await reader.readexactly(count)
        if version != 5 or 0 not in methods:
            writer.write(b"\x05\xff")
            return None
        writer.write(b"\x05\x00")
        version, command, _reserved, kind = await reader.readexactly(4)
        if kind == 1:
            host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
        elif kind == 4:
            host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
        elif kind == 3:  # a host name, which Chromium sends in ASCII (IDNA already applied)
            raw = await reader.readexactly((await reader.readexactly(1))[0])
            host = raw.decode("ascii", "replace")
        else:
            writer.write(_reply(BAD_ADDRESS))
            return None
        if not host or not host.isascii() or not host.isprintable():
            writer.write(_reply(BAD_ADDRESS))
            return None
        (port,) = struct.unpack("!H", await reader.readexactly(2))
        if version != 5 or command != 1:
            writer.write(_reply(BAD_COMMAND))
            return None
        return host, port

    def _blocked(self, ip: IPAddress, port: int) -> bool:
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return ip.is_loopback and (port == self.port or port in self.blocked_ports())

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        target = await asyncio.wait_for(self._request(reader, writer), HANDSHAKE_TIMEOUT)
        if target is None:
            return
        host, port = target
        try:
            ip = await resolve_allowed(host.rstrip(".").lower(), port, self.policy)
        except FetchError as exc:
            writer.write(_reply(NOT_ALLOWED if exc.status == 403 else HOST_UNREACHABLE))
            return
        if self._blocked(ip, port):
            log.warning("browser fence: refused a connection to a blocked loopback port (%s:%s)", ip, port)
            writer.write(_reply(NOT_ALLOWED))
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(str(ip), port, family=socket.AF_INET6 if ip.version == 6 else socket.AF_INET),
                CONNECT_TIMEOUT)
        except (TimeoutError, OSError):
            writer.write(_reply(REFUSED))
            return
        writer.write(_reply(OK))
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()
            with contextlib.suppress(Exception):
                await up_writer.wait_closed()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()
    except OSError:
        sink.close()


__all__ = ["NetworkFence"]
