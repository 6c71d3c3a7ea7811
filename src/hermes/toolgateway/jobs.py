"""Who started which vendor job: the ownership table behind the queue relays' polling endpoints.

A relay that hands out a job or request id (``fal-queue``'s ``request_id``, ``krea``'s ``job_id``)
remembers it here with the user who started it and the few strings it needs to follow the job later
(the vendor's own status URLs, the model path). A poll looks the id up *with the caller's identity*;
an id this table does not know, one that expired, or one another user started all look the same to the
caller: ``None`` (the relay answers 404). So a job id is never a capability on its own.

:class:`JobTable` keeps the entries in this process's memory, oldest first, for ``ttl`` seconds and at
most ``max_entries`` (the oldest go first when full). Its interface is deliberately small and
asynchronous — :meth:`JobTable.remember` and :meth:`JobTable.get`, with string owners and
string-to-string data (JSON-ready) — so that a shared store (Redis, the database) can replace it for
several gateway processes behind one address without changing any caller. Until then such a
deployment needs sticky routing for polls.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

DEFAULT_TTL = 24 * 3600.0
DEFAULT_MAX_ENTRIES = 100_000


@dataclass(frozen=True)
class _Entry:
    owner: str
    data: Mapping[str, str]
    created: float


class JobTable:
    """Job id → (owner, data) for one relay (``namespace``), bounded in age and size."""

    def __init__(self, namespace: str, *, ttl: float = DEFAULT_TTL, max_entries: int = DEFAULT_MAX_ENTRIES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if ttl <= 0 or max_entries < 1:
            raise ValueError("a job table needs a positive ttl and room for at least one entry")
        self.namespace = namespace
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def _expire(self, now: float) -> None:
        while self._entries:
            oldest = next(iter(self._entries.values()))
            if now - oldest.created <= self.ttl:
                return
            self._entries.popitem(last=False)

    async def remember(self, job_id: str, owner: str, data: Mapping[str, str]) -> bool:
        """Record that ``owner`` started ``job_id``; False (and nothing changes) when another owner holds it.

        Remembering an id again for the same owner replaces its data and restarts its time to live.
        """
        now = self._clock()
        self._expire(now)
        held = self._entries.get(job_id)
        if held is not None:
            if held.owner != owner:
                return False
            del self._entries[job_id]
        while len(self._entries) >= self.max_entries:
            self._entries.popitem(last=False)
        self._entries[job_id] = _Entry(owner, dict(data), now)
        return True

    async def get(self, job_id: str, owner: str) -> dict[str, str] | None:
        """The data of ``job_id`` if ``owner`` started it and it has not expired; None otherwise."""
        now = self._clock()
        self._expire(now)
        entry = self._entries.get(job_id)
        if entry is None or entry.owner != owner:
            return None
        return dict(entry.data)


__all__ = ["DEFAULT_MAX_ENTRIES", "DEFAULT_TTL", "JobTable"]
