"""The revocation version pushed to serving processes (``hermes.toolgateway.storage.redis_watch``), against a
real ``redis-server``: a change returns once every subscribed process applied it, so requests need no Redis
round trip for the version; a process that does not acknowledge holds a change at most ``ACK_WAIT``, and a
pattern subscriber is not waited for; a serving process making a change tells the others from a worker
thread, its loop free to acknowledge; while the subscription is down requests read the version themselves."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
import redis

from fakes.pg_redis import RedisServer
from hermes.toolgateway.config import load_config
from hermes.toolgateway.services import Gateway
from hermes.toolgateway.storage.redis_limiter import RedisRateLimiter
from hermes.toolgateway.storage.redis_watch import ACK_WAIT, AUTH_VERSION_KEY, VersionWatch, channel_for
from hermes.toolgateway.storage.resp import LeanRedis


class Serving:
    """A limiter started on an event loop of its own thread, as in a serving gateway process."""

    def __init__(self, url: str, rate: float = 0.0, burst: int = 0) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.limiter = RedisRateLimiter(url, rate, burst)
        self.subscriptions = 0  # the cache would be forgotten this many times (Gateway: Authenticator.forget_rows)
        self.run(self.limiter.start(self._subscribed))
        self.wait_live()

    def run(self, work: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(10)

    def _subscribed(self) -> None:
        self.subscriptions += 1

    def wait_live(self, live: bool = True) -> None:
        deadline = time.monotonic() + 5
        while not (self.limiter.watch is not None and self.limiter.watch.live is live):
            assert time.monotonic() < deadline, f"the watch did not become {'live' if live else 'down'}"
            time.sleep(0.01)

    @property
    def version(self) -> int:
        assert self.limiter.watch is not None
        return self.limiter.watch.version

    def close(self) -> None:
        self.run(self.limiter.aclose())
        self.limiter.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def evalsha_calls(client: redis.Redis) -> int:
    return int(client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


def stored_version(client: redis.Redis) -> int:
    return int(client.get(AUTH_VERSION_KEY) or 0)


def test_a_change_returns_once_every_watching_process_applied_it(own_redis: RedisServer) -> None:
    plain = redis.Redis.from_url(own_redis.url)
    monitor = plain.pubsub()
    monitor.psubscribe("*")  # a monitoring client receives every message, and acknowledges none
    assert monitor.get_message(timeout=5)["type"] == "psubscribe"
    cli = RedisRateLimiter(own_redis.url, 0.0, 0)  # the CLI: no subscription of its own
    a, b = Serving(own_redis.url), Serving(own_redis.url)
    elsewhere = Serving(own_redis.url.rsplit("/", 1)[0] + "/1")  # another deployment, database 1 of the server
    try:
        for _ in range(5):
            started = time.monotonic()
            cli.bump_auth_version()
            assert time.monotonic() - started < ACK_WAIT / 2
            assert a.version == b.version == stored_version(plain)  # applied before the change returned
        # a request takes the version from the watch: no round trip (the limiter is off)
        before = evalsha_calls(plain)
        assert a.run(a.limiter.acquire_and_version("k")) == (0.0, stored_version(plain))
        assert evalsha_calls(plain) == before
        assert elsewhere.version == 0  # neither told of database 0's changes nor waited for
    finally:
        a.close()
        b.close()
        elsewhere.close()
        cli.close()
        monitor.close()
        plain.close()


def test_a_subscriber_that_does_not_acknowledge_holds_a_change_at_most_ack_wait(
        own_redis: RedisServer, caplog: pytest.LogCaptureFixture) -> None:
    plain = redis.Redis.from_url(own_redis.url)
    silent = plain.pubsub()
    silent.subscribe(channel_for(own_redis.url))  # receives, never acknowledges (a process that stopped)
    assert silent.get_message(timeout=5)["type"] == "subscribe"
    cli = RedisRateLimiter(own_redis.url, 0.0, 0)
    a = Serving(own_redis.url)
    try:
        with caplog.at_level(logging.WARNING, logger="hermes.toolgateway"):
            started = time.monotonic()
            cli.bump_auth_version()
            took = time.monotonic() - started
        assert ACK_WAIT <= took < ACK_WAIT + 1
        assert a.version == stored_version(plain)  # the live one applied it all the same
        assert any("1 of 2 gateway process(es) did not acknowledge" in r.getMessage() for r in caplog.records)
        assert all(own_redis.password not in r.getMessage() for r in caplog.records)
    finally:
        a.close()
        cli.close()
        silent.close()
        plain.close()


def test_a_serving_process_making_a_change_tells_the_others_without_blocking_its_loop(
        own_redis: RedisServer, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A portal route revoking a token runs on the event loop: the change is told from a worker thread (the
    loop goes on, and acknowledges for this process), and the route's answer waits for every process."""
    plain = redis.Redis.from_url(own_redis.url)
    config = tmp_path / "gateway.toml"
    config.write_text(f'redis_url = "{own_redis.url}"\n')
    gw = Gateway(load_config(config, home=tmp_path / "home"))
    a = Serving(own_redis.url)  # another gateway process
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def run(work: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(work, loop).result(10)

    async def route(token: str) -> tuple[float, float, int]:
        started = time.monotonic()
        gw.accounts.revoke(token)  # synchronous, on the loop, as the portal's routes do
        blocked = time.monotonic() - started
        await gw.changes_applied()
        return blocked, time.monotonic() - started, a.version

    try:
        run(gw.start())
        limiter = gw.limiter
        assert isinstance(limiter, RedisRateLimiter)
        deadline = time.monotonic() + 5
        while not (limiter.watch is not None and limiter.watch.live):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        user = gw.accounts.add_user("rae", "paid")
        token = gw.accounts.issue_access_token(user, ttl=600).token
        with caplog.at_level(logging.WARNING, logger="hermes.toolgateway"):
            blocked, took, seen = run(route(token))
        assert blocked < ACK_WAIT / 4 and took < ACK_WAIT / 2  # both processes acknowledged, this one included
        assert seen == stored_version(plain) == limiter.watch.version  # the other one had it before the answer
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    finally:
        run(gw.close())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
        a.close()
        plain.close()


def test_while_the_subscription_is_down_requests_read_the_version_themselves(own_redis: RedisServer) -> None:
    plain = redis.Redis.from_url(own_redis.url)
    cli = RedisRateLimiter(own_redis.url, 0.0, 0)
    a = Serving(own_redis.url, rate=100.0, burst=100)
    try:
        assert plain.client_kill_filter(_type="pubsub") >= 1
        a.wait_live(False)
        cli.bump_auth_version()  # nobody subscribed: returns at once, nobody told
        before = evalsha_calls(plain)
        wait, version = a.run(a.limiter.acquire_and_version("k"))
        assert (wait, version) == (0.0, stored_version(plain))  # read in the request's own round trip
        assert evalsha_calls(plain) == before + 1
        a.wait_live(True)  # subscribed again (every half second), and the version read after subscribing
        assert a.version == stored_version(plain)
        assert a.subscriptions == 2  # cached rows forgotten again: Redis may have restarted without its data
        cli.bump_auth_version()
        assert a.version == stored_version(plain)
    finally:
        a.close()
        cli.close()
        plain.close()


def test_a_read_of_the_version_never_takes_the_watch_back_behind_a_change(own_redis: RedisServer) -> None:
    """The heartbeat's read of the version may be answered before a change and arrive after its message: it
    must not take the process back to the old version once the change returned (here read every millisecond,
    so that the two cross often)."""
    plain = redis.Redis.from_url(own_redis.url)
    cli = RedisRateLimiter(own_redis.url, 0.0, 0)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    lean = LeanRedis(own_redis.url, "return 1", timeout=5)
    watch = VersionWatch(own_redis.url, lean, 5, heartbeat=0.001)
    loop.call_soon_threadsafe(watch.start)
    try:
        deadline = time.monotonic() + 5
        while not watch.live:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        behind = 0
        for _ in range(500):
            cli.bump_auth_version()
            behind += watch.version < stored_version(plain)
        assert behind == 0
    finally:
        async def stop() -> None:
            await watch.aclose()
            lean.close()
            await asyncio.sleep(0.01)  # the transport closes on the loop's next turns

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
        cli.close()
        plain.close()
