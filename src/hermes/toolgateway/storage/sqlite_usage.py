"""SQLite's usage batches, written by a thread of their own on a connection of their own.

With SQLite the usage row used to be committed on the event loop's thread before the answer left: about
120 µs a request, and every thousandth WAL page the commit also ran SQLite's automatic checkpoint, an
``fdatasync`` of the database file, on that thread. The gateway now journals SQLite's usage rows exactly as
PostgreSQL's (:mod:`.usage_journal`: written ahead before answering, inserted in batches, replayed after a
crash, counted once by ``usage.rid``), and :class:`ThreadedInsert` is the journal's insert: each batch is one
transaction on a second connection to the same file, run on one worker thread, so neither the commit nor a
checkpoint ever holds the event loop. The loop's own writes (the quota reservation) wait for a batch's
write lock at most as long as the batch's commit (``busy_timeout`` covers it, as it covers other processes).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hermes.toolgateway.storage.usage_journal import insert_params, insert_sql

__all__ = ["ThreadedInsert"]


class ThreadedInsert:
    """``await insert(rows)``: one idempotent batch into the SQLite file at ``path``, off the event loop."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._statement = insert_sql()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="usage-insert")
        self._conn: sqlite3.Connection | None = None  # opened, used and closed on the worker thread only

    async def __call__(self, rows: Sequence[Sequence[Any]]) -> None:
        batch = [insert_params(row) for row in rows]
        await asyncio.get_running_loop().run_in_executor(self._executor, self._insert, batch)

    def _insert(self, batch: list[tuple[Any, ...]]) -> None:
        if self._conn is None:
            from hermes.toolgateway.storage.sqlite import connect

            self._conn = connect(self.path)
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(self._statement, batch)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def close(self) -> None:
        """Close the connection (on its thread) and stop the thread; call after the journal's last flush."""
        await asyncio.get_running_loop().run_in_executor(self._executor, self._close)
        self._executor.shutdown(wait=True)
