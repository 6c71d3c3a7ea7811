"""Rate-limit tokens taken from the shared Redis bucket a little ahead of use (leases).

With the revocation version pushed to every process (:mod:`.redis_watch`), the rate limit is the only
thing a relayed request still needs Redis for. A token that sends requests back to back does not need a
round trip for each: when one of its requests goes to Redis within :data:`LEASE_SECONDS` of the last,
the script lends this process a few tokens more than the request costs, and the token's next requests
spend them without asking; while they last, the next lease is taken in the background. How many: the
token's recent pace for :data:`LEASE_FILL` of a lease's life, at most ``burst / 4`` (and :data:`MAX_LEASE`),
never more than half of what the bucket holds after the request's own cost — so a small bucket is not
emptied into one process. A token that comes back only now and then takes no lease: one exact round
trip a request.

The bucket keeps count of what it lent, by the half second it was lent in (``lent`` of the current
and the previous slot of :data:`SLOT_SECONDS`, beside ``tokens``): it refills only up to ``burst`` minus
what it lent, so what it holds and what is out on lease together never exceed ``burst``. Each process
reports, with its next round trip for that token (or the sweeper's, every :data:`LEASE_SECONDS`), the
leases it is done with — spent, or not spent within :data:`LEASE_SECONDS` of being asked for — by
slot, and the tokens left in them, which go back into the bucket. A lease is over long before its slot
is two slots old, so an older slot's count is dropped, and a report for it (late, or sent again) is
ignored. So, whatever the number of processes, the requests let through over any stretch of time are
at most what the bucket itself allows (``burst`` plus the rate times the stretch); a report that is
lost (Redis did not answer, a process died) leaves its tokens counted as lent for at most a second —
fewer requests, never more. A refusal and its ``Retry-After`` are still the script's; a request can be
refused while other processes hold unspent tokens of the same bucket (for about :data:`LEASE_SECONDS`).
Tokens already leased are spent even when Redis stops answering meanwhile (at most
:data:`LEASE_SECONDS` of them); every request that needs Redis then gets ``503``.
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

#: how long leased tokens may wait to be spent, from when they were asked for (then they go back)
LEASE_SECONDS = 0.1
#: the largest lease, in tokens
MAX_LEASE = 256
#: a lease is this share of what the key spends in :data:`LEASE_SECONDS` at its recent pace; the next one is
#: taken when the newest is half way to its end or half spent, and what is left over goes back
LEASE_FILL = 0.75
#: a key not seen for this long, with nothing leased or to report and no round trip under way, is forgotten
IDLE_SECONDS = 1.0
#: keys kept in memory before the idle ones are forgotten
MAX_KEYS = 10_000
#: lent tokens are counted by the slot of this many seconds they were lent in; a slot two slots old is dropped
#: (longer than any lease lives: LEASE_SECONDS from when it was asked for)
SLOT_SECONDS = 0.5

#: the bucket refilled to now, after the caller's reports (ARGV from ``first``: slot, tokens of leases lent in
#: it the caller is done with, of them unspent — which go back); it never holds more than ``burst`` minus what
#: it lent in this slot and the previous one. Defines ``tokens``, ``now``, ``slot`` and the slots' counts.
REFILL = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local slot = math.floor(now / SLOT_SECONDS)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts', 's1', 'l1', 's0', 'l0')
local tokens = tonumber(state[1])
local last = tonumber(state[2])
local s1, l1 = tonumber(state[3]) or -1, tonumber(state[4]) or 0
local s0, l0 = tonumber(state[5]) or -1, tonumber(state[6]) or 0
if tokens == nil or last == nil then
  tokens, last, s1, l1, s0, l0 = burst, now, -1, 0, -1, 0
end
if s1 < slot then
  if s1 == slot - 1 then
    s0, l0 = s1, l1
  else
    s0, l0 = -1, 0
  end
  s1, l1 = slot, 0
end
if s0 < slot - 1 then
  s0, l0 = -1, 0
end
for i = first, #ARGV - 2, 3 do
  local at = tonumber(ARGV[i])
  if at == s1 then
    l1 = math.max(0, l1 - tonumber(ARGV[i + 1]))
    tokens = tokens + tonumber(ARGV[i + 2])
  elseif at == s0 then
    l0 = math.max(0, l0 - tonumber(ARGV[i + 1]))
    tokens = tokens + tonumber(ARGV[i + 2])
  end
end
if now > last then
  tokens = tokens + (now - last) * rate
end
tokens = math.min(burst - l1 - l0, tokens)
""".replace("SLOT_SECONDS", repr(SLOT_SECONDS))

#: writes the bucket back; it expires once it would have refilled completely (lent tokens included)
STORE = """
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts', string.format('%.6f', now),
           's1', s1, 'l1', string.format('%.17g', l1), 's0', s0, 'l0', string.format('%.17g', l0))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
"""

#: KEYS[1] the bucket; ARGV rate, burst, cost, want, then reports (slot, done, unspent)…. Takes ``cost`` and lends up
#: to ``want`` more (never more than half of what is left). Returns {seconds to wait ("0" when taken), tokens lent,
#: the slot they were lent in}.
LEASE = """
local first = 5
""" + REFILL + """
local cost = tonumber(ARGV[3])
local wait = 0
local extra = 0
if tokens >= cost then
  extra = math.max(0, math.min(tonumber(ARGV[4]), math.floor((tokens - cost) / 2)))
  tokens = tokens - cost - extra
  l1 = l1 + extra
else
  wait = (cost - tokens) / rate
end
""" + STORE + """
return {string.format('%.17g', wait), extra, s1}
"""
LEASE_SCRIPT = Script(LEASE)


class _Token:
    """One rate-limit key's leases: chunks of [tokens left, spend-by time, size, slot lent in], oldest first."""

    __slots__ = ("chunks", "inflight", "refilling", "report", "spent", "total", "trip", "want")

    def __init__(self) -> None:
        self.chunks: deque[list[float]] = deque()
        self.total = 0.0  # tokens left in the chunks
        #: to report, by slot: [the size of the leases this process is done with, the tokens left in them]
        self.report: dict[int, list[float]] = {}
        self.spent = 0.0  # tokens this key's requests took since its last round trip (theirs included)
        self.trip = -IDLE_SECONDS  # when this key last went to Redis (monotonic)
        self.want = 0  # the size of its last lease
        self.refilling = False
        self.inflight = 0  # round trips under way


class Leases:
    """Leased tokens per rate-limit key for one event loop (see the module docstring)."""

    def __init__(self, client: LeanRedis, prefix: str, rate: float, burst: int) -> None:
        self.client = client
        self.prefix = prefix
        self.rate_arg = repr(float(rate))
        self.burst = burst
        self.max_lease = max(1, min(MAX_LEASE, burst // 4))
        self.trips = 0  # round trips made (requests, background leases, reports)
        self.waited = 0  # of those, the ones a request waited for
        self._tokens: dict[str, _Token] = {}
        self._leased: set[str] = set()  # keys holding chunks or a report: what the sweeper looks at
        self._sweeper: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    async def acquire(self, key: str, cost: float = 1.0) -> float:
        """0.0 when ``cost`` tokens were taken for ``key`` (from a lease, or from Redis), else the seconds to
        wait; raises redis-py's errors when Redis was asked and did not answer."""
        now = time.monotonic()
        held = self._tokens.get(key)
        if held is None:
            if len(self._tokens) >= MAX_KEYS:
                self._forget_idle(now)
            held = self._tokens[key] = _Token()
        elif held.total >= cost and self._spend(key, held, cost, now):  # (only leases taken before a close)
            if not held.refilling and not self._closed and (held.total < held.want / 2 or not held.chunks
                                                            or held.chunks[-1][1] - now < LEASE_SECONDS / 2):
                held.refilling = True  # running low, or the newest lease is half gone: the next one now
                self._spawn(self._refill(key, held))
            return 0.0
        # a lease only for a key that came back within LEASE_SECONDS: one request now and then stays exact
        want = self._want(held, now) if now - held.trip < LEASE_SECONDS and not self._closed else 0
        held.trip, held.spent = now, 0.0
        self.waited += 1
        wait = await self._trip(key, held, cost, want)
        if not wait:
            held.spent += cost
        return wait

    async def aclose(self) -> None:
        """Stop sweeping and leasing; report every lease as done, its unspent tokens back (best effort). Leases
        being asked for are waited for (each round trip is bounded), so that they are reported too."""
        self._closed = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        await self._report(float("inf"))

    # -- inside ----------------------------------------------------------------------------------------
    async def _trip(self, key: str, held: _Token, cost: float, want: int) -> float:
        """One round trip for ``key``: take ``cost``, lend up to ``want``, report what is done. A report whose trip
        failed is not sent again (it may have been applied): its tokens stay counted as lent until its slot ends."""
        args: list[str | int | float] = [self.rate_arg, self.burst, repr(float(cost)), want]
        for slot, (done, unspent) in held.report.items():
            args += [slot, repr(done), repr(unspent)]
        held.report = {}
        held.inflight += 1
        self.trips += 1
        asked = time.monotonic()
        try:
            wait, extra, slot = await self.client.evalsha([self.prefix + key], args, LEASE_SCRIPT)
        finally:
            held.inflight -= 1
        if int(extra):
            self._add(key, held, int(extra), asked + LEASE_SECONDS, int(slot))
        return float(wait)

    def _spend(self, key: str, held: _Token, cost: float, now: float) -> bool:
        self._expire(key, held, now)
        if held.total < cost:
            return False
        held.total -= cost
        held.spent += cost
        left = cost
        chunks = held.chunks
        for chunk in chunks:
            taken = min(chunk[0], left)
            chunk[0] -= taken
            left -= taken
            if left <= 0:
                break
        while chunks and chunks[0][0] <= 0:
            _, _, size, slot = chunks.popleft()
            self._done(key, held, int(slot), size, 0.0)
        return True

    def _expire(self, key: str, held: _Token, now: float) -> None:
        """Chunks past their spend-by time are done with; what is left in them goes back."""
        chunks = held.chunks
        while chunks and chunks[0][1] <= now:
            left, _, size, slot = chunks.popleft()
            held.total -= left
            self._done(key, held, int(slot), size, left)
        if not chunks:
            held.total = 0.0

    def _done(self, key: str, held: _Token, slot: int, size: float, left: float) -> None:
        entry = held.report.setdefault(slot, [0.0, 0.0])
        entry[0] += size
        entry[1] += left
        self._leased.add(key)

    def _add(self, key: str, held: _Token, tokens: int, spend_by: float, slot: int) -> None:
        held.chunks.append([float(tokens), spend_by, float(tokens), float(slot)])
        held.total += tokens
        self._leased.add(key)
        if self._sweeper is None and not self._closed:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_loop(), name="rate-limit-leases")

    async def _refill(self, key: str, held: _Token) -> None:
        try:
            now = time.monotonic()
            want = self._want(held, now)
            held.trip, held.spent = now, 0.0
            await self._trip(key, held, 0.0, want)
        except redis.RedisError:
            pass  # the next request that finds no lease asks Redis itself, and reports it
        finally:
            held.refilling = False

    def _want(self, held: _Token, now: float) -> int:
        """The next lease: the key's pace since its last round trip, for :data:`LEASE_FILL` of a lease's life."""
        pace = held.spent / max(now - held.trip, 0.001)
        held.want = min(self.max_lease, max(1, math.ceil(pace * LEASE_SECONDS * LEASE_FILL)))
        return held.want

    async def _report(self, now: float) -> None:
        """Expire old chunks, and send the reports of keys no round trip is under way for (best effort)."""
        due = []
        for key in list(self._leased):
            held = self._tokens.get(key)
            if held is None:
                self._leased.discard(key)
                continue
            self._expire(key, held, now)
            if held.report and not held.inflight:
                due.append((key, held))
            elif not held.chunks and not held.report:
                self._leased.discard(key)
        if due:
            await asyncio.gather(*(self._trip(key, held, 0.0, 0) for key, held in due), return_exceptions=True)

    def _forget_idle(self, now: float) -> None:
        """Forget keys that hold nothing: the idle ones, or — when they are all recent — every one of them."""
        def forgettable(held: _Token) -> bool:
            return not held.chunks and not held.report and not held.refilling and not held.inflight

        for key, held in list(self._tokens.items()):
            if forgettable(held) and now - held.trip > IDLE_SECONDS:
                del self._tokens[key]
        if len(self._tokens) >= MAX_KEYS // 2:  # so that the next scan is MAX_KEYS / 2 new keys away
            for key, held in list(self._tokens.items()):
                if forgettable(held):
                    del self._tokens[key]

    async def _sweep_loop(self) -> None:
        try:
            while self._leased and not self._closed:
                await asyncio.sleep(LEASE_SECONDS)
                await self._report(time.monotonic())
        finally:
            if self._sweeper is asyncio.current_task():
                self._sweeper = None

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
