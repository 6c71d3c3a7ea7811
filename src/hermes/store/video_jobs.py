"""Video renders that outlive a turn: :class:`VideoJobStore` over ``HERMES_HOME/video_jobs.db`` (T-VGEN).

A paid render is written here before its polling starts, so a crash or a restart resumes polling the
vendor's job instead of paying for a second one:

1. ``submitting`` — the row exists before the vendor is asked (backend, model, request, cost estimate,
   session); a row left in this state means a process died while submitting;
2. ``queued`` / ``running`` — the vendor accepted: its job id and the handle that any process can poll
   with are stored, then each poll updates the state, queue position and progress;
3. ``done`` (with the saved file) or ``failed`` (with the error).

``route`` is ``gateway`` or ``byok``: a job is polled again only over the kind of route it was paid on.

``fingerprint`` identifies "the same call" (backend, model, kind and request): an unfinished job with the
same fingerprint is resumed rather than submitted again. The file has its own schema (WAL, like every
hermes SQLite file, opened by :func:`hermes.store.db.open_sqlite`).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.store.db import SQLiteStore
from hermes.store.migrations import Migration

FILE_NAME = "video_jobs.db"
STATES = ("submitting", "queued", "running", "done", "failed")
UNFINISHED = ("submitting", "queued", "running")


def _m001_video_jobs(conn: sqlite3.Connection) -> None:
    conn.execute("""
        CREATE TABLE video_jobs (
            id TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,
            kind TEXT NOT NULL,
            backend TEXT NOT NULL,
            route TEXT NOT NULL,
            model TEXT NOT NULL,
            request TEXT NOT NULL,
            cost_estimate REAL,
            session_id TEXT,
            state TEXT NOT NULL,
            vendor_job_id TEXT,
            handle TEXT,
            queue_position INTEGER,
            progress INTEGER,
            message TEXT,
            error TEXT,
            result_path TEXT,
            result_url TEXT,
            polls INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )""")
    conn.execute("CREATE INDEX video_jobs_fingerprint ON video_jobs (fingerprint, state)")
    conn.execute("CREATE INDEX video_jobs_created ON video_jobs (created_at)")


MIGRATIONS: tuple[Migration, ...] = (_m001_video_jobs,)


@dataclass(frozen=True)
class VideoJob:
    """One stored render."""

    id: str
    fingerprint: str
    kind: str
    backend: str
    route: str
    model: str
    request: dict[str, Any]
    cost_estimate: float | None
    session_id: str | None
    state: str
    vendor_job_id: str | None
    handle: dict[str, Any] | None
    queue_position: int | None
    progress: int | None
    message: str | None
    error: str | None
    result_path: str | None
    result_url: str | None
    polls: int
    created_at: float
    updated_at: float

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed")

    def to_json(self) -> dict[str, Any]:
        """The job as ``hermes video jobs --json`` shows it (the handle stays out: it holds vendor URLs)."""
        return {"id": self.id, "kind": self.kind, "backend": self.backend, "route": self.route, "model": self.model,
                "state": self.state,
                "vendor_job_id": self.vendor_job_id, "cost_estimate_usd": self.cost_estimate,
                "session_id": self.session_id, "queue_position": self.queue_position, "progress": self.progress,
                "message": self.message, "error": self.error, "path": self.result_path, "url": self.result_url,
                "prompt": self.request.get("prompt"), "polls": self.polls, "created_at": self.created_at,
                "updated_at": self.updated_at}


def _job(row: sqlite3.Row) -> VideoJob:
    values = dict(row)
    values["request"] = json.loads(values["request"])
    values["handle"] = json.loads(values["handle"]) if values["handle"] else None
    return VideoJob(**values)


class VideoJobStore(SQLiteStore):
    """The video jobs of one HERMES_HOME (``HERMES_HOME/video_jobs.db``)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, MIGRATIONS)

    @classmethod
    def in_home(cls, home: Path) -> VideoJobStore:
        return cls(home / FILE_NAME)

    def create(self, *, fingerprint: str, kind: str, backend: str, route: str, model: str, request: Mapping[str, Any],
               cost_estimate: float | None, session_id: str | None) -> VideoJob:
        """A new job in state ``submitting`` (written before the vendor is asked)."""
        job_id = f"vid_{secrets.token_hex(6)}"
        now = time.time()
        with self._writing("store a video job") as conn:
            conn.execute(
                "INSERT INTO video_jobs (id, fingerprint, kind, backend, route, model, request, cost_estimate, "
                "session_id, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'submitting', ?, ?)",
                (job_id, fingerprint, kind, backend, route, model, json.dumps(dict(request), ensure_ascii=False),
                 cost_estimate, session_id, now, now))
        return self.get(job_id)

    def get(self, job_id: str) -> VideoJob:
        from hermes.errors import StoreError

        with self._reading("read a video job") as conn:
            row = conn.execute("SELECT * FROM video_jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise StoreError(f"no video job {job_id!r}")
        return _job(row)

    def find(self, job_id: str) -> VideoJob | None:
        with self._reading("read a video job") as conn:
            row = conn.execute("SELECT * FROM video_jobs WHERE id = ? OR vendor_job_id = ?",
                               (job_id, job_id)).fetchone()
        return _job(row) if row is not None else None

    def unfinished(self, fingerprint: str | None = None, *, since: float = 0.0) -> list[VideoJob]:
        """Unfinished jobs (of ``fingerprint`` when given) created after ``since``, oldest first."""
        sql = "SELECT * FROM video_jobs WHERE state IN ('submitting', 'queued', 'running') AND created_at >= ?"
        params: list[Any] = [since]
        if fingerprint is not None:
            sql += " AND fingerprint = ?"
            params.append(fingerprint)
        with self._reading("list video jobs") as conn:
            rows = conn.execute(sql + " ORDER BY created_at", params).fetchall()
        return [_job(r) for r in rows]

    def recent(self, limit: int = 50) -> list[VideoJob]:
        with self._reading("list video jobs") as conn:
            rows = conn.execute("SELECT * FROM video_jobs ORDER BY created_at DESC LIMIT ?", (limit,)).fetchall()
        return [_job(r) for r in rows]

    def submitted(self, job_id: str, vendor_job_id: str, handle: Mapping[str, Any]) -> None:
        """The vendor accepted the job: store its id and polling handle (state ``queued``)."""
        with self._writing("store a submitted video job") as conn:
            conn.execute("UPDATE video_jobs SET state = 'queued', vendor_job_id = ?, handle = ?, updated_at = ? "
                         "WHERE id = ?", (vendor_job_id, json.dumps(dict(handle)), time.time(), job_id))

    def polled(self, job_id: str, state: str, *, queue_position: int | None = None, progress: int | None = None,
               message: str | None = None) -> None:
        """One poll's answer (``queued`` or ``running``)."""
        with self._writing("update a video job") as conn:
            conn.execute("UPDATE video_jobs SET state = ?, queue_position = ?, progress = ?, message = ?, "
                         "polls = polls + 1, updated_at = ? WHERE id = ? AND state NOT IN ('done', 'failed')",
                         (state, queue_position, progress, message, time.time(), job_id))

    def finish(self, job_id: str, *, path: str | None = None, url: str | None = None,
               error: str | None = None) -> None:
        """``done`` with the saved file, or ``failed`` with ``error``."""
        state = "failed" if error is not None else "done"
        with self._writing("finish a video job") as conn:
            conn.execute("UPDATE video_jobs SET state = ?, result_path = ?, result_url = ?, error = ?, "
                         "queue_position = NULL, updated_at = ? WHERE id = ?",
                         (state, path, url, error, time.time(), job_id))
