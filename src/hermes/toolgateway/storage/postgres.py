"""The PostgreSQL :class:`~hermes.toolgateway.storage.base.Database` (psycopg 3, synchronous).

Several gateway processes — on several hosts — share one database: accounts, tokens, device codes,
the usage log and the quota counters. Like the SQLite path, each process uses **one connection** from
the event loop's thread, in autocommit mode: every statement is its own transaction unless a
:meth:`PostgresDatabase.transaction` block groups some. Statements are the SQLite ones with ``?``
turned into ``%s`` (once per distinct statement, cached); psycopg prepares a statement on the server
after a few runs, so the relay hot path sends only parameters.

A lost connection (server restart, failover, idle cut) makes the statement that found out fail with
:class:`~hermes.toolgateway.storage.base.StorageUnavailable` (a 503 at the edge), and the next statement
reconnects. A statement is never re-sent on its own: it might have been applied before the
connection broke. Passwords in the URL never reach logs or errors (:func:`~.base.scrub`).

**A server that stops answering.** Statements run synchronously on the event loop's thread, so while
one waits nothing else in the process runs. The waits are bounded (:data:`SESSION_DEFAULTS`, each kept
when the URL sets it): TCP keepalives and ``tcp_user_timeout`` find a dead peer or an unacknowledged
send within a few seconds, and ``statement_timeout`` (5 s) makes the server cancel a statement stuck on
a lock; either ends as a 503. A value PostgreSQL cannot store (a NUL character in a text, a number out
of range) is :class:`~hermes.toolgateway.storage.base.InvalidValue`, a 400, not a server error.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from hermes.errors import StoreError
from hermes.store.postgres import CONNECT_TIMEOUT, Row, placeholders, session_options
from hermes.store.postgres import rows as _rows
from hermes.toolgateway.storage import pg_schema
from hermes.toolgateway.storage.base import (
    POSTGRES,
    InvalidValue,
    OutageNotice,
    Result,
    mask_url,
    scrub,
)

log = logging.getLogger("hermes.toolgateway")

_CACHE_LIMIT = 2048


class PostgresDatabase(OutageNotice):
    """A gateway database in PostgreSQL, opened (and migrated) from a ``postgresql://`` URL."""

    dialect = POSTGRES
    integrity_error: type[Exception] = psycopg.IntegrityError
    error: type[Exception] = psycopg.Error

    def __init__(self, url: str) -> None:
        self.url = url
        self.label = mask_url(url)
        self._sql: dict[str, str] = {}
        self._down = False
        self._conn: psycopg.Connection[Row] | None = None
        conn = self._live()
        try:
            self.migrated = pg_schema.migrate(conn)  # how many migrations this process applied
        except psycopg.OperationalError as exc:
            raise self._unavailable(exc) from None
        except psycopg.Error as exc:
            conn.close()
            raise StoreError(f"cannot prepare the gateway database {self.label}: {scrub(str(exc), url)}") from None

    # -- connection ----------------------------------------------------------------------------------
    def _live(self) -> psycopg.Connection[Row]:
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        if conn is not None:
            conn.close()
            self._conn = None
        try:
            conninfo = make_conninfo(self.url, **session_options(self.url))
            conn = psycopg.connect(conninfo, autocommit=True, row_factory=_rows, connect_timeout=CONNECT_TIMEOUT,
                                   application_name="hermes-toolgateway")
        except psycopg.OperationalError as exc:
            raise self._unavailable(exc) from None
        except psycopg.Error as exc:  # a malformed URL or option
            raise StoreError(f"cannot open the gateway database {self.label}: {scrub(str(exc), self.url)}") from None
        if self._down:
            log.warning("the gateway database %s answers again", self.label)
            self._down = False
        self._conn = conn
        return conn

    # -- Database ------------------------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Result:
        query = self._sql.get(sql)
        if query is None:
            if len(self._sql) >= _CACHE_LIMIT:
                self._sql.clear()
            query = self._sql[sql] = placeholders(sql)
        conn = self._live()
        try:
            return conn.execute(query, params or None)
        except psycopg.OperationalError as exc:
            raise self._unavailable(exc) from None
        except psycopg.DataError as exc:
            raise InvalidValue(f"the gateway database {self.label} refused a value: "
                               f"{scrub(str(exc).strip(), self.url)}") from None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        conn = self._live()
        try:
            with conn.transaction():
                yield
        except psycopg.OperationalError as exc:
            raise self._unavailable(exc) from None

    def connection(self) -> psycopg.Connection[Row]:
        """The live psycopg connection (reconnected if it broke), for bulk work such as ``migrate``."""
        return self._live()

    def ping(self) -> None:
        """Raise :class:`StorageUnavailable` unless the server answers a trivial query now."""
        self.execute("SELECT 1")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
