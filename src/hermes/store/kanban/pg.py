"""The kanban board in PostgreSQL (``kanban.database_url``): one board shared by dispatchers, workers and
people on any number of machines.

:class:`PgBoard` is :class:`~hermes.store.kanban.board.Board` — the same methods, the same SQL (``?``
placeholders turned into ``%s``), the same state machine — over one psycopg connection per process. Where
SQLite has one writer at a time, PostgreSQL runs writers at once, so:

* a **claim** selects the best ready task ``FOR UPDATE SKIP LOCKED``: claimers on every machine lock
  different rows and never wait on each other, and the ``ready`` → ``running`` update happens under that
  row lock, so no task is claimed twice. A claim that counts running tasks (``max_running``,
  ``max_per_assignee``) first takes a transaction-level advisory lock, so the limits hold for all
  dispatchers together;
* every other write (create, link, move, finish, fail, comment, …) takes the board's advisory lock for its
  transaction — one at a time, like SQLite, so a cycle check or an idempotency key can never race — and
  locks the task row it changes (``FOR UPDATE``) against a claim or a heartbeat in flight;
* a claim is a **lease**: the worker's heartbeats renew it, and a dispatcher anywhere reclaims a running
  task whose last heartbeat is older than ``kanban.heartbeat_timeout_seconds`` (:meth:`Board.stale_runs`);
* a task becoming ready sends ``NOTIFY kanban_ready`` (delivered at commit); :meth:`PgBoard.wake_mark`
  counts those notifications on a second, listening connection, so a watching dispatcher wakes at once.

The schema is created on first use (``kanban_schema`` holds its version), under an advisory lock so two
processes starting together do not both create it. ``task_events`` is append-only here too (a trigger).
The board's files — attachments, scratch workspaces, worker logs — stay on each machine under
``HERMES_HOME/kanban/`` (``files``); only the rows are shared.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from hermes.errors import HermesError, StoreError
from hermes.store.kanban.board import ATTACHMENT_MAX_BYTES, Board
from hermes.store.postgres import CONNECT_TIMEOUT, Row, mask_url, placeholders, rows, scrub, session_options

#: pg_advisory_xact_lock keys: writes one at a time; claims that count running tasks one at a time
_BOARD_LOCK = 0x6B616E62  # "kanb"
_LIMITS_LOCK = 0x6B616E6C  # "kanl"
_CHANNEL = "kanban_ready"

_TABLES = (
    """
    CREATE TABLE tasks (
        id               TEXT PRIMARY KEY,
        title            TEXT NOT NULL,
        body             TEXT NOT NULL DEFAULT '',
        assignee         TEXT,
        status           TEXT NOT NULL,
        priority         INTEGER NOT NULL DEFAULT 0,
        created_by       TEXT NOT NULL,
        created_at       DOUBLE PRECISION NOT NULL,
        updated_at       DOUBLE PRECISION NOT NULL,
        idempotency_key  TEXT UNIQUE,
        workspace_kind   TEXT NOT NULL DEFAULT 'scratch',
        workspace_path   TEXT,
        block_kind       TEXT,
        block_reason     TEXT,
        result           TEXT,
        current_run_id   BIGINT,
        claimed_by       TEXT,
        last_heartbeat_at DOUBLE PRECISION,
        failures         INTEGER NOT NULL DEFAULT 0,
        retry_at         DOUBLE PRECISION
    )
    """,
    "CREATE INDEX tasks_ready ON tasks(status, priority DESC, created_at)",
    """
    CREATE TABLE task_links (
        parent_id TEXT NOT NULL REFERENCES tasks(id),
        child_id  TEXT NOT NULL REFERENCES tasks(id),
        PRIMARY KEY (parent_id, child_id),
        CHECK (parent_id <> child_id)
    )
    """,
    "CREATE INDEX task_links_child ON task_links(child_id)",
    """
    CREATE TABLE task_comments (
        id         BIGSERIAL PRIMARY KEY,
        task_id    TEXT NOT NULL REFERENCES tasks(id),
        author     TEXT NOT NULL,
        body       TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL
    )
    """,
    """
    CREATE TABLE task_attachments (
        id           BIGSERIAL PRIMARY KEY,
        task_id      TEXT NOT NULL REFERENCES tasks(id),
        filename     TEXT NOT NULL,
        content_type TEXT NOT NULL,
        size         BIGINT NOT NULL,
        source_url   TEXT,
        uploaded_by  TEXT NOT NULL,
        stored_path  TEXT NOT NULL,
        created_at   DOUBLE PRECISION NOT NULL
    )
    """,
    """
    CREATE TABLE task_runs (
        id           BIGSERIAL PRIMARY KEY,
        task_id      TEXT NOT NULL REFERENCES tasks(id),
        attempt      INTEGER NOT NULL,
        profile      TEXT,
        claimed_by   TEXT NOT NULL,
        started_at   DOUBLE PRECISION NOT NULL,
        ended_at     DOUBLE PRECISION,
        heartbeat_at DOUBLE PRECISION,
        outcome      TEXT,
        summary      TEXT,
        error        TEXT,
        cost_usd     DOUBLE PRECISION,
        pid          INTEGER
    )
    """,
    "CREATE INDEX task_runs_task ON task_runs(task_id, id)",
    """
    CREATE TABLE task_events (
        id         BIGSERIAL PRIMARY KEY,
        task_id    TEXT NOT NULL REFERENCES tasks(id),
        kind       TEXT NOT NULL,
        actor      TEXT NOT NULL,
        author     TEXT NOT NULL,
        source     TEXT,
        target     TEXT,
        run_id     BIGINT,
        payload    TEXT NOT NULL DEFAULT '{}',
        created_at DOUBLE PRECISION NOT NULL
    )
    """,
    "CREATE INDEX task_events_task ON task_events(task_id, id)",
    """
    CREATE FUNCTION task_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'task_events is append-only'; END $$
    """,
    "CREATE TRIGGER task_events_no_change BEFORE UPDATE OR DELETE ON task_events"
    " FOR EACH ROW EXECUTE FUNCTION task_events_append_only()",
)
#: each migration is a tuple of statements; the board's version is how many ran
MIGRATIONS: tuple[tuple[str, ...], ...] = (_TABLES, ("ALTER TABLE tasks ADD COLUMN origin TEXT",))


class _Connection:
    """A psycopg connection spoken to in SQLite's spelling: ``execute(sql_with_?, params)``."""

    def __init__(self, conn: psycopg.Connection[Row]) -> None:
        self.raw = conn
        self._sql: dict[str, str] = {}

    def execute(self, sql: str, params: Any = ()) -> psycopg.Cursor[Row]:
        query = self._sql.get(sql)
        if query is None:
            query = self._sql[sql] = placeholders(sql)
        return self.raw.execute(query, tuple(params) or None)


def _migrate(conn: _Connection) -> None:
    with conn.raw.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(?)", (_BOARD_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS kanban_schema (version INTEGER NOT NULL)")
        row = conn.execute("SELECT version FROM kanban_schema").fetchone()
        version = 0 if row is None else int(row[0])
        if row is None:
            conn.execute("INSERT INTO kanban_schema (version) VALUES (0)")
        for statements in MIGRATIONS[version:]:
            for statement in statements:
                conn.raw.execute(statement)
        conn.execute("UPDATE kanban_schema SET version = ?", (len(MIGRATIONS),))


class PgBoard(Board):
    """A board in PostgreSQL (see the module docstring). ``path`` is the local folder of its files."""

    def __init__(self, url: str, *, files: Path, attachment_max_bytes: int = ATTACHMENT_MAX_BYTES) -> None:
        self.url = url
        self.label = mask_url(url)
        self.files = files
        self.path = files
        self.attachment_max_bytes = attachment_max_bytes
        self._lock = threading.RLock()
        self._in_write = False
        self._listener: psycopg.Connection[Row] | None = None
        self._woken = 0
        self._db = _Connection(self._connect())
        try:
            _migrate(self._db)
        except psycopg.Error as exc:
            self._db.raw.close()
            raise StoreError(f"cannot prepare the kanban board {self.label}: {scrub(str(exc), url)}") from None

    def _connect(self) -> psycopg.Connection[Row]:
        try:
            conninfo = make_conninfo(self.url, **session_options(self.url, statement_timeout_ms=30_000))
            return psycopg.connect(conninfo, autocommit=True, row_factory=rows, connect_timeout=CONNECT_TIMEOUT,
                                   application_name="hermes-kanban")
        except psycopg.Error as exc:
            raise StoreError(f"cannot open the kanban board {self.label}: {scrub(str(exc).strip(), self.url)}"
                             ) from None

    def _live(self) -> _Connection:
        if self._db.raw.closed or self._db.raw.broken:
            self._db = _Connection(self._connect())
        return self._db

    def _failure(self, action: str, exc: psycopg.Error) -> HermesError:
        return StoreError(f"could not {action} on the kanban board {self.label}: {scrub(str(exc).strip(), self.url)}")

    # ---- the connection ------------------------------------------------------------------------

    @contextlib.contextmanager
    def _reading(self, action: str) -> Iterator[Any]:
        with self._lock:
            try:
                yield self._live()
            except psycopg.Error as exc:
                raise self._failure(action, exc) from None

    @contextlib.contextmanager
    def _writing(self, action: str, *, serial: bool = True) -> Iterator[Any]:
        with self._lock:
            conn = self._live()
            try:
                with conn.raw.transaction():
                    if serial:
                        conn.execute("SELECT pg_advisory_xact_lock(?)", (_BOARD_LOCK,))
                    self._in_write = True
                    try:
                        yield conn
                    finally:
                        self._in_write = False
            except psycopg.Error as exc:
                raise self._failure(action, exc) from None

    def _lock_clause(self) -> str:
        return " FOR UPDATE" if self._in_write else ""

    def _claim_clause(self) -> str:
        return " FOR UPDATE SKIP LOCKED"

    def _limits_lock(self, conn: Any) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(?)", (_LIMITS_LOCK,))

    # ---- waking dispatchers --------------------------------------------------------------------

    def _wake(self, conn: Any) -> None:
        conn.execute(f"NOTIFY {_CHANNEL}")

    def wake_mark(self) -> int:
        """How many ``kanban_ready`` notifications this process has seen (the first call starts listening)."""
        with self._lock:
            try:
                if self._listener is None or self._listener.closed or self._listener.broken:
                    self._listener = self._connect()
                    self._listener.execute(f"LISTEN {_CHANNEL}")
                for _ in self._listener.notifies(timeout=0):
                    self._woken += 1
            except psycopg.Error:  # dispatchers still pass every --interval seconds
                if self._listener is not None:
                    self._listener.close()
                self._listener = None
            return self._woken

    def worker_env(self) -> dict[str, str]:
        """Nothing: a worker opens the same board from the same ``kanban.database_url`` (or its variable)."""
        return {}

    def close(self) -> None:
        with self._lock:
            self._db.raw.close()
            if self._listener is not None:
                self._listener.close()
                self._listener = None
