"""SQLite's usage batches, written by a thread of their own on a connection of their own.

With SQLite the usage row used to be committed on the event loop's thread before the answer left: about
120 µs a request, and every thousandth WAL page the commit also ran SQLite's automatic checkpoint, an
``fdatasync`` of the database file, on that thread. The gateway now journals SQLite's usage rows exactly as
PostgreSQL's (:mod:`.usage_journal`: written ahead before answering, inserted in batches, replayed after a
crash, counted once by ``usage.rid``), and :class:`ThreadedInsert` is the journal's insert: each batch is one
transaction on a second connection to the same file, run on one worker thread, so the batch's commit and
the checkpoints it triggers run off the event loop. The loop's own writes (the quota reservation) wait for a
batch's write lock while it lasts (``busy_timeout`` covers it, as it covers other processes).

A batch is **one statement** over a JSON array (``INSERT … SELECT … FROM json_each(?)``), committed by
itself: ``executemany`` inside ``BEGIN … COMMIT`` would release and take back the GIL once per row and
per statement, and against a busy event loop each take-back may wait for the interpreter's switch
interval (5 ms) while the write lock is held, stretching a 3 ms batch's lock to tens of milliseconds.
Now the lock is held only while SQLite runs the one statement, with the GIL released.

A batch the database refuses as a whole for one row's sake (a constraint; a value JSON cannot carry) is
written row by row instead, and the rows it still refuses are logged and dropped, so
one bad row never holds up the others. Any other failure (the file locked, the disk full) leaves nothing
half-done: the transaction is rolled back, the connection reopened at the next batch, and the journal
retries the batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from hermes.toolgateway.storage.usage_journal import COLUMNS, insert_params, insert_sql

__all__ = ["ThreadedInsert"]

log = logging.getLogger("hermes.toolgateway")

_FIELDS = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(COLUMNS)))
#: one batch, given as a JSON array of rows: inserted in order, idempotent, rows of deleted users dropped
BATCH_SQL = (f"INSERT INTO usage ({', '.join(COLUMNS)}) SELECT {_FIELDS} FROM json_each(?) "
             f"WHERE EXISTS (SELECT 1 FROM users WHERE id = json_extract(value, '$[{COLUMNS.index('user_id')}]')) "
             "ON CONFLICT (rid) DO NOTHING")


class ThreadedInsert:
    """``await insert(rows)``: one idempotent batch into the SQLite file at ``path``, off the event loop."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._row_sql = insert_sql()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="usage-insert")
        self._conn: sqlite3.Connection | None = None  # opened, used and closed on the worker thread only

    async def __call__(self, rows: Sequence[Sequence[Any]]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._executor, self._insert, list(rows))

    def _insert(self, rows: list[Sequence[Any]]) -> None:
        if self._conn is None:
            from hermes.toolgateway.storage.sqlite import connect

            self._conn = connect(self.path)
        conn = self._conn
        try:
            try:
                # one statement, its own transaction: the write lock is held only while SQLite runs it, with
                # the interpreter's lock released (a BEGIN … COMMIT around it would hold the write lock
                # while this thread waits to take the interpreter's lock back from a busy event loop)
                conn.execute(BATCH_SQL, (orjson.dumps(rows).decode("utf-8"),))  # text: a blob would read as JSONB
            except (sqlite3.IntegrityError, ValueError, TypeError):  # a row the database or JSON cannot take
                conn.execute("BEGIN IMMEDIATE")
                self._one_by_one(conn, rows)
                conn.execute("COMMIT")
        except BaseException:
            self._reset(conn)
            raise

    def _one_by_one(self, conn: sqlite3.Connection, rows: list[Sequence[Any]]) -> None:
        """The batch row by row, each under a savepoint; a row the database refuses is logged and dropped."""
        for row in rows:
            conn.execute("SAVEPOINT usage_row")
            try:
                conn.execute(self._row_sql, insert_params(row))
            except sqlite3.IntegrityError as exc:
                conn.execute("ROLLBACK TO usage_row")
                log.warning("usage journal: a usage row the database refuses was dropped (%s): %r", exc, list(row))
            conn.execute("RELEASE usage_row")

    def _reset(self, conn: sqlite3.Connection) -> None:
        """After a failure: nothing half-done stays, and the next batch starts on a fresh connection."""
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        with contextlib.suppress(sqlite3.Error):
            conn.close()
        self._conn = None

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def close(self) -> None:
        """Close the connection (on its thread) and stop the thread; call after the journal's last flush."""
        await asyncio.get_running_loop().run_in_executor(self._executor, self._close)
        self._executor.shutdown(wait=True)
