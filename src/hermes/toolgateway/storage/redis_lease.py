"""Rate-limit tokens taken from the shared Redis bucket a little ahead of use (leases).

With the revocation version pushed to every process (:mod:`.redis_watch`), the rate limit is the only
thing a relayed request still needs Redis for. A token that sends requests back to back does not need a
round trip for each: when one of its requests goes to Redis within :data:`LEASE_SECONDS` of the last,
the script takes a few tokens more than the request costs and this process spends them on that token's
next requests without asking; while they last, another lease is taken in the background before they run
out. How many: twice the last lease, at most ``burst / 4`` (and :data:`MAX_LEASE`), never more than half
of what the bucket holds after the request's own cost — so a small bucket is never emptied into one
process. A token that comes back only now and then takes no lease at all: exact, one round trip each.

What the bucket still promises, whatever the number of processes:

* a leased token is spent within :data:`LEASE_SECONDS` of leaving the bucket, or not at all — and then
  it is put back (capped at ``burst``, which leaves the bucket exactly as if it had never been taken).
  Over any stretch of time the requests let through are therefore at most what the bucket itself allows
  plus ``rate × LEASE_SECONDS`` (0.1 s worth of the rate): at the default 10 per second, one request;
* a refused request is still decided by Redis (the answer and its ``Retry-After`` are the script's);
  a request can be refused while another process holds unspent leased tokens of the same bucket, for
  at most :data:`LEASE_SECONDS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Coroutine
from typing import Any

import redis

from hermes.toolgateway.storage.resp import LeanRedis, Script

#: how long leased tokens may wait to be spent (then they go back to the bucket)
LEASE_SECONDS = 0.1
#: the largest lease, in tokens
MAX_LEASE = 256
#: a lease is this share of what the key spent in :data:`LEASE_SECONDS` at its recent pace; a new one is taken
#: when the newest is half way to its end (or half spent), so about 1.5 times the pace is leased and the rest
#: goes back
LEASE_FILL = 0.75
#: a key not seen for this long may be forgotten (longer than a round trip may take: none is in flight)
IDLE_SECONDS = 1.0
#: keys kept in memory before the idle ones are forgotten
MAX_KEYS = 10_000

#: the bucket (the same one :data:`.redis_limiter.TOKEN_BUCKET` keeps) refilled to now; ``tokens`` and ``now``
REFILL = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local last = tonumber(state[2])
if tokens == nil or last == nil then
  tokens = burst
  last = now
end
if now > last then
  tokens = math.min(burst, tokens + (now - last) * rate)
end
"""

#: writes the bucket back; it expires once it would have refilled completely
STORE = """
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', string.format('%.6f', now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
"""

#: KEYS[1] the bucket; ARGV rate, burst, cost, want. Takes ``cost`` and up to ``want`` more (never more than half
#: of what is left); a negative cost puts tokens back. Returns {seconds to wait ("0" when taken), tokens leased}.
LEASE = REFILL + """
local cost = tonumber(ARGV[3])
local wait = 0
local extra = 0
if tokens >= cost then
  extra = math.max(0, math.min(tonumber(ARGV[4]), math.floor((tokens - cost) / 2)))
  tokens = math.min(burst, tokens - cost - extra)
else
  wait = (cost - tokens) / rate
end
""" + STORE + """
return {string.format('%.17g', wait), extra}
"""
LEASE_SCRIPT = Script(LEASE)


class _Token:
    """One rate-limit key's leases: chunks of [tokens, spend-by time], oldest first."""

    __slots__ = ("chunks", "refilling", "spent", "total", "trip", "want")

    def __init__(self) -> None:
        self.chunks: deque[list[float]] = deque()
        self.total = 0.0  # tokens in the chunks
        self.spent = 0.0  # tokens this key's requests took since its last round trip (theirs included)
        self.trip = -IDLE_SECONDS  # when this key last went to Redis (monotonic)
        self.want = 0  # the size of its last lease
        self.refilling = False


class Leases:
    """Leased tokens per rate-limit key for one event loop (see the module docstring)."""

    def __init__(self, client: LeanRedis, prefix: str, rate: float, burst: int) -> None:
        self.client = client
        self.prefix = prefix
        self.rate_arg = repr(float(rate))
        self.burst = burst
        self.max_lease = max(1, min(MAX_LEASE, burst // 4))
        self.trips = 0  # round trips made (requests, background leases, returns)
        self.waited = 0  # of those, the ones a request waited for
        self._tokens: dict[str, _Token] = {}
        self._leased: set[str] = set()  # keys holding chunks: what the sweeper looks at
        self._returns: dict[str, float] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def acquire(self, key: str, cost: float = 1.0) -> float:
        """0.0 when ``cost`` tokens were taken for ``key`` (from a lease, or from Redis), else the seconds to
        wait; raises redis-py's errors when Redis was asked and did not answer."""
        now = time.monotonic()
        held = self._tokens.get(key)
        if held is None:
            if len(self._tokens) >= MAX_KEYS:
                self._forget_idle(now)
            held = self._tokens[key] = _Token()
        elif held.total >= cost and self._spend(key, held, cost, now):
            if not held.refilling and (held.total < held.want / 2 or not held.chunks
                                       or held.chunks[-1][1] - now < LEASE_SECONDS / 2):
                held.refilling = True  # running low, or the newest lease is half gone: the next one now
                self._spawn(self._refill(key, held))
            return 0.0
        # a lease only for a key that came back within LEASE_SECONDS: one request now and then stays exact
        want = self._want(held, now) if now - held.trip < LEASE_SECONDS else 0
        held.trip, held.spent = now, 0.0
        self.waited += 1
        wait, extra = await self._trip(key, cost, want)
        if not wait:
            held.spent += cost
        if extra:
            self._add(key, held, extra)
        return wait

    async def aclose(self) -> None:
        """Stop sweeping and put every unspent leased token back (best effort: Redis may be gone)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        for task in list(self._tasks):
            task.cancel()
        self._sweep(float("inf"))
        await self._give_back()

    # -- inside ----------------------------------------------------------------------------------------
    async def _trip(self, key: str, cost: float, want: int) -> tuple[float, int]:
        self.trips += 1
        wait, extra = await self.client.evalsha([self.prefix + key], [self.rate_arg, self.burst, repr(float(cost)),
                                                                      want], LEASE_SCRIPT)
        return float(wait), int(extra)

    def _spend(self, key: str, held: _Token, cost: float, now: float) -> bool:
        chunks = held.chunks
        while chunks and chunks[0][1] <= now:  # too old to spend: back to the bucket
            gone = chunks.popleft()[0]
            held.total -= gone
            self._give(key, gone)
        if held.total < cost:
            return False
        held.total -= cost
        held.spent += cost
        left = cost
        for chunk in chunks:
            taken = min(chunk[0], left)
            chunk[0] -= taken
            left -= taken
            if left <= 0:
                break
        while chunks and chunks[0][0] <= 0:
            chunks.popleft()
        return True

    def _add(self, key: str, held: _Token, tokens: int) -> None:
        held.chunks.append([float(tokens), time.monotonic() + LEASE_SECONDS])
        held.total += tokens
        self._leased.add(key)
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_loop(), name="rate-limit-leases")

    async def _refill(self, key: str, held: _Token) -> None:
        try:
            now = time.monotonic()
            want = self._want(held, now)
            held.trip, held.spent = now, 0.0
            _, extra = await self._trip(key, 0.0, want)
            if extra:
                self._add(key, held, extra)
        except redis.RedisError:
            pass  # the next request that finds no lease asks Redis itself, and reports it
        finally:
            held.refilling = False

    def _want(self, held: _Token, now: float) -> int:
        """The next lease: the key's pace since its last round trip, for :data:`LEASE_FILL` of a lease's life."""
        pace = held.spent / max(now - held.trip, 0.001)
        held.want = min(self.max_lease, max(1, math.ceil(pace * LEASE_SECONDS * LEASE_FILL)))
        return held.want

    def _give(self, key: str, tokens: float) -> None:
        if tokens > 0:
            self._returns[key] = self._returns.get(key, 0.0) + tokens

    def _sweep(self, now: float) -> None:
        """Chunks too old to spend go back to the bucket."""
        for key in list(self._leased):
            held = self._tokens.get(key)
            chunks = held.chunks if held is not None else deque()
            while chunks and chunks[0][1] <= now:
                gone = chunks.popleft()[0]
                self._give(key, gone)
                if held is not None:
                    held.total -= gone
            if not chunks:
                self._leased.discard(key)

    def _forget_idle(self, now: float) -> None:
        """Keys not seen for :data:`IDLE_SECONDS` and holding nothing are forgotten."""
        self._sweep(now)
        for key, held in list(self._tokens.items()):
            if not held.chunks and not held.refilling and now - held.trip > IDLE_SECONDS:
                del self._tokens[key]

    async def _give_back(self) -> None:
        returns, self._returns = self._returns, {}
        if returns:
            await asyncio.gather(*(self._trip(key, -tokens, 0) for key, tokens in returns.items()),
                                 return_exceptions=True)  # tokens that cannot go back are lost: fewer, not more

    async def _sweep_loop(self) -> None:
        try:
            while self._leased or self._returns:
                await asyncio.sleep(LEASE_SECONDS)
                self._sweep(time.monotonic())
                await self._give_back()
        finally:
            if self._sweeper is asyncio.current_task():
                self._sweeper = None

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
