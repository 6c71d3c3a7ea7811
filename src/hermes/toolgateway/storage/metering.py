"""Metering and quotas on the gateway database (requirement GW-10, GW-15).

**Quotas are reserved before the vendor is called, in one statement.** A plan's monthly allowance per
category (``plans.<plan>.monthly``) is a counter row ``(user, category, "YYYY-MM")``; :meth:`Meter.reserve`
is a single ``INSERT … ON CONFLICT DO UPDATE … WHERE used + n <= limit RETURNING used``. SQLite runs
one statement at a time under its write lock, so the check and the increment cannot be split — neither
by coroutines of one process nor by several processes sharing the file. PostgreSQL runs the same
statement exactly as well: ``ON CONFLICT DO UPDATE`` locks the counter row and evaluates the ``WHERE``
against its latest committed value, and a concurrent first insert of the row waits for the other to
commit and then takes the update path — so gateway processes on several hosts sharing one database
never grant a unit twice. A call that then fails gets its units back (:meth:`Meter.refund`): people
pay for answers, not for vendor errors.

**Every relayed call is recorded** (:meth:`Meter.record`): user, token id, category, vendor (backend),
operation, units, cost, HTTP status and latency. :meth:`Meter.summary` aggregates them per category,
vendor and operation — for one user (``/api/usage``) or for everyone (``/api/admin/usage``).

Periods are calendar months in UTC; ``Retry-After`` for an exhausted allowance is the time left until
the next month starts.
"""

from __future__ import annotations

import calendar
import os
import secrets
import sqlite3
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes.toolgateway.storage.base import Database
from hermes.toolgateway.storage.sqlite import as_database

if TYPE_CHECKING:
    from hermes.toolgateway.storage.pg_async import AsyncPool
    from hermes.toolgateway.storage.usage_journal import UsageWriter

_RESERVE = ("INSERT INTO quota_counters (user_id, category, period, used) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (user_id, category, period) DO UPDATE SET used = quota_counters.used + excluded.used "
            "WHERE quota_counters.used + excluded.used <= ? RETURNING used")
_USED = "SELECT used FROM quota_counters WHERE user_id = ? AND category = ? AND period = ?"


#: the month :func:`month_period` answered last: its first second, the next month's first second, its name
_month: tuple[float, float, str] = (0.0, 0.0, "")


def month_period(now: float) -> str:
    """``YYYY-MM`` (UTC) of ``now`` (formatted once a month: every relayed request asks)."""
    global _month
    start, end, name = _month
    if start <= now < end:
        return name
    t = time.gmtime(now)
    name = f"{t.tm_year:04d}-{t.tm_mon:02d}"
    _month = (float(calendar.timegm((t.tm_year, t.tm_mon, 1, 0, 0, 0, 0, 0, 0))), next_period_start(now), name)
    return name


class _RowIds:
    """Usage row ids (``rid``, 24 hex digits): a random prefix drawn once per process and a counter.

    Unique across processes as the former 12 random bytes were, without a ``getrandom`` call per request;
    a forked child draws a prefix of its own (it would otherwise repeat its parent's ids, which the
    idempotent insert would then drop as already counted)."""

    def __init__(self) -> None:
        self._prefix = ""
        self._next = 0
        self.redraw()
        os.register_at_fork(after_in_child=self.redraw)

    def redraw(self) -> None:
        self._prefix = secrets.token_hex(8)
        self._next = 0

    def __call__(self) -> str:
        n = self._next
        if n > 0xFFFFFFFF:  # 2**32 rows from one prefix: draw another
            self.redraw()
            n = 0
        self._next = n + 1
        return f"{self._prefix}{n:08x}"


row_id = _RowIds()


def next_period_start(now: float) -> float:
    """The first second of the month after ``now`` (UTC), as a timestamp."""
    t = time.gmtime(now)
    year, month = (t.tm_year + 1, 1) if t.tm_mon == 12 else (t.tm_year, t.tm_mon + 1)
    return float(calendar.timegm((year, month, 1, 0, 0, 0, 0, 0, 0)))


@dataclass(frozen=True)
class Reservation:
    """Units taken from a quota counter (``units == 0`` when the category has no limit)."""

    user_id: int
    category: str
    period: str
    units: int


class QuotaExceeded(Exception):
    """The allowance is used up; ``retry_after`` seconds until it resets."""

    def __init__(self, category: str, limit: int, used: int, retry_after: int) -> None:
        super().__init__(f"the monthly allowance of {limit} units for {category} is used up")
        self.category = category
        self.limit = limit
        self.used = used
        self.retry_after = retry_after


class Meter:
    """Quota counters and the usage log on one database (a bare ``sqlite3.Connection`` is accepted too)."""

    def __init__(self, conn: Database | sqlite3.Connection) -> None:
        self.conn = as_database(conn)
        #: set by the gateway's start: the usage journal (both engines) and, with PostgreSQL, the async pool
        self.pool: AsyncPool | None = None
        self.writer: UsageWriter | None = None
        dialect = self.conn.dialect
        self._refund_sql = (f"UPDATE quota_counters SET used = {dialect.greatest}(used - ?, 0) "
                            "WHERE user_id = ? AND category = ? AND period = ?")
        self._day = dialect.day("ts")

    def reserve(self, user_id: int, category: str, units: int, limit: int | None, now: float) -> Reservation:
        """Take ``units`` from the monthly allowance, atomically; raise :class:`QuotaExceeded` if it cannot.

        ``limit=None`` means unlimited: nothing is reserved (usage is still recorded by the caller).
        """
        period = month_period(now)
        if limit is None:
            return Reservation(user_id, category, period, 0)
        if units <= limit:
            row = self.conn.execute(_RESERVE, (user_id, category, period, units, limit)).fetchone()
            if row is not None:
                return Reservation(user_id, category, period, units)
        used = self.used(user_id, category, period)
        raise QuotaExceeded(category, limit, used, max(1, int(next_period_start(now) - now) + 1))

    async def reserve_async(self, user_id: int, category: str, units: int, limit: int | None,
                            now: float) -> Reservation:
        """:meth:`reserve` on the async pool when there is one (the same single statement, committed
        before the vendor is called)."""
        pool = self.pool
        if pool is None:
            return self.reserve(user_id, category, units, limit, now)
        period = month_period(now)
        if limit is None:
            return Reservation(user_id, category, period, 0)
        if units <= limit and await pool.fetchone(_RESERVE, (user_id, category, period, units, limit)) is not None:
            return Reservation(user_id, category, period, units)
        row = await pool.fetchone(_USED, (user_id, category, period))
        raise QuotaExceeded(category, limit, int(row[0]) if row else 0, max(1, int(next_period_start(now) - now) + 1))

    async def refund_async(self, reservation: Reservation) -> None:
        """:meth:`refund` on the async pool when there is one."""
        if self.pool is None:
            self.refund(reservation)
        elif reservation.units:
            await self.pool.execute(self._refund_sql, (reservation.units, reservation.user_id, reservation.category,
                                                       reservation.period))

    def refund(self, reservation: Reservation) -> None:
        """Give back the units of a call that failed."""
        if reservation.units:
            self.conn.execute(
                self._refund_sql, (reservation.units, reservation.user_id, reservation.category, reservation.period),
            )

    def used(self, user_id: int, category: str, period: str) -> int:
        row = self.conn.execute(_USED, (user_id, category, period)).fetchone()
        return int(row["used"]) if row else 0

    def record(self, *, user_id: int, jti: str | None, category: str, vendor: str, operation: str, units: int,
               cost: float, status: int, latency_ms: float, now: float) -> None:
        """Append one relayed call to the usage log: in a serving gateway written ahead to the usage journal
        and inserted with the next batch (:mod:`.usage_journal`); without one (the CLI) committed at once."""
        row = (row_id(), now, user_id, jti, category, vendor, operation, units, cost, status,
               round(latency_ms, 3))
        if self.writer is not None:
            self.writer.record(row)
            return
        self.conn.execute(
            "INSERT INTO usage (rid, ts, user_id, jti, category, vendor, operation, units, cost, status, latency_ms) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)

    async def flush(self) -> None:
        """Write this process's journalled usage rows now (before a usage view reads the table)."""
        if self.writer is not None:
            await self.writer.flush()

    def summary(self, *, user_id: int | None, since: float, until: float) -> list[dict[str, Any]]:
        """Calls, successes, units, cost and mean latency per (user,) category, vendor and operation."""
        where = "WHERE g.ts >= ? AND g.ts < ?"
        params: list[Any] = [since, until]
        if user_id is not None:
            where += " AND g.user_id = ?"
            params.append(user_id)
        rows = self.conn.execute(
            "SELECT u.name AS user, g.category, g.vendor, g.operation, COUNT(*) AS calls, "
            "SUM(CASE WHEN g.status < 400 THEN 1 ELSE 0 END) AS ok, SUM(g.units) AS units, SUM(g.cost) AS cost, "
            "AVG(g.latency_ms) AS latency "
            f"FROM usage g JOIN users u ON u.id = g.user_id {where} "
            "GROUP BY u.name, g.category, g.vendor, g.operation ORDER BY u.name, g.category, g.operation",
            params,
        ).fetchall()
        return [
            {"user": r["user"], "category": r["category"], "vendor": r["vendor"], "operation": r["operation"],
             "calls": r["calls"], "succeeded": int(r["ok"] or 0), "units": int(r["units"] or 0),
             "cost": round(float(r["cost"] or 0.0), 6), "mean_latency_ms": round(float(r["latency"] or 0.0), 3)}
            for r in rows
        ]

    def daily(self, *, user_id: int | None, since: float, until: float) -> list[dict[str, Any]]:
        """Units and cost per UTC day and category (for charts)."""
        where = "WHERE ts >= ? AND ts < ?"
        params: list[Any] = [since, until]
        if user_id is not None:
            where += " AND user_id = ?"
            params.append(user_id)
        rows = self.conn.execute(
            f"SELECT {self._day} AS day, category, COUNT(*) AS calls, SUM(units) AS units, "
            f"SUM(cost) AS cost FROM usage {where} GROUP BY day, category ORDER BY day, category",
            params,
        ).fetchall()
        return [{"day": r["day"], "category": r["category"], "calls": r["calls"], "units": int(r["units"] or 0),
                 "cost": round(float(r["cost"] or 0.0), 6)} for r in rows]

    def allowances(self, user_id: int, monthly: dict[str, int], now: float) -> dict[str, dict[str, Any]]:
        """This month's used/limit per limited category, with the reset time."""
        period = month_period(now)
        resets = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(next_period_start(now)))
        return {cat: {"used": self.used(user_id, cat, period), "limit": limit, "period": period, "resets_at": resets}
                for cat, limit in sorted(monthly.items())}
