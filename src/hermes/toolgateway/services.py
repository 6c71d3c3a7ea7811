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

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from hermes.toolgateway.config import GatewayConfig
from hermes.toolgateway.portal import keys
from hermes.toolgateway.portal.accounts import Accounts
from hermes.toolgateway.portal.auth import Authenticator
from hermes.toolgateway.portal.oauth import OAuth
from hermes.toolgateway.storage import Limiter, open_database, open_limiter
from hermes.toolgateway.storage.base import SQLITE, Database, StorageUnavailable
from hermes.toolgateway.storage.metering import Meter
from hermes.toolgateway.storage.sqlite import SQLiteDatabase

if TYPE_CHECKING:
    import httpx

    from hermes.net.h1client import H1Client
    from hermes.toolgateway.peers import Peers
    from hermes.toolgateway.storage.pg_async import AsyncPool, ChangeListener
    from hermes.toolgateway.storage.sqlite_usage import ThreadedInsert
    from hermes.toolgateway.storage.usage_journal import UsageWriter

log = logging.getLogger("hermes.toolgateway")


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
        self._vendor_client: H1Client | None = None
        self._pool: AsyncPool | None = None
        self._writer: UsageWriter | None = None
        self._sqlite_insert: ThreadedInsert | None = None
        self._listener: ChangeListener | None = None
        self.admin_token = ""
        self._peers: Peers | None = None
        self._telling: set[asyncio.Future[None]] = set()  # changes being told to every gateway process
        self.sealing_key = b""
        self.limiter: Limiter = open_limiter(config.redis_url, config.rate_limit.per_second, config.rate_limit.burst)

    # -- lifecycle -----------------------------------------------------------------------------------
    def open(self) -> Gateway:
        """Open the database and load (or create) the signing secret and the admin token."""
        if self._conn is None:
            secret = keys.signing_secret(self.config.secret_path)
            from hermes.toolgateway.storage.sealed import sealing_key

            self.sealing_key = sealing_key(secret)  # connector provider tokens at rest
            from hermes.toolgateway.peers import Peers, peer_key

            self._peers = Peers(self, peer_key(secret))  # what this process holds; forwarding to the others
            self.admin_token = keys.admin_token(self.config.admin_token_path, self.config.admin_token)
            self._conn = open_database(self.config.database_url, self.config.db_path)
            self._accounts = Accounts(self._conn, self.config, secret, self.clock)
            self._accounts.on_change = self._auth_changed
            self._oauth = OAuth(self._accounts)
            local = self._conn.dialect is SQLITE  # its triggers keep a change counter (auth_version)
            if local and self.config.auth_cache_ttl > 0 and not self._accounts.auth_watch_intact():
                log.warning("the gateway database %s lacks the triggers that count token and user changes "
                            "(a table rebuilt by hand?): token and user rows are read on every request",
                            self.config.db_path)
                local = False
            self._auth = Authenticator(self._accounts, self.clock, cache_ttl=self.config.auth_cache_ttl
                                       if self.shared_revocation or local else 0.0)
            if local:
                self._auth.local_version = self._accounts.auth_version
                self._auth.rows_watched = lambda: True
            self._meter = Meter(self._conn)
        return self

    @property
    def shared_revocation(self) -> bool:
        """True when a shared revocation version exists (Redis): then token and user rows may be cached."""
        return hasattr(self.limiter, "bump_auth_version")

    def _auth_changed(self) -> None:
        """A token was revoked, a user disabled or re-planned: no cached row may answer for it any more.

        With Redis every gateway process is told (:meth:`~.storage.redis_limiter.RedisRateLimiter.bump_auth_version`,
        which waits for them all): at once outside an event loop (the CLI), else in a worker thread — this loop
        must go on to acknowledge the change itself — which the route awaits (:meth:`changes_applied`)."""
        if self._auth is not None:
            self._auth.forget_rows()
        bump: Callable[[], None] | None = getattr(self.limiter, "bump_auth_version", None)
        if bump is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._raise_auth_version(bump)
            return
        told = loop.run_in_executor(None, self._raise_auth_version, bump)
        self._telling.add(told)
        told.add_done_callback(self._telling.discard)

    def _raise_auth_version(self, bump: Callable[[], None]) -> None:
        try:
            bump()
        except StorageUnavailable as exc:
            log.warning("the change is stored, but the revocation version could not be raised (%s): gateway "
                        "processes may accept the old state for up to auth_cache_ttl (%g s)", exc.detail,
                        self.config.auth_cache_ttl)

    async def changes_applied(self) -> None:
        """Return once every gateway process has applied the changes this one made so far (see
        :meth:`_auth_changed`); a route that revokes a token or ends a session awaits it before answering."""
        if self._telling:
            await asyncio.gather(*list(self._telling), return_exceptions=True)

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
        self.peers.forget_mine()
        if self.config.database_url:
            await self._start_hot_path(self.config.database_url)
        else:
            await self._start_sqlite_journal()
        start_limiter = getattr(self.limiter, "start", None)  # Redis: the pushed revocation version, leases
        if start_limiter is not None:
            await start_limiter(self.auth.forget_rows)
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(30.0, connect=10.0),
            limits=httpx.Limits(max_connections=512, max_keepalive_connections=128, keepalive_expiry=30.0),
            follow_redirects=False,
            trust_env=False,
            headers={"user-agent": "hermes-toolgateway/1"},
        )
        from hermes.net.h1client import H1Client

        self._vendor_client = H1Client(max_connections=512, max_idle_per_origin=128, keepalive_expiry=30.0,
                                       connect_timeout=10.0, user_agent="hermes-toolgateway/1")

    async def _start_sqlite_journal(self) -> None:
        """SQLite: usage rows journalled and inserted in batches by a thread of their own (:mod:`.sqlite_usage`)."""
        from hermes.toolgateway.storage.sqlite_usage import ThreadedInsert
        from hermes.toolgateway.storage.usage_journal import UsageWriter, journal_dir

        insert = self._sqlite_insert = ThreadedInsert(self.config.db_path)
        writer = UsageWriter(journal_dir(self.config.state_dir, str(self.config.db_path.resolve())), insert)
        try:
            await writer.start()
        except BaseException:
            self._sqlite_insert = None
            await insert.close()
            raise
        self._writer = self.meter.writer = writer
        # the change counter is read again only after a commit
        if self.auth.local_version is not None and isinstance(self._conn, SQLiteDatabase):
            from hermes.toolgateway.storage.wal_index import WalIndexWatch

            self.accounts.wal_watch = WalIndexWatch.open(self._conn.conn)

    async def _start_hot_path(self, url: str) -> None:
        """PostgreSQL: the async pool for tokens, quotas and usage, and the usage journal (replayed first)."""
        from hermes.store.postgres import mask_url
        from hermes.toolgateway.storage.pg_async import AsyncPool, ChangeListener
        from hermes.toolgateway.storage.pg_schema import AUTH_CHANNEL
        from hermes.toolgateway.storage.usage_journal import UsageWriter, insert_params, insert_sql, journal_dir

        pool = self._pool = AsyncPool(url)
        statement = insert_sql()

        async def insert(rows: Sequence[Sequence[object]]) -> None:
            await pool.executemany(statement, [insert_params(r) for r in rows])

        root = self.config.state_dir / "usage-journal"
        if root.is_dir():  # segments of the layout before per-database folders: this database's, as then
            await UsageWriter(root, insert).replay_orphans()
        writer = UsageWriter(journal_dir(self.config.state_dir, mask_url(url)), insert)
        await writer.start()
        self._writer = writer
        self.accounts.pool = self.meter.pool = pool
        self.meter.writer = writer
        if self.shared_revocation:  # rows are cached: changes made behind hermes's back must reach the cache too
            listener = self._listener = ChangeListener(url, AUTH_CHANNEL, self.auth.forget_rows)
            self.auth.rows_watched = lambda: listener.live
            await listener.start()

    async def close(self) -> None:
        """Close the HTTP client, the limiter and the database (after in-flight requests and the relays); the
        usage journal is written out first."""
        await self.changes_applied()
        if self._writer is not None:
            await self._writer.close()
            self._writer = None
            if self._meter is not None:
                self._meter.writer = None
        if self._sqlite_insert is not None:
            await self._sqlite_insert.close()
            self._sqlite_insert = None
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        if self._vendor_client is not None:
            await self._vendor_client.aclose()
            self._vendor_client = None
        aclose = getattr(self.limiter, "aclose", None)
        if aclose is not None:
            await aclose()
        close_limiter = getattr(self.limiter, "close", None)
        if close_limiter is not None:
            close_limiter()
        self.close_db()

    def close_db(self) -> None:
        """Close the database connection (what :meth:`open` opened)."""
        if self._conn is not None:
            if self._accounts is not None:
                self._accounts.wal_watch = None  # its header may be read only while this connection is open
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
    def peers(self) -> Peers:
        """This process's address and what it holds (:mod:`hermes.toolgateway.peers`)."""
        if self._peers is None:
            raise RuntimeError("the gateway is not open")
        return self._peers

    @property
    def vendor_client(self) -> H1Client:
        """The client of the relays' vendor calls (:func:`hermes.toolgateway.relays.vendor.vendor_request`)."""
        if self._vendor_client is None:
            raise RuntimeError("the gateway's HTTP client is not started")
        return self._vendor_client

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
