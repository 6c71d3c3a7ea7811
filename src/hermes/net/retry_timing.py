"""Retry timing without an HTTP client: the ``Retry-After`` parser and the backoff delay.

They are here, not in :mod:`hermes.net.http`, so that what needs only the timing (the OpenAI-client
model provider, and through it the embedded local model's start-up) does not import httpx.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delay-seconds or an HTTP date (a past date is 0).

    None when the value is absent, negative, not finite, or neither form.
    """
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        return _seconds_until(text, now)
    return seconds if 0 <= seconds < math.inf else None


def _seconds_until(text: str, now: datetime | None) -> float | None:
    try:
        from email.utils import parsedate_to_datetime  # an HTTP date is rare: email.* costs ~20 ms at start-up

        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_delay(attempt: int, retry_after: float | None, *, base_delay: float, max_delay: float,
                  max_retry_after: float | None = None, jitter: tuple[float, float] = (0.5, 1.0)) -> float:
    """Seconds to wait after try number ``attempt`` (from 1) failed.

    ``retry_after`` (the server's own wait) is taken as it is, capped at ``max_retry_after`` (default
    ``max_delay``); otherwise ``base_delay × 2^(attempt-1)``, capped at ``max_delay``, times a random
    factor between the two ``jitter`` bounds.
    """
    if retry_after is not None:
        cap = max_delay if max_retry_after is None else max_retry_after
        return max(0.0, min(retry_after, cap))
    low, high = jitter
    base: float = min(base_delay * (2 ** (attempt - 1)), max_delay)
    return base * (low + (high - low) * random.random())
