"""What the gateway's code sees of its database, whichever engine holds it.

A :class:`Database` runs SQL written once, in SQLite's spelling (``?`` placeholders), and returns a
:class:`Result` whose rows are addressable by column name and by position. The few places where the
engines disagree are spelled by the :class:`Dialect` (a scalar ``max``, a UTC day from a timestamp).

The storage errors are plain store errors (:class:`StorageError`, a :class:`~hermes.errors.StoreError`):
a ``code`` and a generic ``public`` text for a client, the ``detail`` (any password masked:
:mod:`~hermes.toolgateway.storage.urls`) for the operator and the CLI. :class:`StorageUnavailable` is a
database or Redis that does not answer, :class:`InvalidValue` a value the database cannot store; the
gateway's edge turns them into answers (:func:`hermes.toolgateway.errors.refusal`: 503 and 400).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from hermes.errors import StoreError
from hermes.toolgateway.storage.urls import mask_url, scrub

__all__ = ["POSTGRES", "SQLITE", "Database", "Dialect", "InvalidValue", "Result", "StorageError", "StorageUnavailable",
           "mask_url", "scrub"]


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


class StorageError(StoreError):
    """A refusal of the storage layer: ``code`` and ``public`` (generic) for a client, ``detail`` for the operator."""

    def __init__(self, detail: str, *, code: str, public: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.public = public

    def __str__(self) -> str:
        return self.detail


class StorageUnavailable(StorageError):
    """The database (or Redis) does not answer: the request may succeed if tried again shortly."""

    def __init__(self, detail: str, *, code: str = "storage_unavailable",
                 public: str = "the gateway's database does not answer; try again shortly") -> None:
        super().__init__(detail, code=code, public=public)


class OutageNotice:
    """What a PostgreSQL client says when its database stops answering: one warning per outage (``_down`` is
    cleared by the owner once a connection works again), and the :class:`StorageUnavailable` to raise."""

    label: str
    url: str
    _down: bool

    def _unavailable(self, exc: BaseException) -> StorageUnavailable:
        import logging

        detail = f"the gateway database {self.label} does not answer: {scrub(str(exc).strip(), self.url)}"
        if not self._down:
            logging.getLogger("hermes.toolgateway").warning("%s", detail)
            self._down = True
        return StorageUnavailable(detail)


class InvalidValue(StorageError):
    """A value the database cannot store (psycopg ``DataError``: a NUL character, a number out of range)."""

    #: what the gateway answers for it (``refusal``); kept on the error, where callers have read it
    status = 400

    def __init__(self, detail: str) -> None:
        super().__init__(detail, code="invalid_request", public="the request holds a value that cannot be stored "
                         "(a NUL character, or a number out of range)")
