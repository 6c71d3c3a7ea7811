"""Where the gateway keeps its state: SQLite by default, PostgreSQL and Redis for several hosts.

* :func:`open_database` — the gateway database: the SQLite file (``database``, default
  ``HERMES_HOME/toolgateway/gateway.db``), or PostgreSQL when ``database_url`` is set. Both are a
  :class:`~.base.Database`: the same SQL (``?`` placeholders), rows by name, a transaction block and a
  :class:`~.base.Dialect` for the few spellings that differ.
* :func:`open_limiter` — the per-token rate limiter: in this process's memory, or shared through Redis
  when ``redis_url`` is set.

The modules: :mod:`.base` (the interface, the dialects, :class:`~.base.StorageUnavailable`),
:mod:`.sqlite`, :mod:`.postgres` + :mod:`.pg_schema`, :mod:`.redis_limiter`, :mod:`.urls` (masking).
Nothing is imported until used: psycopg and redis-py only when their URL is configured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from hermes.toolgateway.config import GatewayConfig
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

    @staticmethod
    def retry_after(wait: float) -> int: ...


def _require(module: str, key: str) -> None:
    """A clear error instead of an ImportError when the ``scale`` extra is not installed."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        from hermes.errors import ConfigError

        raise ConfigError(f"{key} needs the {module} package: pip install 'hermes[scale]'")


def open_database(config: GatewayConfig) -> Database:
    """Open (creating and migrating if needed) the database ``config`` names."""
    if config.database_url:
        _require("psycopg", "database_url")
        from hermes.toolgateway.storage.postgres import PostgresDatabase

        return PostgresDatabase(config.database_url)
    from hermes.toolgateway.storage.sqlite import SQLiteDatabase
    from hermes.toolgateway.storage.sqlite_schema import connect

    return SQLiteDatabase(connect(config.db_path), str(config.db_path))


def open_limiter(config: GatewayConfig) -> Limiter:
    """The rate limiter ``config`` asks for: Redis-backed with ``redis_url``, else in this process."""
    rate = config.rate_limit
    if config.redis_url:
        _require("redis", "redis_url")
        from hermes.toolgateway.storage.redis_limiter import RedisRateLimiter

        return RedisRateLimiter(config.redis_url, rate.per_second, rate.burst)
    from hermes.toolgateway.storage.ratelimit import RateLimiter

    return RateLimiter(rate.per_second, rate.burst)
