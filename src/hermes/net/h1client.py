"""A small keep-alive HTTP/1.1 client on asyncio and httptools, for the Tool Gateway's vendor calls.

httpx is the project's HTTP client; on a relay's hot path its per-request machinery (httpcore's pool,
anyio's checkpoints and cancel scopes, h11's event objects) costs more than the whole rest of the
gateway's own work (docs/performance.md, "Gateway relay"). :class:`H1Client` does one thing — send a
request and read a complete, capped answer over a pooled connection — with the parser uvicorn already
uses, and keeps what the relays rely on:

* **the same errors**: a failed connect is ``httpx.ConnectError`` (``httpx.ConnectTimeout`` when slow),
  a try past its time ``httpx.ReadTimeout``, a broken or malformed answer ``httpx.RemoteProtocolError``,
  a header with CR/LF or an unknown scheme ``httpx.LocalProtocolError``/``httpx.UnsupportedProtocol``, so
  :func:`hermes.net.http.retrying` retries and the relays map errors exactly as with httpx;
* **the caps**: a declared ``Content-Length`` over ``max_bytes`` is refused before reading, a body that
  grows past it as it arrives (decompressed, for ``gzip``/``deflate``) is cut off:
  :class:`~hermes.errors.ResponseTooLarge`; at most ``max_connections`` connections at once;
* **the time**: each try is bounded as a whole (connect, write, read) by the time it is given;
* **no environment**: no proxy variables, no ``.netrc``, no redirects followed (answered as they came),
  TLS verified against certifi's bundle (httpx's own) with SNI.

A request that fails on a kept-alive connection before any byte of the answer arrived (the server closed
it while idle) is sent once more on a fresh connection. Only ``GET``, ``POST``, ``PUT``, ``PATCH`` and
``DELETE`` go here: a ``HEAD`` answer has no body the parser could know of.
"""

from __future__ import annotations

import asyncio
import math
import re
import ssl
import time
import zlib
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import quote, urlencode, urlsplit

import httpx

from hermes.errors import ResponseTooLarge
from hermes.net.http import NO_RETRY, HttpAnswer, RetryPolicy, retrying

METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
_BAD_HEADER = re.compile(r"[\r\n\x00]")
_SAFE = "/%:@!$&'()*+,;=~-._"  # kept as they are in a request target (what httpx keeps too)
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
_CHARSET = re.compile(r"charset\s*=\s*\"?([A-Za-z0-9_.:-]+)", re.IGNORECASE)


class _Connection(asyncio.Protocol):
    """One TCP (or TLS) connection and the answer being read on it."""

    def __init__(self, origin: tuple[str, str, int]) -> None:
        import httptools

        self.origin = origin
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.idle_since = 0.0
        self._reset(0)

    def _reset(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.size = 0
        self.received = 0
        self.head_done = False
        self.to_close = False  # no length and not chunked: the body ends with the connection
        self.inflate: Any = None
        self.keep_alive = False
        self.answer: asyncio.Future[None] | None = None

    # -- asyncio ------------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        import httptools

        self.received += len(data)
        if self.answer is None or self.answer.done():
            self.close()  # bytes nobody asked for: the connection cannot be trusted any more
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:  # a callback's own error arrives as the context
            cause = exc.__context__
            if isinstance(cause, ResponseTooLarge):
                self._fail(cause)
            elif isinstance(cause, ValueError):
                self._fail(httpx.DecodingError(str(cause)))
            else:
                self._fail(httpx.RemoteProtocolError(f"malformed answer: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.answer is not None and not self.answer.done():
            if self.head_done and self.to_close:
                self.answer.set_result(None)
            else:
                self.answer.set_exception(httpx.RemoteProtocolError("the server closed the connection"))

    # -- httptools callbacks ------------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if 100 <= self.status < 200:  # an interim answer: the real one follows
            self.headers = []
            return
        self.head_done = True
        length = chunked = None
        for name, value in self.headers:
            lowered = name.lower()
            if lowered == b"content-length":
                length = value
            elif lowered == b"transfer-encoding":
                chunked = value
            elif lowered == b"content-encoding":
                coding = value.strip().lower()
                if coding in (b"gzip", b"x-gzip"):
                    self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
                elif coding == b"deflate":
                    self.inflate = zlib.decompressobj()
        if length is not None and length.strip().isdigit() and int(length) > self.max_bytes:
            raise ResponseTooLarge(self.max_bytes)
        self.to_close = length is None and chunked is None and self.status not in (204, 304)

    def on_body(self, body: bytes) -> None:
        if self.inflate is not None:
            try:
                body = self.inflate.decompress(body, self.max_bytes + 1 - self.size)
            except zlib.error as exc:
                raise ValueError(f"the compressed body cannot be read: {exc}") from None
        self.size += len(body)
        if self.size > self.max_bytes:
            raise ResponseTooLarge(self.max_bytes)
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        self.keep_alive = self.parser.should_keep_alive()  # read now: the parser resets for the next message
        if self.head_done and self.answer is not None and not self.answer.done():
            self.answer.set_result(None)

    # -- use ----------------------------------------------------------------------------------------
    def time_out(self) -> None:
        """The try's time is up: its wait ends with ``TimeoutError`` and the connection is dropped."""
        self._fail(TimeoutError())

    def _fail(self, exc: BaseException) -> None:
        if self.answer is not None and not self.answer.done():
            self.answer.set_exception(exc)
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    async def exchange(self, request: bytes, max_bytes: int) -> None:
        """Send ``request`` and wait for its whole answer (then ``status``, ``headers``, ``chunks``)."""
        assert self.transport is not None
        self._reset(max_bytes)
        self.answer = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        await self.answer

    def reusable(self) -> bool:
        return not self.closed and not self.to_close and self.keep_alive


class H1Client:
    """Pooled HTTP/1.1 connections per origin; :meth:`request` makes one capped request."""

    def __init__(self, *, max_connections: int = 512, max_idle_per_origin: int = 128, keepalive_expiry: float = 30.0,
                 connect_timeout: float = 10.0, user_agent: str = "hermes/1") -> None:
        self.max_idle = max_idle_per_origin
        self.keepalive_expiry = keepalive_expiry
        self.connect_timeout = connect_timeout
        self.user_agent = user_agent
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._tls: ssl.SSLContext | None = None
        self._closed = False
        #: connections waiting for an answer → the monotonic time their try ends; one loop timer for them all
        self._due: dict[_Connection, float] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf

    # -- try deadlines ------------------------------------------------------------------------------
    def _watch(self, conn: _Connection, until: float) -> None:
        """End ``conn``'s wait at ``until`` (``time.monotonic()``). The timer is moved only for an earlier
        time: tries are mostly given the same span, so one timer serves many (a timer a try cost more than
        the rest of the try's bookkeeping)."""
        self._due[conn] = until
        if until < self._timer_at:
            self._arm(until, time.monotonic())

    def _arm(self, at: float, now: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        # a loop's timer may fire a little before its time (uvloop counts whole milliseconds): never sooner than 1 ms
        self._timer = asyncio.get_running_loop().call_later(max(at - now, 0.001), self._expire)
        self._timer_at = at

    def _expire(self) -> None:
        self._timer, self._timer_at = None, math.inf
        now = time.monotonic()
        try:
            for conn, at in list(self._due.items()):
                if at <= now:
                    del self._due[conn]
                    conn.time_out()
        finally:  # the tries still waiting (whatever one try's ending raised) keep a timer
            if self._due:
                self._arm(min(self._due.values()), now)

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            import certifi

            self._tls = ssl.create_default_context(cafile=certifi.where())
        return self._tls

    async def _connect(self, origin: tuple[str, str, int], limit: float | None) -> _Connection:
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        timeout = self.connect_timeout if limit is None else min(limit, self.connect_timeout)
        tls = self._tls_context() if scheme == "https" else None
        try:
            async with asyncio.timeout(timeout):
                _transport, conn = await loop.create_connection(
                    lambda: _Connection(origin), host.strip("[]"), port, ssl=tls,
                    server_hostname=host.strip("[]") if tls else None)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {host}:{port} took too long") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(f"cannot connect to {host}:{port}: {exc}") from None
        return conn

    def _take_idle(self, origin: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            conn = idle.pop()
            if not conn.closed and now - conn.idle_since < self.keepalive_expiry:
                return conn
            conn.close()
        return None

    def _put_back(self, conn: _Connection) -> None:
        idle = self._idle.setdefault(conn.origin, [])
        if self._closed or len(idle) >= self.max_idle or not conn.reusable():
            conn.close()
            return
        conn.idle_since = time.monotonic()
        idle.append(conn)

    async def request(self, method: str, url: str, *, max_bytes: int, headers: Mapping[str, str] | None = None,
                      content: bytes | None = None, params: Mapping[str, str] | None = None,
                      timeout: float | None = None, attempt: int = 1) -> HttpAnswer:
        """One try: the complete answer (any status), or an ``httpx`` transport error."""
        if method not in METHODS:
            raise httpx.UnsupportedProtocol(f"{method} requests are not sent by this client")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise httpx.UnsupportedProtocol(f"cannot send a request to {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        netloc = parts.netloc.rpartition("@")[2]
        origin = (parts.scheme, netloc.rpartition(":")[0] if parts.port else netloc, port)
        target = quote(parts.path or "/", safe=_SAFE)
        if parts.query:
            target += "?" + quote(parts.query, safe=_SAFE + "/?")
        if params:
            target += ("&" if parts.query else "?") + urlencode(params)
        request = _encode(method, target, netloc, headers or {}, content, self.user_agent)
        started = time.monotonic()
        async with self._slots:
            conn = self._take_idle(origin)
            reused = conn is not None
            while True:
                if conn is None:
                    conn = await self._connect(origin, timeout)
                try:
                    if timeout is not None:
                        if time.monotonic() - started >= timeout:
                            raise TimeoutError
                        self._watch(conn, started + timeout)
                    try:
                        await conn.exchange(request, max_bytes)
                    finally:
                        self._due.pop(conn, None)
                except TimeoutError:
                    conn.close()
                    raise httpx.ReadTimeout(f"no complete answer from {origin[1]} in time") from None
                except httpx.RemoteProtocolError:
                    conn.close()
                    # closed while idle: once more on a new connection, for a method that may be repeated (a
                    # POST the vendor may have taken before closing is left to the caller's retry policy)
                    if reused and conn.received == 0 and method.upper() in _IDEMPOTENT:
                        conn, reused = None, False
                        continue
                    raise
                except BaseException:
                    conn.close()
                    raise
                break
            status, raw_headers, body = conn.status, conn.headers, b"".join(conn.chunks)
            self._put_back(conn)
        answer_headers = httpx.Headers(raw_headers)
        found = _CHARSET.search(answer_headers.get("content-type", ""))
        return HttpAnswer(status, answer_headers, body, attempt, found.group(1) if found else None)

    async def send(self, method: str, url: str, *, max_bytes: int, retry: RetryPolicy = NO_RETRY,
                   deadline: float | None = None, headers: Mapping[str, str] | None = None,
                   content: bytes | None = None, params: Mapping[str, str] | None = None) -> HttpAnswer:
        """:func:`hermes.net.http.send_request`'s retries and deadline around :meth:`request`."""
        async def once(per_try: float | None, attempt: int) -> HttpAnswer:
            return await self.request(method, url, max_bytes=max_bytes, headers=headers, content=content,
                                      params=params, timeout=per_try, attempt=attempt)

        return await retrying(once, retry=retry, timeout=None, deadline=deadline)

    async def aclose(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._timer_at = None, math.inf
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()


def _encode(method: str, target: str, netloc: str, headers: Mapping[str, str], content: bytes | None,
            user_agent: str) -> bytes:
    """The request's bytes; ``httpx.LocalProtocolError`` for a header that would break the framing."""
    lines = [f"{method} {target} HTTP/1.1", f"host: {netloc}"]
    given = {name.lower() for name in headers}
    if "user-agent" not in given:
        lines.append(f"user-agent: {user_agent}")
    if "accept" not in given:
        lines.append("accept: */*")
    for name, value in headers.items():
        lowered = name.lower()
        if lowered in ("host", "content-length", "transfer-encoding", "connection"):
            continue
        if _BAD_HEADER.search(name) or _BAD_HEADER.search(value) or ":" in name or not name.strip():
            raise httpx.LocalProtocolError(f"the header {name!r} cannot be sent")
        lines.append(f"{name}: {value}")
    body = content or b""
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"content-length: {len(body)}")
    if _BAD_HEADER.search(target) or " " in target:
        raise httpx.LocalProtocolError("the request target cannot be sent")
    try:
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    except UnicodeEncodeError:
        raise httpx.LocalProtocolError("a header is not Latin-1 text") from None
    return head + body


__all__ = ["METHODS", "H1Client"]
