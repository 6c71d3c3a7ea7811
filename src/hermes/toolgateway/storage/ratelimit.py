"""Per-token rate limiting: a token bucket per verified credential, in memory.

The key is the *parsed* credential (``sub`` and ``jti`` of a verified token), never the raw header:
a client cannot get a fresh bucket by re-encoding its token or adding spaces, and two tokens of one
user have a bucket each. Each process keeps its own buckets (a burst is per process; several
processes behind one address multiply it — the monthly quotas, which are exact, live in the database).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable


class RateLimiter:
    """``rate`` tokens per second, at most ``burst`` stored; ``burst == 0`` or ``rate == 0`` disables it."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic,
                 max_keys: int = 100_000) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self.max_keys = max_keys
        self._buckets: dict[str, tuple[float, float]] = {}

    @property
    def enabled(self) -> bool:
        return self.rate > 0 and self.burst > 0

    def acquire(self, key: str, cost: float = 1.0) -> float:
        """Take ``cost`` tokens for ``key``: 0.0 when allowed, else the seconds to wait before retrying."""
        if not self.enabled:
            return 0.0
        now = self.clock()
        tokens, last = self._buckets.get(key, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - last) * self.rate)
        if tokens >= cost:
            self._buckets[key] = (tokens - cost, now)
            if len(self._buckets) > self.max_keys:
                self._prune(now)
            return 0.0
        self._buckets[key] = (tokens, now)
        return (cost - tokens) / self.rate

    async def acquire_and_version(self, key: str, cost: float = 1.0) -> tuple[float, int | None]:
        """:meth:`acquire`, and no revocation version (this process's buckets share no state)."""
        return self.acquire(key, cost), None

    @staticmethod
    def retry_after(wait: float) -> int:
        """A ``Retry-After`` value (whole seconds, at least 1) for a wait."""
        return max(1, math.ceil(wait))

    def _prune(self, now: float) -> None:
        """Forget buckets that have refilled completely (they behave exactly like new ones)."""
        full = float(self.burst)
        for key, (tokens, last) in list(self._buckets.items()):
            if tokens + (now - last) * self.rate >= full:
                del self._buckets[key]
