"""The per-token rate limiter shared by every gateway process through Redis (``redis_url``).

Same bucket, same answers as the in-process :class:`~hermes.toolgateway.storage.ratelimit.RateLimiter`: ``rate``
tokens per second, at most ``burst`` stored, keyed on the verified ``sub:jti``; a refused request
leaves the bucket as it found it (refilled to now) and learns how long to wait. The whole
read-refill-take-write step is one Lua script, which Redis runs atomically, and the clock is Redis's
own (``TIME``), so processes on hosts with skewed clocks still share one bucket exactly. A bucket
expires once it would have refilled completely — a fresh bucket behaves the same — so Redis holds only
the tokens in use.

Redis not answering is never a pass: a request that needs it gets ``503 rate_limiter_unavailable`` (fail closed;
tokens a process already holds on lease, :mod:`.redis_lease`, are still spent)
and the operator one log line per outage, with the URL's password masked. The relay hot path's
client is :class:`~hermes.toolgateway.storage.resp.LeanRedis` (one pipelined connection; ``redis.asyncio``
for TLS URLs or URLs with options), the CLI's and other routes' is redis-py's synchronous one. A Redis that
accepts connections but never answers must not hold every request of the process: connecting and each
answer are bounded by :data:`SOCKET_TIMEOUT` (0.5 s), and a timeout is not retried (one retry, at once,
only for a dropped connection — Redis restarted).

A serving process on such a URL needs even that round trip less often: the revocation version is pushed
to it (:mod:`.redis_watch`) and a token sending requests back to back spends tokens its bucket lent a little
ahead (:mod:`.redis_lease`; the bucket counts what it lent, so it never allows more than before).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from hermes.errors import ConfigError
from hermes.toolgateway.storage.base import StorageUnavailable, mask_url, scrub
from hermes.toolgateway.storage.ratelimit import RateLimiter
from hermes.toolgateway.storage.redis_lease import REFILL, STORE, Leases
from hermes.toolgateway.storage.redis_watch import AUTH_VERSION_KEY, BUMP, VersionWatch, channel_for, wait_for_acks
from hermes.toolgateway.storage.resp import LeanRedis, lean_url_supported

log = logging.getLogger("hermes.toolgateway")

KEY_PREFIX = "hermes:toolgateway:rl:"
SOCKET_TIMEOUT = 0.5
#: connections of the async client (the relay hot path), and how long a request waits for a free one
ASYNC_CONNECTIONS = 8
POOL_WAIT = 2.0

#: KEYS[1] the bucket, KEYS[2] the revocation version; ARGV as TOKEN_BUCKET, plus a flag: take a token (1)
#: or only read the version (0). Returns {wait, version}: a request's one round trip while the version is
#: not pushed to this process (:mod:`.redis_watch`).
BUCKET_AND_VERSION = """
local wait = '0'
if ARGV[4] == '1' then
  wait = (function()
{bucket}
  end)()
end
return {{wait, redis.call('GET', KEYS[2]) or '0'}}
"""

#: KEYS[1] the bucket; ARGV rate (tokens/s), burst, cost. Returns the seconds to wait ("0" when taken).
TOKEN_BUCKET = """
local first = #ARGV + 1
""" + REFILL + """
local cost = tonumber(ARGV[3])
local wait = 0
if tokens >= cost then
  tokens = tokens - cost
else
  wait = (cost - tokens) / rate
end
""" + STORE + """
return string.format('%.17g', wait)
"""


class RedisRateLimiter:
    """A token bucket per key in Redis; ``rate == 0`` or ``burst == 0`` disables it (Redis is not asked).

    :meth:`acquire` (synchronous) serves the CLI and the non-relay routes; the relay pipeline uses
    :meth:`acquire_and_version` on the lean asyncio client (:mod:`.resp`), which in the same round trip reads the
    revocation version (:data:`AUTH_VERSION_KEY`) that the token cache checks
    (:class:`~hermes.toolgateway.portal.auth.Authenticator`); :meth:`bump_auth_version` raises it.
    """


    @staticmethod
    def retry_after(wait: float) -> int:
        """A ``Retry-After`` value (whole seconds, at least 1) for a wait."""
        return RateLimiter.retry_after(wait)

    def __init__(self, url: str, rate: float, burst: int, *, prefix: str = KEY_PREFIX) -> None:
        self.url = url
        self.label = mask_url(url)
        self.rate = rate
        self.burst = burst
        self.prefix = prefix
        self._down = False
        try:
            self._client: redis.Redis = redis.Redis.from_url(
                url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT,
                retry=Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)),
                health_check_interval=0)
        except ValueError as exc:
            raise ConfigError(f"redis_url {self.label} is not valid: {scrub(str(exc), url)}") from None
        self._bucket: Any = self._client.register_script(TOKEN_BUCKET)
        self._aclient: Any = None
        self._abucket: Any = None
        body = "\n".join("    " + line for line in TOKEN_BUCKET.strip().splitlines())
        self._hot_script = BUCKET_AND_VERSION.format(bucket=body)
        #: the hot path's client: the lean one for plain redis:// and unix:// URLs, else redis.asyncio
        self._lean: LeanRedis | None = (LeanRedis(url, self._hot_script, timeout=SOCKET_TIMEOUT)
                                        if lean_url_supported(url) else None)
        self._bump: Any = self._client.register_script(BUMP)
        #: the pushed revocation version and the leases (:meth:`start`, lean URLs only)
        self.watch: VersionWatch | None = None
        self.leases: Leases | None = None

    async def start(self, on_subscribed: Callable[[], None] = lambda: None) -> None:
        """In a serving process on a lean URL: subscribe to the revocation version, so that requests need
        Redis only for the rate limit — and a busy token not even for that (leases). ``on_subscribed`` is
        called on every (re)subscription: whatever was cached may predate a Redis that restarted meanwhile."""
        if self._lean is not None and self.watch is None:
            self.watch = VersionWatch(self.url, self._lean, SOCKET_TIMEOUT, on_subscribed=on_subscribed)
            self.watch.start()
            if self.enabled:
                self.leases = Leases(self._lean, self.prefix, self.rate, self.burst)

    def _async_script(self) -> Any:
        if self._abucket is None:
            import redis.asyncio as aredis
            from redis.asyncio.retry import Retry as AsyncRetry

            # a few connections, shared: a burst of requests waits for one (at most POOL_WAIT seconds) instead
            # of opening a connection each
            pool = aredis.BlockingConnectionPool.from_url(
                self.url, max_connections=ASYNC_CONNECTIONS, timeout=POOL_WAIT, socket_timeout=SOCKET_TIMEOUT,
                socket_connect_timeout=SOCKET_TIMEOUT, health_check_interval=0)
            self._aclient = aredis.Redis(connection_pool=pool,
                                         retry=AsyncRetry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,)))
            self._abucket = self._aclient.register_script(self._hot_script)
        return self._abucket

    async def acquire_and_version(self, key: str, cost: float = 1.0) -> tuple[float, int]:
        """``(wait, revocation version)``: the wait as :meth:`acquire` (0.0 when the limiter is off). With the
        version pushed here (:attr:`watch` live) the wait comes from a lease or its own round trip and the
        version is the watch's; else both come from one round trip."""
        watch = self.watch
        if watch is not None and watch.live:
            if self.leases is None:
                return 0.0, watch.version
            try:
                wait = await self.leases.acquire(key, cost)
            except redis.RedisError as exc:
                raise self._unavailable(exc) from None
            self._down = False
            return wait, watch.version
        keys = [self.prefix + key, AUTH_VERSION_KEY]
        args: list[str | int | float] = [repr(float(self.rate or 1)), self.burst, repr(float(cost)),
                                         "1" if self.enabled else "0"]
        try:
            if self._lean is not None:
                wait, version = await self._lean.evalsha(keys, args)
            else:
                wait, version = await self._async_script()(keys=keys, args=args)
        except redis.RedisError as exc:
            raise self._unavailable(exc) from None
        self._down = False
        return float(wait), int(version)

    def bump_auth_version(self) -> None:
        """Make every process's cached token and user rows stale (a revocation, a disabled user, a new plan):
        raise the version, publish it, and return once every subscribed process applied it (:mod:`.redis_watch`;
        a serving process calls this off its event loop, which acknowledges too)."""
        try:
            version, receivers = (int(v) for v in self._bump(keys=[AUTH_VERSION_KEY], args=[channel_for(self.url)]))
        except redis.RedisError as exc:
            raise self._unavailable(exc) from None
        if receivers:
            wait_for_acks(self._client, version, receivers, self.label)

    @property
    def enabled(self) -> bool:
        return self.rate > 0 and self.burst > 0

    def _unavailable(self, exc: BaseException) -> StorageUnavailable:
        detail = f"Redis at {self.label} does not answer: {scrub(str(exc), self.url)}"
        if not self._down:
            log.warning("%s", detail)
            self._down = True
        return StorageUnavailable(detail, code="rate_limiter_unavailable",
                                  public="the gateway's rate limiter does not answer; try again shortly")

    def acquire(self, key: str, cost: float = 1.0) -> float:
        """Take ``cost`` tokens for ``key``: 0.0 when allowed, else the seconds to wait before retrying."""
        if not self.enabled:
            return 0.0
        try:
            wait = self._bucket(keys=[self.prefix + key], args=[repr(float(self.rate)), self.burst, repr(float(cost))])
        except redis.RedisError as exc:
            raise self._unavailable(exc) from None
        self._down = False
        return float(wait)

    def ping(self) -> None:
        """Raise :class:`StorageUnavailable` unless Redis answers now."""
        try:
            self._client.ping()
        except redis.RedisError as exc:
            raise self._unavailable(exc) from None
        self._down = False

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        if self.leases is not None:
            await self.leases.aclose()
            self.leases = None
        if self.watch is not None:
            await self.watch.aclose()
            self.watch = None
        if self._lean is not None:
            self._lean.close()
        if self._aclient is not None:
            await self._aclient.aclose(close_connection_pool=True)
            self._aclient = self._abucket = None
