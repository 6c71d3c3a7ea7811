"""The gateway's shared resources in one place: config, clock, database, accounts, OAuth, auth, meter,
limiter, HTTP client.

:class:`Gateway` holds resources only: it builds no relay and knows none. It is created by
:func:`hermes.toolgateway.app.create_app` and opened by the app's lifespan (:meth:`Gateway.start`:
database, secrets, the one shared ``httpx.AsyncClient``), which then builds the relay table
(:func:`hermes.toolgateway.relays.build_relays`) from it; every relay takes this object for what it
shares. The CLI opens only the database part (:meth:`Gateway.open`) to manage users and tokens.

All database work happens on the event loop's thread with one connection — to the SQLite file, or to
PostgreSQL when ``database_url`` is set (:mod:`hermes.toolgateway.storage`): statements are short
(indexed lookups, single-row writes), and a quota decision is one atomic statement, so there is
nothing to gain from a thread pool and a lot of latency to lose. The rate limiter keeps its buckets in
this process, or in Redis when ``redis_url`` is set, so that every process behind one address shares
them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from hermes.toolgateway.config import GatewayConfig
from hermes.toolgateway.portal import keys
from hermes.toolgateway.portal.accounts import Accounts
from hermes.toolgateway.portal.auth import Authenticator
from hermes.toolgateway.portal.oauth import OAuth
from hermes.toolgateway.storage import Limiter, open_database, open_limiter
from hermes.toolgateway.storage.base import Database, StorageUnavailable
from hermes.toolgateway.storage.metering import Meter

if TYPE_CHECKING:
    import httpx


class Gateway:
    """Resources of one gateway process."""

    def __init__(self, config: GatewayConfig, *, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self._conn: Database | None = None
        self._accounts: Accounts | None = None
        self._oauth: OAuth | None = None
        self._auth: Authenticator | None = None
        self._meter: Meter | None = None
        self._http: httpx.AsyncClient | None = None
        self.admin_token = ""
        self.limiter: Limiter = open_limiter(config.redis_url, config.rate_limit.per_second, config.rate_limit.burst)

    # -- lifecycle -----------------------------------------------------------------------------------
    def open(self) -> Gateway:
        """Open the database and load (or create) the signing secret and the admin token."""
        if self._conn is None:
            secret = keys.signing_secret(self.config.secret_path)
            self.admin_token = keys.admin_token(self.config.admin_token_path, self.config.admin_token)
            self._conn = open_database(self.config.database_url, self.config.db_path)
            self._accounts = Accounts(self._conn, self.config, secret, self.clock)
            self._oauth = OAuth(self._accounts)
            self._auth = Authenticator(self._accounts, self.clock)
            self._meter = Meter(self._conn)
        return self

    def check_services(self) -> None:
        """Raise :class:`StorageUnavailable` (a one-line error naming the masked URL) unless Redis answers,
        when configured; the database already answered in :meth:`open`. ``serve`` calls it before binding."""
        ping = getattr(self.limiter, "ping", None)
        if ping is not None:
            ping()

    async def start(self) -> None:
        """Everything :meth:`open` does, plus the shared HTTP client."""
        import httpx

        self.open()
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(30.0, connect=10.0),
            limits=httpx.Limits(max_connections=512, max_keepalive_connections=128, keepalive_expiry=30.0),
            follow_redirects=False,
            trust_env=False,
            headers={"user-agent": "hermes-toolgateway/1"},
        )

    async def close(self) -> None:
        """Close the HTTP client, the limiter and the database (after in-flight requests and the relays)."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        close_limiter = getattr(self.limiter, "close", None)
        if close_limiter is not None:
            close_limiter()
        self.close_db()

    def close_db(self) -> None:
        """Close the database connection (what :meth:`open` opened)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
            self._accounts = self._oauth = self._auth = self._meter = None

    # -- parts ---------------------------------------------------------------------------------------
    @property
    def conn(self) -> Database:
        """The database: ``conn.execute(sql_with_?_placeholders, params)`` works on SQLite and PostgreSQL."""
        if self._conn is None:
            raise RuntimeError("the gateway is not open")
        return self._conn

    @property
    def accounts(self) -> Accounts:
        if self._accounts is None:
            raise RuntimeError("the gateway is not open")
        return self._accounts

    @property
    def oauth(self) -> OAuth:
        if self._oauth is None:
            raise RuntimeError("the gateway is not open")
        return self._oauth

    @property
    def auth(self) -> Authenticator:
        if self._auth is None:
            raise RuntimeError("the gateway is not open")
        return self._auth

    @property
    def meter(self) -> Meter:
        if self._meter is None:
            raise RuntimeError("the gateway is not open")
        return self._meter

    @property
    def http(self) -> httpx.AsyncClient:
        if self._http is None:
            raise RuntimeError("the gateway's HTTP client is not started")
        return self._http

    def ready(self) -> bool:
        """The database (and Redis, when configured) answers."""
        return self.unready_reason() is None

    def unready_reason(self) -> str | None:
        """None when ready; else what does not answer, for ``/readyz`` (no addresses, no secrets)."""
        db = self._conn
        if db is None:
            return "the database is not open"
        try:
            db.execute("SELECT 1 FROM users LIMIT 1").fetchall()
        except (StorageUnavailable, db.error):
            return "the database does not answer"
        ping = getattr(self.limiter, "ping", None)
        if ping is not None:
            try:
                ping()
            except StorageUnavailable:
                return "Redis (the shared rate limiter) does not answer"
        return None
