"""Schema migrations of the hermes SQLite store, as an ordered list of functions.

``MIGRATIONS[i]`` brings a database from ``PRAGMA user_version = i`` to ``i + 1``. :func:`migrate`
runs each pending one inside its own transaction, together with the ``user_version`` bump, so a crash
leaves the database at a whole version. Later features append functions (``m002_...``); a function
already released is never edited.

Migration functions run statements one by one with ``conn.execute`` — never ``executescript``,
which would commit the surrounding transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

Migration = Callable[[sqlite3.Connection], None]


def _run(conn: sqlite3.Connection, statements: Sequence[str]) -> None:
    for statement in statements:
        conn.execute(statement)


def m001_sessions(conn: sqlite3.Connection) -> None:
    """Sessions, their messages, and an FTS5 index over the messages' searchable text.

    ``messages.data`` is the exact OpenAI chat message as JSON; ``messages.text`` is the text extracted
    from it for search. ``messages_fts`` is an external-content FTS5 table over ``messages.text``
    (``content_rowid = id``), so the text is stored once; triggers keep the index in sync. Rows with
    empty text are not indexed (the triggers skip them on insert and on delete alike).
    """
    _run(conn, [
        """
        CREATE TABLE sessions (
            id            TEXT PRIMARY KEY,
            created_at    REAL NOT NULL,
            updated_at    REAL NOT NULL,
            surface       TEXT NOT NULL,
            model         TEXT NOT NULL,
            title         TEXT,
            message_count INTEGER NOT NULL DEFAULT 0,
            toolsets      TEXT NOT NULL DEFAULT '[]',
            tools         TEXT NOT NULL DEFAULT '[]',
            parent_id     TEXT REFERENCES sessions(id) ON DELETE SET NULL,
            meta          TEXT NOT NULL DEFAULT '{}'
        )
        """,
        "CREATE INDEX sessions_updated ON sessions(updated_at)",
        "CREATE INDEX sessions_surface_updated ON sessions(surface, updated_at)",
        "CREATE INDEX sessions_parent ON sessions(parent_id)",
        """
        CREATE TABLE messages (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            seq        INTEGER NOT NULL,
            role       TEXT NOT NULL,
            created_at REAL NOT NULL,
            data       TEXT NOT NULL,
            text       TEXT NOT NULL DEFAULT ''
        )
        """,
        "CREATE UNIQUE INDEX messages_session_seq ON messages(session_id, seq)",
        "CREATE INDEX messages_created ON messages(created_at)",
        """
        CREATE VIRTUAL TABLE messages_fts USING fts5(
            text,
            content = 'messages',
            content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        )
        """,
        """
        CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages WHEN new.text <> '' BEGIN
            INSERT INTO messages_fts(rowid, text) VALUES (new.id, new.text);
        END
        """,
        """
        CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages WHEN old.text <> '' BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
        END
        """,
        """
        CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, text)
                SELECT 'delete', old.id, old.text WHERE old.text <> '';
            INSERT INTO messages_fts(rowid, text)
                SELECT new.id, new.text WHERE new.text <> '';
        END
        """,
    ])


def m002_cron(conn: sqlite3.Connection) -> None:
    """Scheduled jobs (``cron_jobs``) and their runs (``cron_runs``), used by :mod:`hermes.store.cron`.

    ``schedule_kind`` is ``cron``, ``interval`` or ``once``; ``skills`` is a JSON list, ``toolsets`` a
    JSON list or NULL (the cron surface's default toolsets). ``next_run_at`` is NULL once a job has no
    fire time left. A run's ``status`` is ``running`` until it ends ``ok`` or ``error``;
    ``skipped_missed`` records missed fire times that were not run. Times are epoch seconds.
    """
    _run(conn, [
        """
        CREATE TABLE cron_jobs (
            id            TEXT PRIMARY KEY,
            name          TEXT NOT NULL UNIQUE,
            prompt        TEXT NOT NULL,
            schedule_kind TEXT NOT NULL CHECK (schedule_kind IN ('cron', 'interval', 'once')),
            schedule      TEXT NOT NULL,
            skills        TEXT NOT NULL DEFAULT '[]',
            toolsets      TEXT,
            enabled       INTEGER NOT NULL DEFAULT 1,
            created_at    REAL NOT NULL,
            updated_at    REAL NOT NULL,
            next_run_at   REAL,
            last_run_at   REAL,
            last_status   TEXT,
            repeat_count  INTEGER NOT NULL DEFAULT 0,
            repeat_limit  INTEGER,
            grace_seconds INTEGER
        )
        """,
        "CREATE INDEX cron_jobs_due ON cron_jobs(enabled, next_run_at)",
        """
        CREATE TABLE cron_runs (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            job_id        TEXT NOT NULL REFERENCES cron_jobs(id) ON DELETE CASCADE,
            trigger       TEXT NOT NULL DEFAULT 'schedule' CHECK (trigger IN ('schedule', 'manual')),
            scheduled_for REAL,
            started_at    REAL NOT NULL,
            finished_at   REAL,
            status        TEXT NOT NULL CHECK (status IN ('running', 'ok', 'error', 'skipped_missed')),
            session_id    TEXT,
            output        TEXT,
            error         TEXT
        )
        """,
        "CREATE INDEX cron_runs_job_started ON cron_runs(job_id, started_at)",
    ])


def m003_conversations(conn: sqlite3.Connection) -> None:
    """Which stored session each live conversation continues, and who may talk to the messaging gateway.

    ``conversations.key`` is a surface's conversation key (for messaging ``platform:chat:thread``);
    a restart resumes ``session_id`` for it (:mod:`hermes.store.conversations`). ``messaging_access``
    holds the people allowed by pairing (``platform`` + ``user_id``).
    """
    _run(conn, [
        """
        CREATE TABLE conversations (
            key        TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            updated_at REAL NOT NULL
        )
        """,
        """
        CREATE TABLE messaging_access (
            platform   TEXT NOT NULL,
            user_id    TEXT NOT NULL,
            user_name  TEXT,
            granted_at REAL NOT NULL,
            how        TEXT NOT NULL DEFAULT 'pairing',
            PRIMARY KEY (platform, user_id)
        )
        """,
    ])


#: Applied in order; index ``i`` upgrades ``user_version`` ``i`` → ``i + 1``. Append only.
MIGRATIONS: tuple[Migration, ...] = (m001_sessions, m002_cron, m003_conversations)


def schema_version() -> int:
    """The ``user_version`` a fully migrated database has."""
    return len(MIGRATIONS)


def migrate(conn: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Apply the pending migrations, each in its own transaction; return the resulting version.

    ``conn`` must be in autocommit mode (``isolation_level=None``). A database newer than this code
    (a higher ``user_version``) is left alone.
    """
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    while version < len(migrations):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-read under the write lock: another process may have migrated meanwhile.
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version < len(migrations):
                migrations[version](conn)
                version += 1
                conn.execute(f"PRAGMA user_version = {version:d}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return version
