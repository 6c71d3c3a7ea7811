"""The lean Redis client of the relay hot path (``hermes.toolgateway.storage.resp``), against a real
``redis-server``: pipelined replies reach the calls that sent them, AUTH/SELECT, a script Redis forgot,
a restart, a wrong password and a Redis that never answers."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
import redis

from fakes.pg_redis import RedisServer
from gateway.test_tool_origin_limits import SilentServer
from hermes.toolgateway.storage.resp import LeanRedis, lean_url_supported

COUNTER = "return {redis.call('INCR', KEYS[1]), ARGV[1]}"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_concurrent_calls_each_get_their_own_reply(redis_server: RedisServer) -> None:
    client = LeanRedis(redis_server.url, COUNTER, timeout=5)

    async def main() -> list[Any]:
        try:
            return list(await asyncio.gather(*(client.evalsha(["rs:pipelined"], [f"call-{i}"]) for i in range(300))))
        finally:
            client.close()

    replies = run(main())
    assert [r[1] for r in replies] == [f"call-{i}".encode() for i in range(300)]  # each its own ARGV back
    assert sorted(r[0] for r in replies) == list(range(1, 301))  # 300 INCRs, one reply each


def test_select_and_a_script_redis_forgot(redis_server: RedisServer) -> None:
    url = redis_server.url.rsplit("/", 1)[0] + "/3"
    client = LeanRedis(url, COUNTER, timeout=5)
    sync = redis.Redis.from_url(url)

    async def main() -> list[Any]:
        try:
            first = await client.evalsha(["rs:db3"], ["a"])
            sync.script_flush()  # as after a restart: EVALSHA answers NOSCRIPT, the client sends the script once
            return [first, await client.evalsha(["rs:db3"], ["b"]), await client.evalsha(["rs:db3"], ["c"])]
        finally:
            client.close()

    try:
        assert [r[0] for r in run(main())] == [1, 2, 3]
        assert sync.get("rs:db3") == b"3"  # the key is in database 3, not 0
        assert redis.Redis.from_url(redis_server.url).get("rs:db3") is None
    finally:
        sync.close()


def test_a_restarted_redis_is_reconnected_at_once(redis_server: RedisServer) -> None:
    client = LeanRedis(redis_server.url, COUNTER, timeout=5)

    async def main() -> tuple[Any, Any]:
        try:
            first = await client.evalsha(["rs:restart"], ["x"])
            redis_server.stop()
            await asyncio.sleep(0.2)
            with pytest.raises(redis.ConnectionError):
                await client.evalsha(["rs:restart"], ["x"])  # down: refused, a RedisError (the gateway's 503)
            redis_server.start()
            return first, await client.evalsha(["rs:restart"], ["x"])
        finally:
            client.close()

    first, again = run(main())
    assert first[0] == 1 and again[0] == 1  # a fresh Redis: the counter starts again


def test_a_wrong_password_is_an_authentication_error(redis_server: RedisServer) -> None:
    async def main() -> None:
        wrong = LeanRedis(redis_server.url.replace(redis_server.password, "not-the-password"), COUNTER, timeout=5)
        with pytest.raises(redis.AuthenticationError):
            await wrong.evalsha(["rs:auth"], ["x"])
        nopass = LeanRedis(f"redis://127.0.0.1:{redis_server.port}/0", COUNTER, timeout=5)
        try:
            with pytest.raises(redis.ResponseError, match="NOAUTH"):
                await nopass.evalsha(["rs:auth"], ["x"])
        finally:
            nopass.close()

    run(main())


def test_a_silent_redis_times_out_once_and_is_not_retried() -> None:
    silent = SilentServer()
    client = LeanRedis(f"redis://127.0.0.1:{silent.port}/0", COUNTER, timeout=0.3)
    async def main() -> None:
        try:
            await client.evalsha(["rs:silent"], ["x"])
        finally:
            client.close()

    try:
        started = time.monotonic()
        with pytest.raises(redis.TimeoutError):
            run(main())
        took = time.monotonic() - started
        assert 0.25 < took < 1.5, took  # one timeout, no retry
        assert len(silent.accepted) == 1
    finally:
        silent.close()


def test_callers_waiting_for_one_connection_fail_together() -> None:
    """While a connection is being made (here: AUTH to a Redis that never answers) the other calls wait for
    that attempt, so they all fail after one timeout instead of one timeout each in turn."""
    silent = SilentServer()
    client = LeanRedis(f"redis://:pw@127.0.0.1:{silent.port}/0", COUNTER, timeout=0.3)

    async def main() -> list[Any]:
        try:
            return list(await asyncio.gather(*(client.evalsha(["rs:many"], ["x"]) for _ in range(6)),
                                             return_exceptions=True))
        finally:
            client.close()

    try:
        started = time.monotonic()
        outcomes = run(main())
        took = time.monotonic() - started
        assert all(isinstance(o, redis.TimeoutError) for o in outcomes), outcomes
        assert took < 1.2, took  # one timeout for all six (it was 6 × 0.3 s, one connection each)
        assert len(silent.accepted) == 1
    finally:
        silent.close()


def test_which_urls_the_lean_client_takes() -> None:
    assert lean_url_supported("redis://:pw@127.0.0.1:6379/0")
    assert lean_url_supported("redis://user:pw@redis.internal:6380/2")
    assert lean_url_supported("unix:///run/redis.sock?db=1")
    assert not lean_url_supported("rediss://redis.internal:6380/0")  # TLS: redis.asyncio
    assert not lean_url_supported("redis://127.0.0.1:6379/0?socket_keepalive=true")  # options: redis.asyncio
    assert not lean_url_supported("http://127.0.0.1/")
    assert not lean_url_supported("redis://127.0.0.1/0?path=/tmp/x.sock")  # redis-py would read it as a socket
    assert not lean_url_supported("redis://127.0.0.1/0?port=abc")


def test_pipelined_calls_on_uvloop(redis_server: RedisServer) -> None:
    """The gateway serves on uvloop (uvicorn's default when installed), whose transports are its own."""
    uvloop = pytest.importorskip("uvloop")
    client = LeanRedis(redis_server.url, COUNTER, timeout=5)

    async def main() -> list[Any]:
        try:
            return list(await asyncio.gather(*(client.evalsha(["rs:uvloop"], [str(i)]) for i in range(100))))
        finally:
            client.close()

    replies = uvloop.run(main())
    assert [r[1] for r in replies] == [str(i).encode() for i in range(100)]


def test_calls_behind_a_timed_out_one_are_not_sent_again(redis_server: RedisServer) -> None:
    """A busy Redis (here a slow script of another client) answers no one in time: every waiting call fails as a
    timeout, and none is sent again on a new connection — Redis runs each once when it is free."""
    key = f"rs:busy:{time.monotonic_ns()}"
    busy = redis.Redis.from_url(redis_server.url)
    slow = threading.Thread(target=busy.eval, args=("local i = 0 while i < 100000000 do i = i + 1 end", 0))

    async def main() -> list[object]:
        client = LeanRedis(redis_server.url, COUNTER, timeout=0.3)
        await client.evalsha([key], ["warm"])  # connected and the script loaded: 1
        slow.start()
        await asyncio.sleep(0.2)  # the script runs a second or more
        outcomes = await asyncio.gather(*(client.evalsha([key], [str(i)]) for i in range(3)), return_exceptions=True)
        client.close()
        return list(outcomes)

    try:
        outcomes = run(main())
        slow.join(30)
        assert all(isinstance(o, redis.TimeoutError) for o in outcomes), outcomes
        assert int(busy.get(key) or 0) == 4  # the first call and the three, each once
    finally:
        busy.close()
