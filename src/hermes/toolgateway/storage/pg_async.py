"""PostgreSQL for the relay hot path: psycopg's async API with a small pool of connections.

The synchronous :class:`~hermes.toolgateway.storage.postgres.PostgresDatabase` stays the gateway's
``conn`` for everything that is not on every request (the portal, the admin views, uploads, jobs).
What every relayed request needs — the token and user row, the quota reservation, its refund and the
usage batches — goes through :class:`AsyncPool`, so a slow statement waits for its own request only and
the event loop keeps serving the others.

The pool holds up to :data:`POOL_SIZE` connections, opened when first needed and with the same session
options as the synchronous one (keepalives, ``tcp_user_timeout``, ``statement_timeout``). A connection
that breaks is dropped (never reused) and the statement that found out fails with
:class:`~hermes.toolgateway.storage.base.StorageUnavailable` — a 503 at the edge; a statement is never
re-sent on its own, since it might have been applied. Statements are the SQLite spelling (``?``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from hermes.store.postgres import CONNECT_TIMEOUT, Row, placeholders, session_options
from hermes.store.postgres import rows as _rows
from hermes.toolgateway.storage.base import InvalidValue, OutageNotice, StorageUnavailable, mask_url, scrub

POOL_SIZE = 4


class AsyncPool(OutageNotice):
    """Up to ``size`` async connections to ``url``, each used by one statement (or batch) at a time."""

    def __init__(self, url: str, size: int = POOL_SIZE) -> None:
        self.url = url
        self.label = mask_url(url)
        self.size = size
        self._idle: list[psycopg.AsyncConnection[Row]] = []
        self._open = 0
        self._freed = asyncio.Condition()
        self._sql: dict[str, str] = {}
        self._down = False

    def _query(self, sql: str) -> str:
        query = self._sql.get(sql)
        if query is None:
            query = self._sql[sql] = placeholders(sql)
        return query

    async def _connect(self) -> psycopg.AsyncConnection[Row]:
        conninfo = make_conninfo(self.url, **session_options(self.url))
        try:
            conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True, row_factory=_rows,
                                                         connect_timeout=CONNECT_TIMEOUT,
                                                         application_name="hermes-toolgateway")
        except psycopg.Error as exc:
            raise self._unavailable(exc) from None
        self._down = False
        return conn

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Row]]:
        """A connection for one unit of work; a broken one is closed instead of returned."""
        async with self._freed:
            while not self._idle and self._open >= self.size:
                await self._freed.wait()
            conn = self._idle.pop() if self._idle else None
            if conn is None:
                self._open += 1
        if conn is None:
            try:
                conn = await self._connect()
            except BaseException:
                await self._release(None)
                raise
        try:
            yield conn
        except psycopg.OperationalError as exc:
            await conn.close()
            await self._release(None)
            await self._drop_idle()  # a restarted or failed-over server took the others with it
            raise self._unavailable(exc) from None
        except psycopg.DataError as exc:
            await self._release(conn)
            raise InvalidValue(f"the gateway database {self.label} refused a value: "
                               f"{scrub(str(exc).strip(), self.url)}") from None
        except BaseException:
            if conn.broken or conn.closed:
                await self._release(None)
            else:
                await self._release(conn)
            raise
        else:
            await self._release(None if conn.broken or conn.closed else conn)

    async def _release(self, conn: psycopg.AsyncConnection[Row] | None) -> None:
        async with self._freed:
            if conn is None:
                self._open -= 1
            else:
                self._idle.append(conn)
            self._freed.notify()

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first row of one statement (``?`` placeholders), or None."""
        async with self.connection() as conn:
            cur = await conn.execute(self._query(sql), params or None)
            return await cur.fetchone()

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; the number of rows it changed."""
        async with self.connection() as conn:
            cur = await conn.execute(self._query(sql), params or None)
            return int(cur.rowcount)

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each of ``rows`` in one transaction (psycopg pipelines them)."""
        async with self.connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.executemany(self._query(sql), rows)

    async def _drop_idle(self) -> None:
        async with self._freed:
            idle, self._idle = self._idle, []
            self._open -= len(idle)
            self._freed.notify_all()
        for conn in idle:
            await conn.close()

    async def close(self) -> None:
        await self._drop_idle()


class ChangeListener:
    """``LISTEN`` on ``channel`` over a connection of its own; ``on_change()`` for every notification.

    :attr:`live` is False until the first ``LISTEN`` is in place and while the connection is down (it is
    re-opened every :data:`RELISTEN_DELAY` seconds); each (re)connect also calls ``on_change()``, since
    anything may have changed while nobody listened.
    """

    RELISTEN_DELAY = 1.0

    def __init__(self, url: str, channel: str, on_change: Callable[[], None]) -> None:
        self.url = url
        self.channel = channel
        self.on_change = on_change
        self.live = False
        self._task: asyncio.Task[None] | None = None
        self._conn: psycopg.AsyncConnection[Any] | None = None

    async def start(self) -> None:
        """Listen now (raises :class:`StorageUnavailable` if the database does not answer), then in the background."""
        await self._listen()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="auth-change-listener")

    async def _listen(self) -> None:
        conninfo = make_conninfo(self.url, **session_options(self.url))
        try:
            conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT,
                                                         application_name="hermes-toolgateway-listen")
            await conn.execute(f"LISTEN {self.channel}")
        except psycopg.Error as exc:
            raise StorageUnavailable(f"cannot listen on {mask_url(self.url)}: {scrub(str(exc).strip(), self.url)}") \
                from None
        self._conn = conn
        self.on_change()
        self.live = True

    async def _run(self) -> None:
        while True:
            conn = self._conn
            try:
                if conn is None:
                    await self._listen()
                    continue
                async for _ in conn.notifies():
                    self.on_change()
            except (psycopg.Error, StorageUnavailable):
                pass
            self.live = False
            if self._conn is not None:
                await self._conn.close()
                self._conn = None
            await asyncio.sleep(self.RELISTEN_DELAY)

    async def close(self) -> None:
        self.live = False
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
