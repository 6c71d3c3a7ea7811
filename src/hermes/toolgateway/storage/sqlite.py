"""The SQLite :class:`~hermes.toolgateway.storage.base.Database`: the connection itself, nothing added.

:func:`connect` opens the gateway's file with hermes's one SQLite opener
(:func:`hermes.store.db.open_sqlite`: WAL, ``synchronous=NORMAL``, foreign keys, autocommit) with the
gateway's migrations (:mod:`.sqlite_schema`) and a longer busy timeout than the sessions store's
(:data:`BUSY_TIMEOUT_MS`: several gateway processes may write one file).

``execute`` *is* ``sqlite3.Connection.execute`` (bound once), so the relay hot path costs exactly what
it did before this layer existed; rows are ``sqlite3.Row`` (by name and by index).

The file holds account tokens' hashes, login links and usage, so it is private: created mode 0600
before SQLite opens it (SQLite gives its ``-wal`` and ``-shm`` files the database file's mode), and an
existing file and its ``-wal``/``-shm`` are set to 0600 at every open.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from hermes.store.db import open_sqlite
from hermes.toolgateway.storage.base import SQLITE, Database, Result
from hermes.toolgateway.storage.sqlite_schema import MIGRATIONS

#: How long a statement waits for another writer's lock before failing, in milliseconds.
BUSY_TIMEOUT_MS = 10_000


def _create_private(path: Path) -> None:
    """Create a missing database file with mode 0600 before SQLite opens it. An existing file is never
    opened here (``O_EXCL``): another connection of this process may hold SQLite's locks on it (see
    :func:`_make_private`)."""
    if os.name == "nt":
        return
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | getattr(os, "O_CLOEXEC", 0), 0o600))


def _make_private(path: Path) -> None:
    """The database file and its ``-wal``/``-shm`` companions: mode 0600, by name only.

    Never by opening them: closing any descriptor of a file drops every POSIX lock this process holds on
    it, SQLite's included. Without the lock that says "a connection is open here", the next other
    process to close the database (``hermes toolgateway tokens revoke`` while ``serve`` runs) thinks it
    was the last one, checkpoints and deletes the WAL, and the server's connection never sees another
    process's write again — a revoked token kept working until the server restarted.
    """
    if os.name == "nt":
        return
    for name in (str(path), f"{path}-wal", f"{path}-shm", f"{path}-journal"):
        with contextlib.suppress(FileNotFoundError, PermissionError):
            os.chmod(name, 0o600)


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) the gateway database at ``path`` (mode 0600) and migrate it.

    Raises :class:`~hermes.errors.StoreError` when the file cannot be opened or migrated.
    """
    _create_private(path)
    _make_private(path)
    conn = open_sqlite(path, MIGRATIONS, busy_timeout_ms=BUSY_TIMEOUT_MS, name="gateway database")
    _make_private(path)  # -wal and -shm exist now
    return conn


class SQLiteDatabase:
    """A gateway database in one SQLite file (see :func:`connect`)."""

    dialect = SQLITE
    integrity_error: type[Exception] = sqlite3.IntegrityError
    error: type[Exception] = sqlite3.Error
    execute: Callable[..., Result]

    def __init__(self, conn: sqlite3.Connection, label: str = "") -> None:
        self.conn = conn
        self.label = label
        self.execute = conn.execute

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on error): takes the write lock up front."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


def as_database(conn: Database | sqlite3.Connection) -> Database:
    """A :class:`Database` for ``conn``: a bare ``sqlite3.Connection`` is wrapped, anything else kept."""
    return SQLiteDatabase(conn) if isinstance(conn, sqlite3.Connection) else conn
