"""The kanban board's tables, as ordered migrations for :func:`hermes.store.db.open_sqlite`.

The board is its own SQLite file (``HERMES_HOME/kanban.db``), shared by every process working on it: the
person's ``hermes kanban`` commands, orchestrator agents, workers and dispatchers. ``task_events`` is
append-only: triggers refuse updates and deletes, so the history of a task cannot be rewritten.
"""

from __future__ import annotations

import sqlite3

from hermes.store.migrations import Migration


def k001_board(conn: sqlite3.Connection) -> None:
    """Tasks, links, comments, attachments, runs and events."""
    for statement in (
        """
        CREATE TABLE tasks (
            id               TEXT PRIMARY KEY,
            title            TEXT NOT NULL,
            body             TEXT NOT NULL DEFAULT '',
            assignee         TEXT,
            status           TEXT NOT NULL,
            priority         INTEGER NOT NULL DEFAULT 0,
            created_by       TEXT NOT NULL,
            created_at       REAL NOT NULL,
            updated_at       REAL NOT NULL,
            idempotency_key  TEXT UNIQUE,
            workspace_kind   TEXT NOT NULL DEFAULT 'scratch',
            workspace_path   TEXT,
            block_kind       TEXT,
            block_reason     TEXT,
            result           TEXT,
            current_run_id   INTEGER,
            claimed_by       TEXT,
            last_heartbeat_at REAL,
            failures         INTEGER NOT NULL DEFAULT 0,
            retry_at         REAL
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
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            task_id    TEXT NOT NULL REFERENCES tasks(id),
            author     TEXT NOT NULL,
            body       TEXT NOT NULL,
            created_at REAL NOT NULL
        )
        """,
        """
        CREATE TABLE task_attachments (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            task_id      TEXT NOT NULL REFERENCES tasks(id),
            filename     TEXT NOT NULL,
            content_type TEXT NOT NULL,
            size         INTEGER NOT NULL,
            source_url   TEXT,
            uploaded_by  TEXT NOT NULL,
            stored_path  TEXT NOT NULL,
            created_at   REAL NOT NULL
        )
        """,
        """
        CREATE TABLE task_runs (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            task_id      TEXT NOT NULL REFERENCES tasks(id),
            attempt      INTEGER NOT NULL,
            profile      TEXT,
            claimed_by   TEXT NOT NULL,
            started_at   REAL NOT NULL,
            ended_at     REAL,
            heartbeat_at REAL,
            outcome      TEXT,
            summary      TEXT,
            error        TEXT,
            cost_usd     REAL,
            pid          INTEGER
        )
        """,
        "CREATE INDEX task_runs_task ON task_runs(task_id, id)",
        """
        CREATE TABLE task_events (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            task_id    TEXT NOT NULL REFERENCES tasks(id),
            kind       TEXT NOT NULL,
            actor      TEXT NOT NULL,
            author     TEXT NOT NULL,
            source     TEXT,
            target     TEXT,
            run_id     INTEGER,
            payload    TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL
        )
        """,
        "CREATE INDEX task_events_task ON task_events(task_id, id)",
        """
        CREATE TRIGGER task_events_no_update BEFORE UPDATE ON task_events
        BEGIN SELECT RAISE(ABORT, 'task_events is append-only'); END
        """,
        """
        CREATE TRIGGER task_events_no_delete BEFORE DELETE ON task_events
        BEGIN SELECT RAISE(ABORT, 'task_events is append-only'); END
        """,
    ):
        conn.execute(statement)


def k002_origin(conn: sqlite3.Connection) -> None:
    """Where a task was asked for (``session:<id>`` or ``chat:<platform>:<chat>:<thread>``), for notices."""
    conn.execute("ALTER TABLE tasks ADD COLUMN origin TEXT")


KANBAN_MIGRATIONS: tuple[Migration, ...] = (k001_board, k002_origin)
