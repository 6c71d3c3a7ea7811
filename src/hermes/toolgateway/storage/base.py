"""What the gateway's code sees of its database, whichever engine holds it.

A :class:`Database` runs SQL written once, in SQLite's spelling (``?`` placeholders), and returns a
:class:`Result` whose rows are addressable by column name and by position. The few places where the
engines disagree are spelled by the :class:`Dialect` (a scalar ``max``, a UTC day from a timestamp).

:class:`StorageUnavailable` is what a database or Redis that does not answer becomes: an HTTP 503 for a
request (``storage_unavailable`` / ``rate_limiter_unavailable``, generic text) and a one-line CLI error
(the detail, with any password masked: :mod:`~hermes.toolgateway.storage.urls`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from hermes.errors import StoreError
from hermes.toolgateway.errors import GatewayHTTPError
from hermes.toolgateway.storage.urls import mask_url, scrub

__all__ = ["POSTGRES", "SQLITE", "Database", "Dialect", "Result", "StorageUnavailable", "mask_url", "scrub"]


@dataclass(frozen=True)
class Dialect:
    """The spellings that differ between SQLite and PostgreSQL."""

    name: str
    greatest: str  # scalar max of two values: MAX(a, b) / GREATEST(a, b)
    day_template: str  # "YYYY-MM-DD" (UTC) of a unix-time column, {col} replaced

    def day(self, column: str) -> str:
        return self.day_template.format(col=column)


SQLITE = Dialect("sqlite", "MAX", "date({col}, 'unixepoch')")
POSTGRES = Dialect("postgresql", "GREATEST", "to_char(to_timestamp({col}) AT TIME ZONE 'UTC', 'YYYY-MM-DD')")


class Result(Protocol):
    """A statement's outcome: rows (by name and by index) and the number of rows changed."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Database(Protocol):
    """One connection to the gateway's database (used from one thread: the event loop's, or the CLI's)."""

    dialect: Dialect
    #: raised by a statement that breaks a UNIQUE/PRIMARY KEY/CHECK constraint
    integrity_error: type[Exception]
    #: the engine's base error class (``ready()`` checks)
    error: type[Exception]
    #: where the data lives, printable (passwords masked)
    label: str

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Result:
        """Run one statement written with ``?`` placeholders."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction: committed when the block ends, rolled back when it raises."""
        ...

    def close(self) -> None: ...


class StorageUnavailable(GatewayHTTPError, StoreError):
    """The database (or Redis) does not answer: 503 for a request, ``detail`` for the operator."""

    def __init__(self, detail: str, *, code: str = "storage_unavailable",
                 public: str = "the gateway's database does not answer; try again shortly") -> None:
        super().__init__(503, code, public, headers={"retry-after": "1"})
        self.detail = detail

    def __str__(self) -> str:
        return self.detail
