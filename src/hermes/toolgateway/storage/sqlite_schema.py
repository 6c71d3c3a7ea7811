"""The schema of the gateway's own SQLite database (``HERMES_HOME/toolgateway/gateway.db``): its migrations.

Separate from the sessions database: it has its own file and its own ordered migration list
(:data:`MIGRATIONS`, applied by :func:`hermes.store.migrations.migrate` under ``BEGIN IMMEDIATE``, so
two processes opening the file at once migrate it once); :func:`hermes.toolgateway.storage.sqlite.connect`
opens it. Several gateway processes may share one file; every quota decision is a single atomic
statement (see :mod:`hermes.toolgateway.storage.metering`).

With ``database_url`` the same schema lives in PostgreSQL instead: **every migration appended here needs
its twin in** :mod:`hermes.toolgateway.storage.pg_schema` (``tests/gateway/test_scale.py`` compares the
two schemas table by table), except the bookkeeping of :data:`SQLITE_ONLY_TABLES`. Code reaches either
through :mod:`hermes.toolgateway.storage`.

Secrets are never stored: refresh tokens, device codes and login links only as SHA-256 hashes
(:func:`hermes.toolgateway.portal.oauth.secret_hash`); access tokens are signed JWTs of which only the id
(``jti``) is kept, for revocation.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from hermes.store.migrations import Migration


def _run(conn: sqlite3.Connection, statements: Sequence[str]) -> None:
    for statement in statements:
        conn.execute(statement)


def m001_accounts(conn: sqlite3.Connection) -> None:
    """Users, access tokens (ids only), refresh-token families, device codes and login links."""
    _run(conn, [
        """
        CREATE TABLE users (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            uid          TEXT NOT NULL UNIQUE,
            name         TEXT NOT NULL UNIQUE,
            plan         TEXT NOT NULL CHECK (plan IN ('paid', 'free', 'none')),
            plan_expires REAL,
            disabled     INTEGER NOT NULL DEFAULT 0,
            created      REAL NOT NULL
        )
        """,
        """
        CREATE TABLE token_families (
            family    TEXT PRIMARY KEY,
            user_id   INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            client_id TEXT NOT NULL,
            scope     TEXT NOT NULL,
            created   REAL NOT NULL,
            revoked   REAL
        )
        """,
        """
        CREATE TABLE access_tokens (
            jti     TEXT PRIMARY KEY,
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            family  TEXT REFERENCES token_families(family) ON DELETE CASCADE,
            source  TEXT NOT NULL,
            scope   TEXT NOT NULL,
            issued  REAL NOT NULL,
            expires REAL NOT NULL,
            revoked REAL
        )
        """,
        "CREATE INDEX access_tokens_user ON access_tokens(user_id)",
        "CREATE INDEX access_tokens_family ON access_tokens(family)",
        """
        CREATE TABLE refresh_tokens (
            hash    TEXT PRIMARY KEY,
            family  TEXT NOT NULL REFERENCES token_families(family) ON DELETE CASCADE,
            issued  REAL NOT NULL,
            expires REAL NOT NULL,
            used    REAL
        )
        """,
        "CREATE INDEX refresh_tokens_family ON refresh_tokens(family)",
        """
        CREATE TABLE device_codes (
            device_hash TEXT PRIMARY KEY,
            user_code   TEXT NOT NULL UNIQUE,
            client_id   TEXT NOT NULL,
            scope       TEXT NOT NULL,
            created     REAL NOT NULL,
            expires     REAL NOT NULL,
            interval    INTEGER NOT NULL,
            last_poll   REAL,
            status      TEXT NOT NULL DEFAULT 'pending'
                        CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
            user_id     INTEGER REFERENCES users(id) ON DELETE CASCADE
        )
        """,
        """
        CREATE TABLE login_links (
            hash    TEXT PRIMARY KEY,
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            created REAL NOT NULL,
            expires REAL NOT NULL,
            used    REAL
        )
        """,
    ])


def m002_metering(conn: sqlite3.Connection) -> None:
    """Every relayed call (``usage``) and the monthly quota counters."""
    _run(conn, [
        """
        CREATE TABLE usage (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            ts         REAL NOT NULL,
            user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            jti        TEXT,
            category   TEXT NOT NULL,
            vendor     TEXT NOT NULL,
            operation  TEXT NOT NULL,
            units      INTEGER NOT NULL,
            cost       REAL NOT NULL,
            status     INTEGER NOT NULL,
            latency_ms REAL NOT NULL
        )
        """,
        "CREATE INDEX usage_user_ts ON usage(user_id, ts)",
        "CREATE INDEX usage_ts ON usage(ts)",
        """
        CREATE TABLE quota_counters (
            user_id  INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            category TEXT NOT NULL,
            period   TEXT NOT NULL,
            used     INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (user_id, category, period)
        ) WITHOUT ROWID
        """,
    ])


def m003_connector_accounts(conn: sqlite3.Connection) -> None:
    """Connector accounts per user and app (``hermes.toolgateway.storage.connector_store``); names unique among
    active ones."""
    _run(conn, [
        """
        CREATE TABLE connector_accounts (
            id           TEXT PRIMARY KEY,
            user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            app          TEXT NOT NULL,
            name         TEXT,
            display_name TEXT NOT NULL,
            status       TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'retired')),
            created      REAL NOT NULL,
            retired      REAL,
            replaced_by  TEXT
        )
        """,
        "CREATE INDEX connector_accounts_user_app ON connector_accounts(user_id, app)",
        "CREATE UNIQUE INDEX connector_accounts_active_name ON connector_accounts(user_id, app, name) "
        "WHERE status = 'active'",
    ])


def m004_uploads(conn: sqlite3.Connection) -> None:
    """Media uploads of the shared origin (``hermes.toolgateway.storage.uploads``): the files live on disk."""
    _run(conn, [
        """
        CREATE TABLE uploads (
            id           TEXT PRIMARY KEY,
            user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            vendor       TEXT NOT NULL,
            filename     TEXT NOT NULL,
            content_type TEXT NOT NULL,
            ext          TEXT NOT NULL,
            bytes        INTEGER NOT NULL,
            sha256       TEXT NOT NULL,
            key_hash     TEXT NOT NULL,
            created      REAL NOT NULL,
            expires      REAL NOT NULL
        )
        """,
        "CREATE INDEX uploads_user ON uploads(user_id, expires)",
        "CREATE INDEX uploads_expires ON uploads(expires)",
    ])


def m005_relay_jobs(conn: sqlite3.Connection) -> None:
    """Who started which vendor job (``hermes.toolgateway.storage.jobs``), shared by every gateway process."""
    _run(conn, [
        """
        CREATE TABLE relay_jobs (
            namespace TEXT NOT NULL,
            job_id    TEXT NOT NULL,
            owner     TEXT NOT NULL,
            data      TEXT NOT NULL,
            created   REAL NOT NULL,
            expires   REAL NOT NULL,
            PRIMARY KEY (namespace, job_id)
        )
        """,
        "CREATE INDEX relay_jobs_expires ON relay_jobs(expires)",
    ])


def m006_usage_rid(conn: sqlite3.Connection) -> None:
    """A unique id per usage row (``rid``): usage batches replayed from a journal count nothing twice."""
    _run(conn, [
        "ALTER TABLE usage ADD COLUMN rid TEXT",
        "CREATE UNIQUE INDEX usage_rid ON usage(rid)",
    ])


def m007_connector_credentials(conn: sqlite3.Connection) -> None:
    """Each connector account's provider token, sealed with the gateway's key (``storage.sealed``)."""
    _run(conn, ["ALTER TABLE connector_accounts ADD COLUMN credential TEXT"])


def m008_auth_version(conn: sqlite3.Connection) -> None:
    """SQLite only: a change counter of the token and user rows, raised by triggers on every insert, update
    and delete — whichever process or tool makes it — so the relay hot path may reuse the rows it read while
    the counter stands still (``portal/auth.py``). PostgreSQL announces the same changes with ``pg_notify``."""
    _run(conn, [
        "CREATE TABLE auth_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)",
        "INSERT INTO auth_version (id, version) VALUES (1, 0)",
        *(f"CREATE TRIGGER {name} AFTER {event} ON {table} "
          "BEGIN UPDATE auth_version SET version = version + 1 WHERE id = 1; END"
          for name, table, event in AUTH_VERSION_TRIGGERS),
    ])


#: the triggers of :func:`m008_auth_version` as (name, table, event); a table rebuilt by hand loses its
#: triggers, so the gateway checks they are all there before it caches a row (``Accounts.auth_watch_intact``)
AUTH_VERSION_TRIGGERS = tuple((f"{table}_{event.lower()}_auth_version", table, event)
                              for table in ("users", "access_tokens") for event in ("INSERT", "UPDATE", "DELETE"))


#: tables of the SQLite database alone (bookkeeping with no PostgreSQL twin: not copied by ``migrate``)
SQLITE_ONLY_TABLES = frozenset({"auth_version"})

#: ``MIGRATIONS[i]`` takes the gateway database from ``user_version`` i to i + 1; append only.
MIGRATIONS: tuple[Migration, ...] = (m001_accounts, m002_metering, m003_connector_accounts, m004_uploads,
                                   m005_relay_jobs, m006_usage_rid, m007_connector_credentials,
                                   m008_auth_version)
