"""Opening the hermes SQLite database: connection settings and migrations.

:func:`connect` is the only place a store connection is made, so every part of hermes (sessions now;
memory, cron and kanban later) sees the same pragmas: WAL journal, ``synchronous=NORMAL``, foreign
keys on, a busy timeout, and a connection usable from worker threads (callers serialise their own
use of it with a lock).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hermes.errors import StoreError
from hermes.store.migrations import migrate

#: How long a statement waits for another writer's lock before failing, in milliseconds.
BUSY_TIMEOUT_MS = 5000


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) the database at ``path`` and bring its schema up to date.

    The connection is in autocommit mode (``isolation_level=None``): writers open their own
    transactions with ``BEGIN IMMEDIATE``. Rows come back as :class:`sqlite3.Row`.
    Raises :class:`~hermes.errors.StoreError` when the file cannot be opened or migrated.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the folder for the database {path}: {exc}") from exc
    try:
        conn = sqlite3.connect(
            str(path),
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the database {path}: {exc}") from exc
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS:d}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot prepare the database {path}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn
