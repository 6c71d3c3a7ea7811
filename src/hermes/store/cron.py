"""Scheduled jobs and their runs: :class:`CronStore` over the ``cron_jobs`` and ``cron_runs`` tables.

The tables live in ``state.db`` next to the sessions (see the cron migration in
:mod:`hermes.store.migrations`). Times are ``time.time()`` seconds. A job is addressed by its id or
its unique name. The scheduler claims a due job with a compare-and-swap on ``next_run_at``
(:meth:`CronStore.claim`), so two processes never run the same fire time twice.

Run statuses: ``running`` while a run is in progress, then ``ok`` or ``error``; ``skipped_missed``
records fire times that were missed while no scheduler was running and were not run.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from hermes.errors import HermesError, StoreError
from hermes.store.db import SQLiteStore

RUN_STATUSES = ("running", "ok", "error", "skipped_missed")
TRIGGERS = ("schedule", "manual")
#: columns a caller may change through :meth:`CronStore.update_job`
UPDATABLE = frozenset({
    "name", "prompt", "schedule_kind", "schedule", "skills", "toolsets", "enabled", "next_run_at",
    "last_run_at", "last_status", "repeat_count", "repeat_limit", "grace_seconds",
})


class CronJobNotFound(StoreError):
    """No job has that id or name."""


class CronJobExists(StoreError):
    """A job with that name already exists."""


@dataclass(frozen=True)
class CronJob:
    """One scheduled job."""

    id: str
    name: str
    prompt: str
    schedule_kind: str
    schedule: str
    skills: list[str]
    toolsets: list[str] | None
    enabled: bool
    created_at: float
    updated_at: float
    next_run_at: float | None
    last_run_at: float | None
    last_status: str | None
    repeat_count: int
    repeat_limit: int | None
    grace_seconds: int | None

    @property
    def state(self) -> str:
        """``active``, ``paused`` or ``finished`` (a one-shot that fired, or its repeat limit reached)."""
        if self.enabled:
            return "active"
        return "finished" if self.next_run_at is None else "paused"


@dataclass(frozen=True)
class CronRun:
    """One run (or one record of skipped fire times) of a job."""

    id: int
    job_id: str
    trigger: str
    scheduled_for: float | None
    started_at: float
    finished_at: float | None
    status: str
    session_id: str | None
    output: str | None
    error: str | None


def _job(row: sqlite3.Row) -> CronJob:
    toolsets = row["toolsets"]
    return CronJob(
        id=row["id"], name=row["name"], prompt=row["prompt"], schedule_kind=row["schedule_kind"],
        schedule=row["schedule"], skills=json.loads(row["skills"]),
        toolsets=json.loads(toolsets) if toolsets is not None else None, enabled=bool(row["enabled"]),
        created_at=row["created_at"], updated_at=row["updated_at"], next_run_at=row["next_run_at"],
        last_run_at=row["last_run_at"], last_status=row["last_status"], repeat_count=row["repeat_count"],
        repeat_limit=row["repeat_limit"], grace_seconds=row["grace_seconds"],
    )


def _run(row: sqlite3.Row) -> CronRun:
    return CronRun(
        id=row["id"], job_id=row["job_id"], trigger=row["trigger"], scheduled_for=row["scheduled_for"],
        started_at=row["started_at"], finished_at=row["finished_at"], status=row["status"],
        session_id=row["session_id"], output=row["output"], error=row["error"],
    )


def _column(key: str, value: Any) -> Any:
    if key in ("skills", "toolsets"):
        return None if value is None else json.dumps(list(value), ensure_ascii=False)
    if key == "enabled":
        return 1 if value else 0
    return value


class CronStore(SQLiteStore):
    """Jobs and runs in one SQLite file (see the module docstring); safe to share between threads."""

    @classmethod
    def open_default(cls) -> CronStore:
        """The store of the current HERMES_HOME (``state.db``)."""
        from hermes.config.paths import HermesPaths

        return cls(HermesPaths.current().database)

    def _translate(self, exc: sqlite3.Error) -> HermesError | None:
        if isinstance(exc, sqlite3.IntegrityError) and "cron_jobs.name" in str(exc):
            return CronJobExists("a cron job with that name already exists")
        return None

    # -- jobs -------------------------------------------------------------------------------------

    def add_job(
        self, *, name: str, prompt: str, schedule_kind: str, schedule: str, next_run_at: float | None,
        skills: list[str] | None = None, toolsets: list[str] | None = None, repeat_limit: int | None = None,
        grace_seconds: int | None = None, enabled: bool = True, now: float | None = None,
    ) -> CronJob:
        """Store a new job; raises :class:`CronJobExists` when the name is taken."""
        now = time.time() if now is None else now
        with self._writing("add a cron job") as conn:
            if conn.execute("SELECT 1 FROM cron_jobs WHERE name = ?", (name,)).fetchone() is not None:
                raise CronJobExists(f"a cron job named {name!r} already exists")
            job_id = secrets.token_hex(6)
            conn.execute(
                "INSERT INTO cron_jobs (id, name, prompt, schedule_kind, schedule, skills, toolsets, enabled,"
                " created_at, updated_at, next_run_at, repeat_limit, grace_seconds)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (job_id, name, prompt, schedule_kind, schedule, _column("skills", skills or []),
                 _column("toolsets", toolsets), int(enabled), now, now, next_run_at, repeat_limit, grace_seconds),
            )
            row = conn.execute("SELECT * FROM cron_jobs WHERE id = ?", (job_id,)).fetchone()
        return _job(row)

    def find_job(self, ref: str) -> CronJob | None:
        """The job whose id or name is ``ref``, or None."""
        with self._reading("read a cron job") as conn:
            row = conn.execute("SELECT * FROM cron_jobs WHERE id = ? OR name = ? ORDER BY id = ? DESC LIMIT 1",
                               (ref, ref, ref)).fetchone()
        return _job(row) if row is not None else None

    def get_job(self, ref: str) -> CronJob:
        """The job whose id or name is ``ref``; raises :class:`CronJobNotFound` naming the known jobs."""
        job = self.find_job(ref)
        if job is None:
            names = [j.name for j in self.list_jobs()]
            known = f"; known jobs: {', '.join(names[:20])}" if names else "; there are no cron jobs yet"
            raise CronJobNotFound(f"no cron job named {ref!r}{known}")
        return job

    def list_jobs(self) -> list[CronJob]:
        """Every job, by name."""
        with self._reading("list cron jobs") as conn:
            rows = conn.execute("SELECT * FROM cron_jobs ORDER BY name").fetchall()
        return [_job(r) for r in rows]

    def due_jobs(self, now: float) -> list[CronJob]:
        """Enabled jobs whose next fire time is at or before ``now``, earliest first."""
        with self._reading("list due cron jobs") as conn:
            rows = conn.execute(
                "SELECT * FROM cron_jobs WHERE enabled = 1 AND next_run_at IS NOT NULL AND next_run_at <= ?"
                " ORDER BY next_run_at, name",
                (now,),
            ).fetchall()
        return [_job(r) for r in rows]

    def update_job(self, job_id: str, **fields: Any) -> CronJob:
        """Change the given columns of a job (see :data:`UPDATABLE`) and return it."""
        unknown = set(fields) - UPDATABLE
        if unknown:
            raise StoreError(f"cannot update cron job column(s): {', '.join(sorted(unknown))}")
        with self._writing("update a cron job") as conn:
            if fields:
                sets = ", ".join(f"{k} = ?" for k in fields)
                values = [_column(k, v) for k, v in fields.items()]
                conn.execute(f"UPDATE cron_jobs SET {sets}, updated_at = ? WHERE id = ?",
                             (*values, time.time(), job_id))
            row = conn.execute("SELECT * FROM cron_jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise CronJobNotFound(f"no cron job with id {job_id!r}")
        return _job(row)

    def delete_job(self, job_id: str) -> None:
        """Remove a job and its run records."""
        with self._writing("remove a cron job") as conn:
            conn.execute("DELETE FROM cron_runs WHERE job_id = ?", (job_id,))
            conn.execute("DELETE FROM cron_jobs WHERE id = ?", (job_id,))

    def claim(
        self, job_id: str, *, expected_next: float | None, next_run_at: float | None, enabled: bool,
        repeat_count: int,
    ) -> bool:
        """Move a due job on to its next fire time, only if nobody else did (compare-and-swap).

        Returns False when ``next_run_at`` is no longer ``expected_next`` or the job was paused or
        removed meanwhile: another scheduler (or a person) got there first.
        """
        with self._writing("claim a cron job") as conn:
            cur = conn.execute(
                "UPDATE cron_jobs SET next_run_at = ?, enabled = ?, repeat_count = ?, updated_at = ?"
                " WHERE id = ? AND enabled = 1 AND next_run_at IS ?",
                (next_run_at, int(enabled), repeat_count, time.time(), job_id, expected_next),
            )
            return cur.rowcount == 1

    def set_last_run(self, job_id: str, *, at: float, status: str) -> None:
        """Record when the job last ran and how it went."""
        with self._writing("record a cron job result") as conn:
            conn.execute("UPDATE cron_jobs SET last_run_at = ?, last_status = ? WHERE id = ?", (at, status, job_id))

    # -- runs -------------------------------------------------------------------------------------

    def add_run(
        self, job_id: str, *, status: str, trigger: str = "schedule", scheduled_for: float | None = None,
        started_at: float | None = None, finished_at: float | None = None, session_id: str | None = None,
        output: str | None = None, error: str | None = None,
    ) -> int:
        """Insert a run record and return its id."""
        if status not in RUN_STATUSES:
            raise StoreError(f"unknown cron run status {status!r}")
        if trigger not in TRIGGERS:
            raise StoreError(f"unknown cron run trigger {trigger!r}")
        started = time.time() if started_at is None else started_at
        with self._writing("record a cron run") as conn:
            cur = conn.execute(
                "INSERT INTO cron_runs (job_id, trigger, scheduled_for, started_at, finished_at, status, session_id,"
                " output, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (job_id, trigger, scheduled_for, started, finished_at, status, session_id, output, error),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid

    def finish_run(
        self, run_id: int, *, status: str, finished_at: float | None = None, session_id: str | None = None,
        output: str | None = None, error: str | None = None,
    ) -> None:
        """Close a ``running`` record with its outcome."""
        if status not in RUN_STATUSES:
            raise StoreError(f"unknown cron run status {status!r}")
        with self._writing("finish a cron run") as conn:
            conn.execute(
                "UPDATE cron_runs SET status = ?, finished_at = ?, session_id = coalesce(?, session_id),"
                " output = ?, error = ? WHERE id = ?",
                (status, time.time() if finished_at is None else finished_at, session_id, output, error, run_id),
            )

    def runs(self, job_id: str, *, limit: int = 20) -> list[CronRun]:
        """The job's runs, newest first."""
        with self._reading("list cron runs") as conn:
            rows = conn.execute(
                "SELECT * FROM cron_runs WHERE job_id = ? ORDER BY started_at DESC, id DESC LIMIT ?",
                (job_id, max(limit, 0)),
            ).fetchall()
        return [_run(r) for r in rows]

    def get_run(self, run_id: int) -> CronRun:
        """One run record by id."""
        with self._reading("read a cron run") as conn:
            row = conn.execute("SELECT * FROM cron_runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no cron run with id {run_id}")
        return _run(row)

    def fail_stale_runs(self, *, message: str, trigger: str = "schedule") -> int:
        """Mark runs still ``running`` (left by a scheduler that died) as errors; returns how many."""
        with self._writing("close stale cron runs") as conn:
            cur = conn.execute(
                "UPDATE cron_runs SET status = 'error', finished_at = ?, error = ?"
                " WHERE status = 'running' AND trigger = ?",
                (time.time(), message, trigger),
            )
            return cur.rowcount

    # -- lifetime ---------------------------------------------------------------------------------
