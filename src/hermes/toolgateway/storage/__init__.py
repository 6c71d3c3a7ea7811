"""Where the gateway keeps its state: SQLite by default, PostgreSQL and Redis for several hosts.

* :func:`open_database` — the gateway database: the SQLite file (the config's ``database``, default
  ``HERMES_HOME/toolgateway/gateway.db``), or PostgreSQL when a ``database_url`` is given. Both are a
  :class:`~.base.Database`: the same SQL (``?`` placeholders), rows by name, a transaction block and a
  :class:`~.base.Dialect` for the few spellings that differ.
* :func:`open_limiter` — the per-token rate limiter: in this process's memory, or shared through Redis
  when a ``redis_url`` is given.

The modules: :mod:`.base` (the interface, the dialects, the storage errors), :mod:`.sqlite` +
:mod:`.sqlite_schema`, :mod:`.postgres` + :mod:`.pg_schema`, :mod:`.ratelimit` (in memory),
:mod:`.redis_limiter` (with :mod:`.redis_lease`, :mod:`.redis_watch` and the lean client :mod:`.resp`),
:mod:`.urls` (masking), :mod:`.pg_async` (the relay hot path's async PostgreSQL pool),
:mod:`.usage_journal` (usage rows batched off the request path), :mod:`.copy_to_pg` (``migrate``);
and the stores on top of a :class:`~.base.Database`:
:mod:`.metering` (quotas, usage), :mod:`.jobs` (who started which vendor job), :mod:`.connector_store`
(connector accounts), :mod:`.uploads` (the shared origin's files). Nothing here imports the gateway's
upper modules (config, relays, portal): they hand in plain values. Nothing is imported until used:
psycopg and redis-py only when their URL is configured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from hermes.toolgateway.storage.base import Database


class Limiter(Protocol):
    """What the relays use of a rate limiter (``gateway.limiter``)."""

    rate: float
    burst: int

    @property
    def enabled(self) -> bool: ...

    def acquire(self, key: str, cost: float = 1.0) -> float:
        """0.0 when ``cost`` tokens were taken for ``key``, else the seconds to wait."""
        ...

    async def acquire_and_version(self, key: str, cost: float = 1.0) -> tuple[float, int | None]:
        """:meth:`acquire` and, when the limiter is shared (Redis), the revocation version, in one round trip."""
        ...

    @staticmethod
    def retry_after(wait: float) -> int: ...


def _require(module: str, key: str) -> None:
    """A clear error instead of an ImportError when the ``scale`` extra is not installed."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        from hermes.errors import ConfigError

        raise ConfigError(f"{key} needs the {module} package: pip install 'hermes[scale]'")


def open_database(database_url: str | None, db_path: Path) -> Database:
    """Open (creating and migrating if needed) PostgreSQL at ``database_url``, or else the SQLite file."""
    if database_url:
        _require("psycopg", "database_url")
        from hermes.toolgateway.storage.postgres import PostgresDatabase

        return PostgresDatabase(database_url)
    from hermes.toolgateway.storage.sqlite import SQLiteDatabase, connect

    return SQLiteDatabase(connect(db_path), str(db_path))


def open_limiter(redis_url: str | None, per_second: float, burst: int) -> Limiter:
    """A rate limiter of ``per_second`` and ``burst``: Redis-backed with ``redis_url``, else in this process."""
    if redis_url:
        _require("redis", "redis_url")
        from hermes.toolgateway.storage.redis_limiter import RedisRateLimiter

        return RedisRateLimiter(redis_url, per_second, burst)
    from hermes.toolgateway.storage.ratelimit import RateLimiter

    return RateLimiter(per_second, burst)
