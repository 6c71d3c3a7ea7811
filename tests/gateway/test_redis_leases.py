"""Rate-limit leases (``hermes.toolgateway.storage.redis_lease``) against a real ``redis-server``: a busy token
spends tokens taken ahead instead of a round trip each, two processes sharing one bucket never let through
more than the bucket allows plus 0.1 s of its rate, unspent tokens go back, a token seen now and then takes
no lease, and a refusal is still Redis's answer."""

from __future__ import annotations

import asyncio
import random
import secrets
import time

import redis

from fakes.pg_redis import RedisServer
from hermes.toolgateway.storage.redis_lease import LEASE_SCRIPT, LEASE_SECONDS, SLOT_SECONDS, Leases
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
    # over any stretch, at most the bucket's promise (what it lends stays counted until it is reported back)
    admitted.sort()
    window, first = 0.3, 0
    for last, at in enumerate(admitted):
        while admitted[first] < at - window:
            first += 1
        assert last - first + 1 <= burst + rate * window + 1
    assert sum(attempts) > len(admitted) > rate  # the bucket was the limit: requests were refused


#: the bucket refilled to now, without changing it: min(burst - lent in the live slots, tokens + elapsed * rate)
READ_BUCKET = """
local s = redis.call('HMGET', KEYS[1], 'tokens', 'ts', 's1', 'l1', 's0', 'l0')
local c = redis.call('TIME')
local now = tonumber(c[1]) + tonumber(c[2]) / 1000000
local slot = math.floor(now / tonumber(ARGV[3]))
local tokens, last = tonumber(s[1]), tonumber(s[2])
if tokens == nil then return ARGV[2] end
local lent = 0
if (tonumber(s[3]) or -1) >= slot - 1 then lent = lent + tonumber(s[4]) end
if (tonumber(s[5]) or -1) >= slot - 1 then lent = lent + tonumber(s[6]) end
return string.format('%.6f', math.min(tonumber(ARGV[2]) - lent, tokens + math.max(0, now - last) * tonumber(ARGV[1])))
"""


def test_what_the_bucket_holds_and_what_it_lent_never_exceed_its_burst(own_redis: RedisServer) -> None:
    """Sixteen processes lease in bursts (two quick requests: a lease; more until the next is asked for; then a
    pause of 0.2 s, so what is left goes back while the others lease), the bucket refilling meanwhile: at every
    moment its tokens plus the tokens out on lease stay within ``burst`` — so no stretch of time lets through
    more than the bucket allows, whatever the number of processes. (Put back without the bucket counting what
    it lent, the returns pushed this sum about 19% over ``burst``.)"""
    rate, burst = 5000.0, 10000
    prefix = f"t{secrets.token_hex(4)}:"
    plain = redis.Redis.from_url(own_redis.url)
    read = plain.register_script(READ_BUCKET)

    async def main() -> float:
        group = [leases(own_redis, rate, burst, prefix) for _ in range(16)]
        stop = asyncio.Event()

        async def bursts(one: Leases, offset: float) -> None:
            await asyncio.sleep(offset)
            while not stop.is_set():
                await one.acquire("fay")
                await one.acquire("fay")  # back at once: a large pace, a large lease
                held = one._tokens["fay"]
                for _ in range(300):  # spend until the next lease is asked for, and leave it all unspent
                    if held.refilling or held.total < max(1.0, held.want / 2):
                        break
                    await one.acquire("fay")
                await asyncio.sleep(0.2)

        tasks = [asyncio.create_task(bursts(one, random.random() * 0.2)) for one in group]
        most = 0.0
        until = time.monotonic() + 3
        while time.monotonic() < until:
            await asyncio.sleep(0.002)
            held = sum(one._tokens["fay"].total for one in group if "fay" in one._tokens)
            most = max(most, float(read(keys=[prefix + "fay"], args=[rate, burst, SLOT_SECONDS])) + held)
        stop.set()
        await asyncio.gather(*tasks)
        assert sum(one.trips - one.waited for one in group) > 50  # leases were taken and reported back
        for one in group:
            await one.aclose()
            one.client.close()
        return most

    try:
        assert asyncio.run(main()) <= burst + 1e-6
    finally:
        plain.close()


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


def test_tokens_lent_to_a_process_that_never_reports_are_counted_for_a_second_at_most(
        own_redis: RedisServer) -> None:
    """Leases whose holder never reports them (it died; the reply of a trip Redis ran never arrived) stop
    counting once their slot is old — even while the token keeps taking leases of its own: a client under the
    rate gets every request again."""
    prefix = f"t{secrets.token_hex(4)}:"
    plain = redis.Redis.from_url(own_redis.url)
    lease = plain.register_script(LEASE_SCRIPT.text.decode())
    for _ in range(3):  # lent, and never reported back
        lease(keys=[prefix + "gus"], args=["10.0", 20, "0.0", 5])

    async def main() -> list[int]:
        limiter = leases(own_redis, 10.0, 20, prefix)
        admitted = []
        for _ in range(3):  # 15 requests back to back every 1.9 s: under the rate of 10 a second
            await asyncio.sleep(1.9)
            admitted.append(sum([await limiter.acquire("gus") == 0.0 for _ in range(15)]))
        await limiter.aclose()
        limiter.client.close()
        return admitted

    try:
        assert asyncio.run(main()) == [15, 15, 15]
    finally:
        plain.close()
