"""Opening hermes's SQLite files: connection settings and migrations.

:func:`open_sqlite` is the only place a SQLite connection is made — the sessions store's
(:func:`connect`, ``HERMES_HOME/state.db``) and the gateway server's own database
(:mod:`hermes.toolgateway.storage.sqlite`) — so every part of hermes sees the same pragmas: WAL journal,
``synchronous=NORMAL``, foreign keys on, a busy timeout, and a connection usable from worker threads
(callers serialise their own use of it with a lock). Each caller brings its own migrations and busy
timeout.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from hermes.errors import HermesError, StoreError
from hermes.store.migrations import MIGRATIONS, Migration, migrate

#: How long a statement waits for another writer's lock before failing, in milliseconds.
BUSY_TIMEOUT_MS = 5000


def open_sqlite(path: Path, migrations: Sequence[Migration], *, busy_timeout_ms: int = BUSY_TIMEOUT_MS,
                name: str = "database") -> sqlite3.Connection:
    """Open (creating if needed) the SQLite file at ``path`` with hermes's settings and apply ``migrations``.

    The one opener of every hermes SQLite file (the sessions store here, the gateway's own database in
    :mod:`hermes.toolgateway.storage.sqlite`): WAL journal, ``synchronous=NORMAL``, foreign keys on, a busy
    timeout of ``busy_timeout_ms`` (also the driver's lock wait), rows as :class:`sqlite3.Row`, autocommit
    mode (``isolation_level=None``: writers open their own ``BEGIN IMMEDIATE`` transactions) and usable from
    any thread. Raises :class:`~hermes.errors.StoreError` naming ``name`` and ``path`` when the file cannot be
    opened or migrated.
    """
    try:
        if not path.parent.exists():  # a folder made here holds sessions or a board: private (0700)
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(path.parent, 0o700)
    except OSError as exc:
        raise StoreError(f"cannot create the folder for the {name} {path}: {exc}") from exc
    try:
        conn = sqlite3.connect(
            str(path),
            timeout=busy_timeout_ms / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the {name} {path}: {exc}") from exc
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms:d}")
        _use_wal(conn, busy_timeout_ms)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn, migrations)
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot prepare the {name} {path}: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _use_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """``PRAGMA journal_mode = WAL``, tried again while another process holds the file's lock.

    Turning a new database to WAL takes an exclusive lock without SQLite's busy handler, so two
    processes opening a fresh file at once (a dispatcher's first workers on a new ``HERMES_HOME``) had
    one of them fail at once with "database is locked"; it now waits as for any other lock, up to
    ``busy_timeout_ms``.
    """
    deadline = time.monotonic() + busy_timeout_ms / 1000
    pause = 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # SQLITE_BUSY and its extended codes
            if code != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) the hermes database at ``path`` and bring its schema up to date.

    :func:`open_sqlite` with the store's migrations and :data:`BUSY_TIMEOUT_MS`.
    Raises :class:`~hermes.errors.StoreError` when the file cannot be opened or migrated.
    """
    return open_sqlite(path, MIGRATIONS)


class SQLiteStore:
    """One connection to a hermes SQLite file shared between threads, with locked read and write blocks.

    ``migrations`` names another file's own schema (default: the store's, for ``state.db``).
    Writes run in ``BEGIN IMMEDIATE`` transactions; SQLite errors become :class:`StoreError` naming
    the action. Subclasses translate particular errors (e.g. a unique name taken) with
    :meth:`_translate`.
    """

    def __init__(self, path: Path, migrations: Sequence[Migration] | None = None) -> None:
        self.path = path
        self._conn = connect(path) if migrations is None else open_sqlite(path, migrations)
        self._lock = threading.RLock()

    def _translate(self, exc: sqlite3.Error) -> HermesError | None:
        """A more precise error for ``exc`` than the generic StoreError, or None."""
        return None

    def _fail(self, action: str, exc: sqlite3.Error) -> HermesError:
        return self._translate(exc) or StoreError(f"could not {action} in {self.path}: {exc}")

    @contextlib.contextmanager
    def _reading(self, action: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise self._fail(action, exc) from exc

    @contextlib.contextmanager
    def _writing(self, action: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise self._fail(action, exc) from exc

    def close(self) -> None:
        """Close the connection (closing twice is harmless)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
