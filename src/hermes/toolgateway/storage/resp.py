"""A lean asyncio Redis client for the relay hot path (RESP2 over one connection), and its Pub/Sub connection.

A relayed request makes at most one Redis round trip: the rate-limit script (:mod:`.redis_limiter`,
:mod:`.redis_lease`). Through ``redis.asyncio`` that round trip cost 370 µs of Python here (a
connection-pool checkout, the command and reply machinery, the retry wrapper) where a raw asyncio
exchange costs about 100 µs. This client does only what the hot path needs:

* one connection per event loop, **pipelined**: concurrent requests write their commands back to back
  and the replies, which Redis sends in order, settle the waiting calls first in, first out;
* ``AUTH`` (password, or user and password) and ``SELECT`` on connect, from a ``redis://`` or
  ``unix://`` URL as redis-py reads it (:func:`lean_url_supported` says which URLs; any other — TLS,
  query options — keeps ``redis.asyncio``);
* ``EVALSHA``, and ``EVAL`` once when Redis answers ``NOSCRIPT`` (a restarted Redis forgets scripts), and
  plain commands (:meth:`LeanRedis.call`); :class:`Subscriber` is a connection in Pub/Sub mode for
  :mod:`.redis_watch`;
* the same failure contract as the client it replaces, in redis-py's exception types: connecting and
  each answer are bounded (``timeout``); a timeout is not retried and drops the connection (its
  replies can no longer be matched: the other calls waiting on it fail as timeouts too, since Redis may
  still run them); a dropped connection is retried once, at once, on a new one.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast
from urllib.parse import parse_qsl, urlsplit

import redis
from redis.connection import UnixDomainSocketConnection
from redis.connection import parse_url as _redis_parse_url


def parse_url(url: str) -> dict[str, Any]:
    """``url`` as redis-py reads it (host, port, db, username, password, path, options)."""
    parsed: dict[str, Any] = _redis_parse_url(url)  # type: ignore[no-untyped-call]
    return parsed


_LEAN_KEYS = frozenset({"host", "port", "db", "username", "password", "path", "connection_class"})


def lean_url_supported(url: str) -> bool:
    """Whether :class:`LeanRedis` can talk to ``url``: plain TCP or a Unix socket, no query options."""
    try:
        parts = parse_url(url)
    except ValueError:
        return False
    kind = parts.get("connection_class")
    query = {name for name, _ in parse_qsl(urlsplit(url).query, keep_blank_values=True)}
    # options in the query: redis-py reads some of them as connection settings (``?path=`` would even
    # turn a TCP URL into a Unix socket one); only a Unix socket URL's ``db`` is taken here
    allowed = {"db"} if kind is UnixDomainSocketConnection else set()
    return set(parts) <= _LEAN_KEYS and kind in (None, UnixDomainSocketConnection) and query <= allowed


class _ErrorReply:
    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


class _Incomplete(Exception):
    pass


def _line(buf: bytearray, pos: int) -> tuple[bytes, int]:
    end = buf.find(b"\r\n", pos)
    if end < 0:
        raise _Incomplete
    return bytes(buf[pos:end]), end + 2


def _parse(buf: bytearray, pos: int) -> tuple[Any, int]:
    """One RESP2 reply at ``pos``: (value, position after it); raises _Incomplete when it is not all here."""
    if pos >= len(buf):
        raise _Incomplete
    kind = buf[pos : pos + 1]
    text, pos = _line(buf, pos + 1)
    if kind == b"+":
        return text, pos
    if kind == b"-":
        return _ErrorReply(text.decode("utf-8", "replace")), pos
    if kind == b":":
        return int(text), pos
    if kind == b"$":
        size = int(text)
        if size < 0:
            return None, pos
        if len(buf) < pos + size + 2:
            raise _Incomplete
        return bytes(buf[pos : pos + size]), pos + size + 2
    if kind == b"*":
        count = int(text)
        items = []
        for _ in range(max(0, count)):
            item, pos = _parse(buf, pos)
            items.append(item)
        return (None if count < 0 else items), pos
    raise redis.ConnectionError(f"unexpected reply from Redis (type byte {kind!r})")


def _encode(args: tuple[bytes | str | int | float, ...]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg if isinstance(arg, bytes) else str(arg).encode("utf-8")
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class _Connection(asyncio.Protocol):
    """One connection; calls wait for their replies in the order they were sent."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiting: deque[asyncio.Future[Any]] = deque()
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio's subclasses

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        pos = 0
        try:
            while pos < len(self.buffer):
                value, pos = _parse(self.buffer, pos)
                self._reply(value)
        except _Incomplete:
            pass
        except (redis.ConnectionError, ValueError) as exc:
            self._fail(exc if isinstance(exc, redis.ConnectionError) else redis.ConnectionError(str(exc)))
            return
        del self.buffer[:pos]

    def _reply(self, value: Any) -> None:
        if not self.waiting:  # a reply nobody asked for: the stream cannot be trusted
            raise redis.ConnectionError("Redis sent a reply that was not asked for")
        future = self.waiting.popleft()
        if not future.done():
            future.set_result(value)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._settle(redis.ConnectionError("the connection to Redis was closed"))

    def _settle(self, error: redis.RedisError) -> None:
        while self.waiting:
            future = self.waiting.popleft()
            if not future.done():
                future.set_exception(error)

    def _fail(self, error: redis.RedisError) -> None:
        self.close()
        self._settle(error)

    def close(self) -> None:
        """Close the connection, from any thread; a connection of a loop that has ended is only dropped."""
        self.closed = True
        if self.transport is None or self.loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self.transport.close()
        else:
            self.loop.call_soon_threadsafe(self.transport.close)

    async def call(self, timeout: float, *args: bytes | str | int | float) -> Any:
        if self.closed or self.transport is None:
            raise redis.ConnectionError("the connection to Redis was closed")
        if self.transport.is_closing():
            self.closed = True
            raise redis.ConnectionError("the connection to Redis was closed")
        future: asyncio.Future[Any] = self.loop.create_future()
        self.waiting.append(future)
        try:
            self.transport.write(_encode(args))
        except (RuntimeError, OSError) as exc:  # uvloop raises once its handle is closed
            self.waiting.remove(future)
            self.closed = True
            raise redis.ConnectionError(f"the connection to Redis was closed: {exc}") from None
        expiry = self.loop.call_later(timeout, self._expire, future)
        try:
            return await future
        finally:
            expiry.cancel()

    def _expire(self, future: asyncio.Future[Any]) -> None:
        if not future.done():
            # the connection's later replies can no longer be matched to their calls: drop it (the other
            # waiting calls fail as a dropped connection; the next call connects anew)
            future.set_exception(redis.TimeoutError("Redis did not answer in time"))
            # the other calls were sent and may yet run (a busy Redis): not retried, since a script must not
            # run twice (a rate-limit take, a lease report)
            self._fail(redis.TimeoutError("the connection to Redis was dropped after another call timed out"))


class Script:
    """A Lua script and the SHA-1 Redis knows it by."""

    __slots__ = ("sha", "text")

    def __init__(self, text: str) -> None:
        self.text = text.encode("utf-8")
        self.sha = hashlib.sha1(self.text).hexdigest().encode("ascii")  # Redis names scripts by SHA-1


_C = TypeVar("_C", bound=_Connection)


async def open_connection(loop: asyncio.AbstractEventLoop, opts: dict[str, Any], timeout: float,
                          factory: Callable[[asyncio.AbstractEventLoop], _C]) -> _C:
    """A connection made by ``factory`` to the server in ``opts`` (:func:`parse_url`), after ``AUTH`` and
    ``SELECT``; connecting and each step are bounded by ``timeout``; failures in redis-py's exception types."""
    try:
        if "path" in opts:
            opened = loop.create_unix_connection(lambda: factory(loop), str(opts["path"]))
        else:
            opened = loop.create_connection(lambda: factory(loop), str(opts.get("host") or "localhost"),
                                            int(opts.get("port") or 6379))
        _, conn = await asyncio.wait_for(opened, timeout)
    except TimeoutError:
        raise redis.TimeoutError("connecting to Redis timed out") from None
    except (OSError, ValueError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise redis.ConnectionError(f"cannot connect to Redis: {detail}") from None
    steps: list[tuple[bytes | str | int, ...]] = []
    if opts.get("password") is not None:
        user = opts.get("username")
        steps.append((b"AUTH", user, opts["password"]) if user else (b"AUTH", opts["password"]))
    if int(opts.get("db") or 0):
        steps.append((b"SELECT", int(opts["db"])))
    try:
        for reply in await asyncio.gather(*(conn.call(timeout, *step) for step in steps)):
            if isinstance(reply, _ErrorReply):
                refused = reply.message.upper().startswith(("WRONGPASS", "NOAUTH", "ERR AUTH", "ERR INVALID"))
                raise (redis.AuthenticationError if refused else redis.ResponseError)(reply.message)
    except BaseException:
        conn.close()
        raise
    return conn


class Subscriber(_Connection):
    """A connection in Pub/Sub mode: ``message`` pushes go to :attr:`on_message` (channel, payload), every other
    reply (``AUTH``, the ``subscribe`` confirmation, ``pong``) to the call waiting for it; :attr:`on_lost` is
    called once when the connection ends."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop)
        self.on_message: Callable[[bytes, bytes], None] = lambda channel, payload: None
        self.on_lost: Callable[[], None] = lambda: None

    def _reply(self, value: Any) -> None:
        if isinstance(value, list) and len(value) == 3 and value[0] == b"message":
            self.on_message(value[1], value[2])
        else:
            super()._reply(value)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self.on_lost()


class LeanRedis:
    """``EVALSHA`` of a script (one given at the start, or any :class:`Script`) and plain commands over a
    pipelined connection (see the module docstring)."""

    def __init__(self, url: str, script: str, *, timeout: float) -> None:
        self.options = parse_url(url)
        self.timeout = timeout
        self.script = Script(script)
        self._conn: _Connection | None = None
        self._connecting: asyncio.Task[_Connection] | None = None

    async def _connection(self) -> _Connection:
        """The loop's connection; while one is being made every caller waits for that same attempt, so a
        Redis that does not answer fails them all after one timeout, not one timeout each in turn."""
        loop = asyncio.get_running_loop()
        conn = self._conn
        if conn is not None and not conn.closed and conn.loop is loop:
            return conn
        pending = self._connecting
        if pending is None or pending.get_loop() is not loop:
            if conn is not None:
                conn.close()  # dropped, or of another event loop
                self._conn = None
            pending = loop.create_task(self._connect(loop))
            self._connecting = pending
            pending.add_done_callback(self._connected)
        return await asyncio.shield(pending)

    def _connected(self, task: asyncio.Task[_Connection]) -> None:
        if self._connecting is task:
            self._connecting = None
        if not task.cancelled() and task.exception() is None:
            self._conn = task.result()

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> _Connection:
        return await open_connection(loop, self.options, self.timeout, _Connection)

    async def evalsha(self, keys: list[str], args: list[str | int | float], script: Script | None = None) -> Any:
        """The reply of ``script`` (the client's own when None) for ``keys`` and ``args`` (bulk strings as bytes)."""
        lua = script or self.script

        async def send(conn: _Connection) -> Any:
            reply = await conn.call(self.timeout, b"EVALSHA", lua.sha, len(keys), *keys, *args)
            if isinstance(reply, _ErrorReply) and reply.message.startswith("NOSCRIPT"):
                reply = await conn.call(self.timeout, b"EVAL", lua.text, len(keys), *keys, *args)
            return reply

        return await self._retried(send)

    async def call(self, *args: bytes | str | int | float) -> Any:
        """One command's reply, on the same pipelined connection."""
        return await self._retried(lambda conn: conn.call(self.timeout, *args))

    async def _retried(self, send: Callable[[_Connection], Awaitable[Any]]) -> Any:
        for attempt in (1, 2):
            conn = await self._connection()
            try:
                reply = await send(conn)
            except redis.TimeoutError:
                raise
            except redis.ConnectionError:
                if attempt == 2:
                    raise
                continue  # a dropped connection (Redis restarted): once more, at once, on a new one
            if isinstance(reply, _ErrorReply):
                raise redis.ResponseError(reply.message)
            return reply
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
