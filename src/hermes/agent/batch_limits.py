"""Model rate limits for batch runs: one limiter that every prompt's model calls pass through.

:class:`RequestLimiter` caps the model requests in flight at once and the requests started per
minute (a token bucket refilled continuously). In a single-process run it is shared by the worker
threads; on a Ray cluster the same class runs as one actor (``hermes batch --ray``) that every
worker calls, so the limits hold across all nodes together. Slots are taken under a *holder* name
(the prompt and its attempt), so when a worker dies holding slots the driver frees them by name.

:class:`LimitedProvider` wraps a :class:`ChatProvider` so each ``complete`` call takes a slot first
and gives it back afterwards.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes.agent.provider import CallOptions, ChatProvider, Completion
from hermes.config.schema import SCHEMA


@dataclass(frozen=True)
class RateLimits:
    """``batch.requests_per_minute`` and ``batch.max_concurrent_requests``; None: no limit."""

    requests_per_minute: float | None = None
    max_concurrent_requests: int | None = None

    @property
    def active(self) -> bool:
        return self.requests_per_minute is not None or self.max_concurrent_requests is not None

    @classmethod
    def from_config(cls, config: Any) -> RateLimits:
        """The limits set in ``config`` (anything with ``get(dotted_key)``), checked against the schema."""
        return cls(SCHEMA.read(config, "batch.requests_per_minute"),
                   SCHEMA.read(config, "batch.max_concurrent_requests"))


class RequestLimiter:
    """Blocking, thread-safe limiter: ``acquire(holder)`` waits for a slot and a token."""

    def __init__(self, limits: RateLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._clock = clock
        self._cond = threading.Condition()
        self._held: dict[str, int] = {}
        self._in_flight = 0
        self._tokens = self._capacity()
        self._stamp = clock()
        self.granted = 0
        self.most_in_flight = 0
        self.freed_for_dead = 0

    def _capacity(self) -> float:
        """The bucket holds one second's worth (at least one request), so no burst after a pause."""
        rpm = self.limits.requests_per_minute
        return 1.0 if rpm is None else max(rpm / 60.0, 1.0)

    def _refill(self) -> None:
        rpm = self.limits.requests_per_minute
        now = self._clock()
        if rpm is not None:
            self._tokens = min(self._capacity(), self._tokens + (now - self._stamp) * rpm / 60.0)
        self._stamp = now

    def _wait_time(self) -> float | None:
        """0 when a request may start now, else how long to wait for a token (None: until a slot is freed)."""
        cap = self.limits.max_concurrent_requests
        if cap is not None and self._in_flight >= cap:
            return None
        rpm = self.limits.requests_per_minute
        if rpm is None or self._tokens >= 1.0:
            return 0.0
        return (1.0 - self._tokens) * 60.0 / rpm

    def _take(self, holder: str) -> None:
        if self.limits.requests_per_minute is not None:
            self._tokens -= 1.0
        self._in_flight += 1
        self._held[holder] = self._held.get(holder, 0) + 1
        self.granted += 1
        self.most_in_flight = max(self.most_in_flight, self._in_flight)

    def acquire(self, holder: str) -> None:
        with self._cond:
            while True:
                self._refill()
                wait = self._wait_time()
                if wait == 0.0:
                    self._take(holder)
                    return
                self._cond.wait(timeout=wait)

    def release(self, holder: str) -> None:
        with self._cond:
            count = self._held.get(holder, 0)
            if count == 0:
                return
            if count == 1:
                del self._held[holder]
            else:
                self._held[holder] = count - 1
            self._in_flight -= 1
            self._cond.notify_all()

    def release_holder(self, holder: str) -> int:
        """Free every slot ``holder`` still holds (its worker died mid-request); returns how many."""
        with self._cond:
            count = self._held.pop(holder, 0)
            self._in_flight -= count
            self.freed_for_dead += count
            if count:
                self._cond.notify_all()
            return count

    def stats(self) -> dict[str, int]:
        with self._cond:
            return {"granted": self.granted, "in_flight": self._in_flight, "most_in_flight": self.most_in_flight,
                    "freed_for_dead": self.freed_for_dead}


class LimitedProvider:
    """A provider whose every model call first takes a slot from a limiter (local or a Ray actor)."""

    def __init__(self, inner: ChatProvider, acquire: Callable[[], None], release: Callable[[], None]) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self._acquire = acquire
        self._release = release

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 options: CallOptions) -> Completion:
        self._acquire()
        try:
            return self.inner.complete(messages, tools, options)
        finally:
            self._release()

    def __getattr__(self, name: str) -> Any:  # close(), context window and the like
        return getattr(self.inner, name)
