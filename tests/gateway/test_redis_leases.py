"""Rate-limit leases (``hermes.toolgateway.storage.redis_lease``) against a real ``redis-server``: a busy token
spends tokens taken ahead instead of a round trip each, two processes sharing one bucket never let through
more than the bucket allows plus 0.1 s of its rate, unspent tokens go back, a token seen now and then takes
no lease, and a refusal is still Redis's answer."""

from __future__ import annotations

import asyncio
import secrets
import time

import redis

from fakes.pg_redis import RedisServer
from hermes.toolgateway.storage.redis_lease import LEASE_SECONDS, Leases
from hermes.toolgateway.storage.resp import LeanRedis


def leases(own_redis: RedisServer, rate: float, burst: int, prefix: str) -> Leases:
    return Leases(LeanRedis(own_redis.url, "return 1", timeout=5), prefix, rate, burst)


def bucket(own_redis: RedisServer, prefix: str, key: str) -> float:
    client = redis.Redis.from_url(own_redis.url)
    try:
        return float(client.hget(prefix + key, "tokens") or "nan")
    finally:
        client.close()


def test_two_processes_hammering_one_bucket_stay_within_it(own_redis: RedisServer) -> None:
    rate, burst = 1000.0, 200
    prefix = f"t{secrets.token_hex(4)}:"
    admitted: list[float] = []

    async def hammer(limiter: Leases, until: float) -> int:
        attempts = 0
        while time.monotonic() < until:
            attempts += 1
            if await limiter.acquire("alice") == 0.0:
                admitted.append(time.monotonic())
        return attempts

    async def main() -> tuple[list[int], float, float]:
        pair = [leases(own_redis, rate, burst, prefix), leases(own_redis, rate, burst, prefix)]
        start = time.monotonic()
        attempts = await asyncio.gather(*(hammer(one, start + 1.5) for one in pair))
        end = time.monotonic()
        for one in pair:
            await one.aclose()
            one.client.close()
        return list(attempts), start, end

    attempts, start, end = asyncio.run(main())
    # the bucket's own promise over the whole run: what it held, plus what it refilled meanwhile
    assert len(admitted) <= burst + rate * (end - start) + 1
    # over any stretch, at most the bucket's promise plus 0.1 s of the rate (leased tokens are spent within it)
    admitted.sort()
    window, first = 0.3, 0
    for last, at in enumerate(admitted):
        while admitted[first] < at - window:
            first += 1
        assert last - first + 1 <= burst + rate * (window + LEASE_SECONDS) + 1
    assert sum(attempts) > len(admitted) > rate  # the bucket was the limit: requests were refused


def test_a_busy_token_mostly_spends_leased_tokens(own_redis: RedisServer) -> None:
    prefix = f"t{secrets.token_hex(4)}:"

    async def paced(limiter: Leases, count: int) -> list[float]:
        waits = []
        for _ in range(count):
            waits.append(await limiter.acquire("erin"))
            await asyncio.sleep(0.002)  # two processes at most ~500 a second each: under the rate
        return waits

    async def main() -> tuple[list[list[float]], int, int]:
        pair = [leases(own_redis, 2000.0, 400, prefix), leases(own_redis, 2000.0, 400, prefix)]
        waits = await asyncio.gather(*(paced(one, 300) for one in pair))
        waited, trips = sum(one.waited for one in pair), sum(one.trips for one in pair)
        for one in pair:
            await one.aclose()
            one.client.close()
        return list(waits), waited, trips

    waits, waited, trips = asyncio.run(main())
    assert all(w == 0.0 for one in waits for w in one)  # nothing refused under the rate
    assert waited < 60, waited  # of 600 requests, few waited for Redis
    assert trips < 300, trips  # and the background leases and returns are fewer than the requests


def test_unspent_tokens_go_back_to_the_bucket(own_redis: RedisServer) -> None:
    prefix = f"t{secrets.token_hex(4)}:"

    async def main() -> tuple[int, float]:
        limiter = leases(own_redis, 0.001, 40, prefix)  # refills next to nothing during the test
        assert await limiter.acquire("bob") == 0.0  # exact: no lease for a first request
        assert await limiter.acquire("bob") == 0.0  # back at once: this one takes a lease
        leased = bucket(own_redis, prefix, "bob")
        await asyncio.sleep(LEASE_SECONDS * 4)  # the lease expires unspent and the sweeper puts it back
        trips = limiter.trips
        await limiter.aclose()
        limiter.client.close()
        return trips, leased

    trips, leased = asyncio.run(main())
    assert leased < 38 - 1  # a lease was taken beside the two requests' tokens (at most 40 / 4)
    assert 37.99 < bucket(own_redis, prefix, "bob") < 38.1  # ... and given back: as if only the two were taken
    assert trips == 3  # two requests and one return


def test_a_token_seen_now_and_then_takes_no_lease(own_redis: RedisServer) -> None:
    prefix = f"t{secrets.token_hex(4)}:"

    async def main() -> int:
        limiter = leases(own_redis, 0.001, 40, prefix)
        for _ in range(3):
            assert await limiter.acquire("carol") == 0.0
            assert 40 - bucket(own_redis, prefix, "carol") < 3.01  # only the requests' own tokens were taken
            await asyncio.sleep(LEASE_SECONDS * 1.5)
        waited = limiter.waited
        await limiter.aclose()
        limiter.client.close()
        return waited

    assert asyncio.run(main()) == 3
    assert 36.99 < bucket(own_redis, prefix, "carol") < 37.01


def test_a_refusal_is_redis_answer_with_its_wait(own_redis: RedisServer) -> None:
    prefix = f"t{secrets.token_hex(4)}:"

    async def main() -> list[float]:
        pair = [leases(own_redis, 0.01, 4, prefix), leases(own_redis, 0.01, 4, prefix)]
        waits = [await pair[i % 2].acquire("dave") for i in range(8)]
        for one in pair:
            await one.aclose()
            one.client.close()
        return waits

    waits = asyncio.run(main())
    # a bucket of 4 shared by both: leases never take more than half of what is left, so it is not split early
    assert waits[:4] == [0.0] * 4
    assert all(50 < w <= 100 for w in waits[4:]), waits  # about 1 / 0.01 s for the next token
