"""The gateway's keep-alive HTTP/1.1 client against a raw loopback server that answers exactly what each
test scripts: connection reuse, caps, gzip, timeouts, a server closing an idle connection, bad headers."""

from __future__ import annotations

import asyncio
import gzip
import socket
import time
from collections.abc import Awaitable, Callable

import httpx
import pytest

from hermes.errors import ResponseTooLarge
from hermes.net.h1client import H1Client
from hermes.net.http import RetryPolicy

#: reads one request head (and its Content-Length body) and writes an answer; returns False to close
Script = Callable[[bytes, asyncio.StreamWriter], Awaitable[bool]]


async def serve(script: Script) -> tuple[asyncio.Server, str, list[int]]:
    """A server on a free loopback port; ``counts[0]`` connections accepted, ``counts[1]`` requests."""
    counts = [0, 0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        counts[0] += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                counts[1] += 1
                if not await script(head + body, writer):
                    break
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}", counts


def answer(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    return f"HTTP/1.1 {status}\r\ncontent-length: {len(body)}\r\n{extra}\r\n".encode() + body


def test_keeps_the_connection_alive_and_sends_what_it_was_given() -> None:
    seen: list[bytes] = []

    async def echo(request: bytes, writer: asyncio.StreamWriter) -> bool:
        seen.append(request)
        writer.write(answer(b'{"ok":true}', extra="content-type: application/json; charset=utf-8\r\n"))
        return True

    async def scenario() -> None:
        server, url, counts = await serve(echo)
        client = H1Client(user_agent="hermes-test/1")
        try:
            for i in range(5):
                got = await client.request("POST", f"{url}/v2/search?x=1", max_bytes=1000, content=b'{"q":%d}' % i,
                                           headers={"authorization": "Bearer k", "content-type": "application/json"},
                                           params={"page": "2 3"})
                assert got.status == 200 and got.body == b'{"ok":true}' and got.charset == "utf-8"
                assert got.headers["content-type"].startswith("application/json")
            assert counts == [1, 5]  # one connection for all five
        finally:
            await client.aclose()
            server.close()

    asyncio.run(scenario())
    first = seen[0].decode()
    assert first.startswith("POST /v2/search?x=1&page=2+3 HTTP/1.1\r\n")
    assert "authorization: Bearer k\r\n" in first and "user-agent: hermes-test/1\r\n" in first
    assert "content-length: 7\r\n" in first and first.endswith('{"q":0}')


def test_caps_declared_and_streamed_bodies_and_reads_gzip() -> None:
    big = b"x" * 5000

    async def script(request: bytes, writer: asyncio.StreamWriter) -> bool:
        if b"/declared" in request:
            writer.write(answer(big))
        elif b"/chunked" in request:
            writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
            for _ in range(5):
                writer.write(b"3e8\r\n" + b"y" * 1000 + b"\r\n")
            writer.write(b"0\r\n\r\n")
        else:
            packed = gzip.compress(big)
            writer.write(answer(packed, extra="content-encoding: gzip\r\n"))
        return True

    async def scenario() -> None:
        server, url, _counts = await serve(script)
        client = H1Client()
        try:
            for path in ("/declared", "/chunked"):
                with pytest.raises(ResponseTooLarge):
                    await client.request("GET", url + path, max_bytes=4096)
            got = await client.request("GET", url + "/gzip", max_bytes=6000)
            assert got.body == big
            with pytest.raises(ResponseTooLarge):  # the cap applies to the decompressed bytes
                await client.request("GET", url + "/gzip", max_bytes=4096)
        finally:
            await client.aclose()
            server.close()

    asyncio.run(scenario())


def test_a_slow_answer_times_out_and_a_closed_port_is_a_connect_error() -> None:
    async def slow(request: bytes, writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(2)
        writer.write(answer(b"late"))
        return True

    async def scenario() -> None:
        server, url, _counts = await serve(slow)
        client = H1Client()
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
        try:
            with pytest.raises(httpx.ReadTimeout):
                await client.request("GET", url, max_bytes=100, timeout=0.2)
            with pytest.raises(httpx.ConnectError):
                await client.request("GET", closed, max_bytes=100, timeout=2)
            # retries and the deadline come from hermes.net.http: three tries, then the last error
            with pytest.raises(httpx.ConnectError):
                await client.send("GET", closed, max_bytes=100, retry=RetryPolicy(attempts=3, base_delay=0.01),
                                  deadline=time.monotonic() + 5)
        finally:
            await client.aclose()
            server.close()

    asyncio.run(scenario())


def test_tries_with_different_times_share_one_timer_and_each_ends_on_time() -> None:
    async def slow(request: bytes, writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(0.6 if b"/answered" in request else 30)
        writer.write(answer(b"late"))
        return True

    async def timed(client: H1Client, url: str, timeout: float) -> float | int:
        started = time.monotonic()
        try:
            return (await client.request("GET", url, max_bytes=100, timeout=timeout)).status
        except httpx.ReadTimeout:
            return time.monotonic() - started

    async def scenario() -> None:
        server, url, _counts = await serve(slow)
        client = H1Client()
        try:
            # a long try arms the timer first; a shorter one started after it must still end on its own time,
            # and the timer is armed again for the ones left after it fires
            results = await asyncio.gather(timed(client, url + "/answered", 5), timed(client, url + "/a", 0.9),
                                           timed(client, url + "/b", 0.25), timed(client, url + "/c", 0.5))
            assert results[0] == 200
            for got, wanted in zip(results[1:], (0.9, 0.25, 0.5), strict=True):
                assert isinstance(got, float) and wanted - 0.01 <= got < wanted + 0.25, (got, wanted)
            assert not client._due  # nothing is left watched
        finally:
            await client.aclose()
            server.close()

    asyncio.run(scenario())


def test_an_idle_connection_the_server_closed_is_replaced_once() -> None:
    async def once_then_close(request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(answer(b"ok"))
        await writer.drain()
        return False  # the server closes after every answer, without saying so

    async def scenario() -> None:
        server, url, counts = await serve(once_then_close)
        client = H1Client()
        try:
            for _ in range(3):
                assert (await client.request("POST", url, max_bytes=100, content=b"{}")).body == b"ok"
                await asyncio.sleep(0.05)
            assert counts == [3, 3]  # each request reached the server once, on a fresh connection
        finally:
            await client.aclose()
            server.close()

    asyncio.run(scenario())


def test_a_post_the_server_may_have_taken_is_never_sent_twice() -> None:
    seen: list[bytes] = []

    async def drop_the_second(request: bytes, writer: asyncio.StreamWriter) -> bool:
        seen.append(request.split(b" ", 1)[0])
        if len(seen) == 2:
            return False  # read the request, then close without an answer (it may have been acted on)
        writer.write(answer(b"ok"))
        return True

    async def scenario(method: str) -> list[int]:
        seen.clear()
        server, url, counts = await serve(drop_the_second)
        client = H1Client()
        try:
            assert (await client.request(method, url, max_bytes=100, content=b"{}")).body == b"ok"
            if method == "POST":
                with pytest.raises(httpx.RemoteProtocolError):
                    await client.request(method, url, max_bytes=100, content=b"{}")
            else:  # a GET is repeated on a new connection
                assert (await client.request(method, url, max_bytes=100)).body == b"ok"
            return counts
        finally:
            await client.aclose()
            server.close()

    assert asyncio.run(scenario("POST")) == [1, 2]  # the vendor saw the second POST once
    assert asyncio.run(scenario("GET")) == [2, 3]


def test_headers_that_would_break_the_framing_are_refused() -> None:
    async def never(request: bytes, writer: asyncio.StreamWriter) -> bool:
        raise AssertionError("nothing may be sent")

    async def scenario() -> None:
        server, url, counts = await serve(never)
        client = H1Client()
        try:
            for headers in ({"x-idempotency-key": "a\r\nx-admin: 1"}, {"bad:name": "1"}, {"x": "\x00"}):
                with pytest.raises(httpx.LocalProtocolError):
                    await client.request("POST", url, max_bytes=100, headers=headers, content=b"{}")
            with pytest.raises(httpx.UnsupportedProtocol):
                await client.request("GET", "ftp://127.0.0.1/x", max_bytes=100)
            assert counts[1] == 0
        finally:
            await client.aclose()
            server.close()

    asyncio.run(scenario())
