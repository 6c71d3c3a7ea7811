"""The SQLite :class:`~hermes.toolgateway.storage.base.Database`: the connection itself, nothing added.

``execute`` *is* ``sqlite3.Connection.execute`` (bound once), so the relay hot path costs exactly what
it did before this layer existed; rows are ``sqlite3.Row`` (by name and by index).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hermes.toolgateway.storage.base import SQLITE, Database, Result


class SQLiteDatabase:
    """A gateway database in one SQLite file (see :func:`hermes.toolgateway.storage.sqlite_schema.connect`)."""

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
