"""Who started which vendor job: the ownership table behind the queue relays' polling endpoints.

A relay that hands out a job or request id (``fal-queue``'s ``request_id``, ``krea``'s ``job_id``)
remembers it here with the user who started it and the few strings it needs to follow the job later
(the vendor's own status URLs, the model path). A poll looks the id up *with the caller's identity*;
an id this table does not know, one that expired, or one another user started all look the same to the
caller: ``None`` (the relay answers 404). So a job id is never a capability on its own.

The entries live in the gateway database (table ``relay_jobs``, migration 5), so every gateway process
behind one address answers a poll for a job another process started — on one SQLite file or on
PostgreSQL alike. :meth:`JobTable.remember` is one statement (``INSERT … ON CONFLICT DO UPDATE … WHERE
owner = excluded.owner OR expired``), so two users can never both hold an id; expired rows are deleted
every :data:`PURGE_EVERY` inserts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.toolgateway.storage.base import Database

DEFAULT_TTL = 24 * 3600.0
#: inserts between two deletions of expired rows (per table object)
PURGE_EVERY = 256


class JobTable:
    """Job id → (owner, data) for one relay (``namespace``), each entry kept ``ttl`` seconds.

    ``database`` returns the gateway's current connection (it may be reopened after an outage).
    """

    def __init__(self, database: Callable[[], Database], namespace: str, *, ttl: float = DEFAULT_TTL,
                 clock: Callable[[], float] = time.time) -> None:
        if ttl <= 0:
            raise ValueError("a job table needs a positive ttl")
        self._db = database
        self.namespace = namespace
        self.ttl = ttl
        self._clock = clock
        self._inserts = 0

    async def remember(self, job_id: str, owner: str, data: Mapping[str, str]) -> bool:
        """Record that ``owner`` started ``job_id``; False (and nothing changes) when another owner holds it.

        Remembering an id again for the same owner replaces its data and restarts its time to live; an
        expired entry is free for anyone.
        """
        now = self._clock()
        db = self._db()
        row = db.execute(
            "INSERT INTO relay_jobs (namespace, job_id, owner, data, created, expires) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (namespace, job_id) DO UPDATE SET owner = excluded.owner, data = excluded.data, "
            "created = excluded.created, expires = excluded.expires "
            "WHERE relay_jobs.owner = excluded.owner OR relay_jobs.expires <= ? RETURNING job_id",
            (self.namespace, job_id, owner, json.dumps(dict(data), separators=(",", ":")), now, now + self.ttl, now),
        ).fetchone()
        self._inserts += 1
        if self._inserts % PURGE_EVERY == 0:
            db.execute("DELETE FROM relay_jobs WHERE expires <= ?", (now,))
        return row is not None

    async def get(self, job_id: str, owner: str) -> dict[str, str] | None:
        """The data of ``job_id`` if ``owner`` started it and it has not expired; None otherwise."""
        row = self._db().execute(
            "SELECT data FROM relay_jobs WHERE namespace = ? AND job_id = ? AND owner = ? AND expires > ?",
            (self.namespace, job_id, owner, self._clock()),
        ).fetchone()
        if row is None:
            return None
        data = json.loads(row[0])
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else None

    async def take(self, job_id: str, owner: str | None = None) -> tuple[str, dict[str, str]] | None:
        """``(owner, data)`` of ``job_id``, deleted in the same statement (single use: of two takers, one gets
        it); None when unknown or expired (or, with ``owner``, held by another owner). Without ``owner``: for
        ids that are capabilities themselves (an OAuth ``state``)."""
        sql = "DELETE FROM relay_jobs WHERE namespace = ? AND job_id = ? AND expires > ?"
        params: tuple[str | float, ...] = (self.namespace, job_id, self._clock())
        if owner is not None:
            sql, params = sql + " AND owner = ?", (*params, owner)
        return _owned(self._db().execute(sql + " RETURNING owner, data", params).fetchone())

    async def peek(self, job_id: str) -> tuple[str, dict[str, str]] | None:
        """``(owner, data)`` of ``job_id`` without taking it; only for ids that are capabilities themselves."""
        return _owned(self._db().execute(
            "SELECT owner, data FROM relay_jobs WHERE namespace = ? AND job_id = ? AND expires > ?",
            (self.namespace, job_id, self._clock())).fetchone())


def _owned(row: Any) -> tuple[str, dict[str, str]] | None:
    if row is None:
        return None
    data = json.loads(row[1])
    return str(row[0]), ({str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {})


__all__ = ["DEFAULT_TTL", "PURGE_EVERY", "JobTable"]
