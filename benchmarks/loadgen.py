"""A lean open-loop HTTP/1.1 load generator for the load benchmarks (not a general HTTP client).

httpx costs about 1 ms of CPU per request on this 2-core machine, so a load test driven by it measures
its own client: at 250 requests/s the client held a core. This one keeps a pool of keep-alive
connections (:class:`Conn`, an ``asyncio.Protocol``), sends requests whose bytes were built once, and
reads only the status line, ``Content-Length`` or a chunked body, and ``Connection: close``. On
uvloop (when installed) a request costs it a few tens of microseconds.

Open loop: request *i* is due at ``i / rate`` seconds; every tick sends all that are due, whether or
not earlier ones were answered, and a request's latency counts from the moment it was due, so a
client or server that falls behind shows in the figures instead of slowing the schedule down.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Result:
    due: float            #: seconds after the start when the request was due
    outcome: int | str    #: the HTTP status, or why no answer came (``reset``, ``refused``)
    latency_ms: float     #: from due to the last byte of the answer
    kind: int             #: which of the caller's requests (index into ``requests``)


class Conn(asyncio.Protocol):
    """One keep-alive connection; one request at a time."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[tuple[int, bool]] | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio.Transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionResetError("the connection closed before the answer"))

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.waiter is not None and not self.waiter.done():
            parsed = _parse(self.buf)
            if parsed is not None:
                status, close, used = parsed
                del self.buf[:used]
                self.waiter.set_result((status, close))

    async def request(self, data: bytes) -> int:
        if self.transport is None or self.closed:
            raise ConnectionResetError("the connection is closed")
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        status, close = await self.waiter
        if close:
            self.transport.close()
            self.closed = True
        return status


def _parse(buf: bytearray) -> tuple[int, bool, int] | None:
    """(status, server closes, bytes used) of one whole response at the start of ``buf``, else None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buf[:end]).lower()
    status = int(head[9:12])
    close = b"\r\nconnection: close" in head
    at = head.find(b"\r\ncontent-length:")
    if at >= 0:
        stop = head.find(b"\r\n", at + 2)
        length = int(head[at + 17:stop if stop >= 0 else len(head)])
        used = end + 4 + length
        return (status, close, used) if len(buf) >= used else None
    if b"\r\ntransfer-encoding: chunked" not in head:
        return status, close, end + 4  # no body (204, 304) in what these servers send
    pos = end + 4
    while True:  # chunks: size CRLF data CRLF ... 0 CRLF CRLF
        line_end = buf.find(b"\r\n", pos)
        if line_end < 0:
            return None
        size = int(bytes(buf[pos:line_end]).split(b";")[0], 16)
        pos = line_end + 2 + size + 2
        if len(buf) < pos:
            return None
        if size == 0:
            return status, close, pos


class Pool:
    """Idle connections to one address, opened on demand up to ``limit``."""

    def __init__(self, host: str, port: int, limit: int) -> None:
        self.host, self.port, self.limit = host, port, limit
        self.idle: list[Conn] = []
        self.open = 0
        self._freed = asyncio.Condition()

    async def take(self) -> Conn:
        while True:
            while self.idle:
                conn = self.idle.pop()
                if not conn.closed:
                    return conn
                self.open -= 1
            if self.open < self.limit:
                self.open += 1
                try:
                    _, conn = await asyncio.get_running_loop().create_connection(Conn, self.host, self.port)
                except OSError:
                    self.open -= 1
                    raise
                return conn
            async with self._freed:
                await self._freed.wait()

    async def give(self, conn: Conn) -> None:
        if conn.closed:
            self.open -= 1
        else:
            self.idle.append(conn)
        async with self._freed:
            self._freed.notify()


def request_bytes(method: str, path: str, host: str, body: bytes, headers: dict[str, str]) -> bytes:
    """One HTTP/1.1 request, built once and sent many times."""
    lines = [f"{method} {path} HTTP/1.1", f"host: {host}", f"content-length: {len(body)}",
             *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def drive(host: str, port: int, requests: list[bytes], rate: float, duration: float, *,
                connections: int = 256, at: Callable[[float], None] | None = None) -> list[Result]:
    """Send ``rate * duration`` requests, request *i* being ``requests[i % len(requests)]``; ``at(t)`` is
    called once a second with the elapsed time (the caller's own events, a kill say)."""
    pool = Pool(host, port, connections)
    results: list[Result] = []
    total = int(rate * duration)
    start = time.perf_counter()

    async def one(i: int, due: float) -> None:
        kind = i % len(requests)
        conn: Conn | None = None
        try:
            conn = await pool.take()
            outcome: int | str = await conn.request(requests[kind])
        except ConnectionRefusedError:
            outcome = "refused"
        except OSError:
            outcome = "reset"
        except Exception as exc:  # a malformed answer is an outcome to count, not a crash
            outcome = type(exc).__name__
        finally:
            if conn is not None:
                await pool.give(conn)
        results.append(Result(due, outcome, (time.perf_counter() - start - due) * 1000, kind))

    tasks: set[asyncio.Task[None]] = set()
    sent, second = 0, 0
    while sent < total:
        now = time.perf_counter() - start
        while sent < total and sent / rate <= now:
            task = asyncio.create_task(one(sent, sent / rate))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            sent += 1
        if at is not None and now >= second:
            at(now)
            second += 1
        await asyncio.sleep(max(0.0, min(sent / rate - (time.perf_counter() - start), 0.01)))
    while tasks:
        await asyncio.gather(*list(tasks))
    for conn in pool.idle:
        if conn.transport is not None:
            conn.transport.close()
    return results


def run(coro_factory: Callable[[], object]) -> object:
    """Run on uvloop when it is installed (what the gateway itself runs on), else asyncio's loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro_factory())  # type: ignore[arg-type]
    return uvloop.run(coro_factory())  # type: ignore[arg-type]
