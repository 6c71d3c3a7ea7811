"""The one HTTP send primitive (``hermes.net.http``) against a real loopback server: retries with
``Retry-After`` in both forms, the streamed size cap, the deadline and the ``inspect`` hook."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from fakes.vendors import ServerThread
from hermes.errors import DeadlineExceeded, ResponseTooLarge
from hermes.net.http import HttpAnswer, RetryPolicy, backoff_delay, parse_retry_after, send_request

FAST = RetryPolicy(attempts=3, base_delay=0.0, max_delay=0.0, statuses=frozenset({429, 503}))
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def app() -> Starlette:
    hits: dict[str, int] = {}

    def count(request: Request) -> int:
        key = request.url.path + request.url.query
        hits[key] = hits.get(key, 0) + 1
        return hits[key]

    async def busy(request: Request) -> Response:
        past = format_datetime(datetime.now(UTC) - timedelta(hours=1), usegmt=True)
        if count(request) < 3:
            return PlainTextResponse("busy", 503, {"retry-after": past})
        return PlainTextResponse("ok")

    async def limited(request: Request) -> Response:
        count(request)
        return PlainTextResponse("later", 429, {"retry-after": "120"})

    async def big(request: Request) -> Response:
        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(50):
                yield b"x" * 100

        return StreamingResponse(chunks(), media_type="text/plain")

    async def moved(request: Request) -> Response:
        return PlainTextResponse("y" * 5000, 302, {"location": "/elsewhere"})

    async def hits_of(request: Request) -> Response:
        return PlainTextResponse(str(hits.get(request.query_params["path"], 0)))

    return Starlette(routes=[Route("/busy", busy), Route("/limited", limited), Route("/big", big),
                             Route("/moved", moved), Route("/hits", hits_of)])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with ServerThread(app()) as srv:
        yield srv.url


def send(url: str, **kwargs: Any) -> HttpAnswer:
    async def main() -> HttpAnswer:
        async with httpx.AsyncClient() as client:
            return await send_request(client, "GET", url, **{"max_bytes": 1 << 20, "timeout": 10.0, **kwargs})

    return asyncio.run(main())


def test_retry_after_in_seconds_and_as_an_http_date() -> None:
    assert parse_retry_after("0") == 0.0 and parse_retry_after(" 2.5 ") == 2.5
    soon = format_datetime(NOW + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(soon, now=NOW) == 30.0
    assert parse_retry_after(format_datetime(NOW - timedelta(days=1), usegmt=True), now=NOW) == 0.0
    for bad in (None, "", "  ", "-1", "nan", "inf", "soon", "Mon, 99 Foo 2026"):
        assert parse_retry_after(bad, now=NOW) is None, bad


def test_backoff_grows_caps_and_takes_the_servers_wait() -> None:
    assert backoff_delay(1, 3.0, base_delay=1.0, max_delay=2.0) == 2.0
    assert backoff_delay(1, 3.0, base_delay=1.0, max_delay=2.0, max_retry_after=60.0) == 3.0
    for attempt, top in ((1, 1.0), (2, 2.0), (3, 4.0), (9, 5.0)):
        assert top / 2 <= backoff_delay(attempt, None, base_delay=1.0, max_delay=5.0) <= top


def test_retryable_statuses_are_tried_again_until_an_answer(server: str) -> None:
    answer = send(f"{server}/busy", retry=FAST)
    assert answer.ok and answer.body == b"ok" and answer.attempts == 3
    assert send(f"{server}/limited", retry=FAST, timeout=10.0, max_bytes=100).status == 429


def test_a_retry_after_past_the_deadline_ends_the_retries(server: str) -> None:
    policy = RetryPolicy(attempts=5, statuses=frozenset({429}), max_retry_after=1000.0)
    started = time.monotonic()
    answer = send(f"{server}/limited?d", retry=policy, deadline=time.monotonic() + 5)
    assert answer.status == 429 and answer.attempts == 1 and answer.retry_after == 120.0
    assert time.monotonic() - started < 4
    with pytest.raises(DeadlineExceeded):
        send(f"{server}/limited?gone", deadline=time.monotonic() - 1)
    assert send(f"{server}/hits?path=/limitedgone").body == b"0"


def test_the_streamed_body_stops_at_the_cap(server: str) -> None:
    assert len(send(f"{server}/big", max_bytes=5000).body) == 5000
    with pytest.raises(ResponseTooLarge) as error:
        send(f"{server}/big", max_bytes=4999)
    assert error.value.limit == 4999


def test_inspect_sees_the_head_and_may_leave_the_body_unread(server: str) -> None:
    seen: list[int] = []

    def head(response: httpx.Response) -> bool:
        seen.append(response.status_code)
        return response.status_code != 302

    answer = send(f"{server}/moved", max_bytes=10, follow_redirects=False, inspect=head)
    assert seen == [302] and answer.status == 302 and answer.body == b""
    assert answer.headers["location"] == "/elsewhere"
