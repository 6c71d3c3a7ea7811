"""Users, plans, signed access tokens and their revocation (requirement GW-10 from the operator's side).

An access token is an HS256 JWT (:mod:`hermes.toolgateway.portal.jwt`) whose claims are the ones the
clients read (see :mod:`hermes.routing.credentials` and the upstream protocol notes):

* ``sub`` (the user's stable id), ``jti``, ``iat``, ``exp``, ``iss``, ``scope``, ``client_id``;
* ``paid_access`` — a real bool; ``tool_access`` — ``{"enabled": bool, "coverage": {category: bool}}``
  with every category listed; ``subscription_tier`` — the plan name; ``managed_tools: true`` only when
  the plan enables managed connectors; ``org_id`` when the operator configured one.

The claims are what the *client* reads to decide what to offer. The gateway itself decides on every
request from the database — the token's row (revoked?) and the user's current row (disabled? plan?
expired?) — so revocation, a disabled account or a changed plan take effect on the next request.
"""

from __future__ import annotations

import re
import secrets
import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError
from hermes.toolgateway.config import CATEGORIES, GatewayConfig, PlanConfig
from hermes.toolgateway.portal import jwt
from hermes.toolgateway.storage.base import Database
from hermes.toolgateway.storage.sqlite import as_database

if TYPE_CHECKING:
    from hermes.toolgateway.storage.pg_async import AsyncPool
    from hermes.toolgateway.storage.wal_index import WalIndexWatch

PLANS = ("paid", "free", "none")
#: Scopes a client may ask for; ``tool:invoke`` is always granted (the relays require it).
GRANTABLE_SCOPES = ("inference:invoke", "tool:invoke")
DEFAULT_CLI_SCOPE = "inference:invoke tool:invoke"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")


class AccountError(HermesError):
    """An account operation cannot be done (unknown user, duplicate name, bad plan)."""


@dataclass(frozen=True)
class User:
    """One account of this gateway."""

    id: int
    uid: str
    name: str
    plan: str
    plan_expires: float | None
    disabled: bool
    created: float

    @classmethod
    def from_row(cls, row: Any) -> User:
        """From a ``users`` row (``sqlite3.Row`` or the PostgreSQL row: both by column name)."""
        return cls(row["id"], row["uid"], row["name"], row["plan"], row["plan_expires"], bool(row["disabled"]),
                   row["created"])

    def plan_active(self, now: float) -> bool:
        """False once ``plan_expires`` has passed (the plan then grants nothing: 402 on relays)."""
        return self.plan_expires is None or self.plan_expires > now


@dataclass(frozen=True)
class IssuedToken:
    """A freshly signed access token (shown once; only ``jti`` is stored)."""

    token: str
    jti: str
    expires: float
    scope: str


def entitlement_claims(user: User, plan: PlanConfig, now: float) -> dict[str, Any]:
    """The entitlement part of the claims (also the account endpoint's answer): expired plans grant nothing."""
    active = user.plan_active(now) and not user.disabled
    paid = active and plan.paid_access
    enabled = active and (plan.tool_access or plan.paid_access)
    coverage = {cat: bool(enabled and (paid or cat in plan.coverage)) for cat in CATEGORIES}
    claims: dict[str, Any] = {
        "paid_access": paid,
        "tool_access": {"enabled": enabled, "coverage": coverage},
        "subscription_tier": plan.name,
    }
    if active and plan.managed_tools:
        claims["managed_tools"] = True
    return claims


def grant_scope(requested: str | None) -> str:
    """The scope granted for a request: the grantable part of ``requested`` plus ``tool:invoke``."""
    wanted = set((requested or "").split())
    granted = [s for s in GRANTABLE_SCOPES if s in wanted or s == "tool:invoke"]
    return " ".join(granted)


_TOKEN_STATE = ("SELECT t.revoked AS t_revoked, u.* FROM access_tokens t JOIN users u ON u.id = t.user_id "
                "WHERE t.jti = ?")


class Accounts:
    """User and token operations on the gateway database (SQLite or PostgreSQL)."""

    def __init__(self, conn: Database | sqlite3.Connection, config: GatewayConfig, secret: bytes,
                 clock: Callable[[], float] = time.time) -> None:
        self.conn = as_database(conn)
        self.config = config
        self.secret = secret
        self.clock = clock
        #: with PostgreSQL, the async pool of the relay hot path (set by the gateway's start)
        self.pool: AsyncPool | None = None
        #: called after every change that cached token or user rows must see at once (revocation, a disabled
        #: user, a new plan): the gateway bumps the shared revocation version and drops its own cache
        self.on_change: Callable[[], None] = lambda: None
        #: SQLite, in a serving gateway: the WAL-index header that tells :meth:`auth_version` nothing was
        #: committed since its last read (set by the gateway's start, dropped before its connection closes)
        self.wal_watch: WalIndexWatch | None = None
        self._seen_header = b""
        self._seen_version: int | None = None

    # -- users ---------------------------------------------------------------------------------------
    def plan_of(self, user: User) -> PlanConfig:
        return self.config.plans[user.plan]

    def add_user(self, name: str, plan: str, *, plan_expires: float | None = None) -> User:
        """Create a user; names are 1–64 characters of letters, digits and ``. _ @ + -``."""
        if not _NAME.match(name):
            raise AccountError(f"invalid user name {name!r}: use 1-64 letters, digits and . _ @ + -")
        if plan not in PLANS:
            raise AccountError(f"unknown plan {plan!r}: choose paid, free or none")
        try:
            self.conn.execute(
                "INSERT INTO users (uid, name, plan, plan_expires, created) VALUES (?, ?, ?, ?, ?)",
                ("usr_" + secrets.token_hex(8), name, plan, plan_expires, self.clock()),
            )
        except self.conn.integrity_error as exc:
            raise AccountError(f"a user named {name!r} already exists") from exc
        return self.get_user(name)

    def get_user(self, name: str) -> User:
        row = self.conn.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise AccountError(f"no user named {name!r}")
        return User.from_row(row)

    def user_by_id(self, user_id: int) -> User:
        row = self.conn.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone()
        if row is None:
            raise AccountError(f"no user with id {user_id}")
        return User.from_row(row)

    def list_users(self) -> list[User]:
        return [User.from_row(r) for r in self.conn.execute("SELECT * FROM users ORDER BY name")]

    def set_disabled(self, name: str, disabled: bool) -> User:
        """Disable (or re-enable) a user; every token of a disabled user is refused from the next request."""
        user = self.get_user(name)
        self.conn.execute("UPDATE users SET disabled = ? WHERE id = ?", (int(disabled), user.id))
        self.on_change()
        return self.get_user(name)

    def set_plan(self, name: str, plan: str, plan_expires: float | None) -> User:
        if plan not in PLANS:
            raise AccountError(f"unknown plan {plan!r}: choose paid, free or none")
        user = self.get_user(name)
        self.conn.execute("UPDATE users SET plan = ?, plan_expires = ? WHERE id = ?", (plan, plan_expires, user.id))
        self.on_change()
        return self.get_user(name)

    # -- access tokens -------------------------------------------------------------------------------
    def claims(self, user: User, *, jti: str, scope: str, client_id: str, now: float, ttl: float) -> dict[str, Any]:
        """Every claim of a new access token for ``user``."""
        claims: dict[str, Any] = {
            "iss": self.config.base_url(),
            "sub": user.uid,
            "jti": jti,
            "iat": int(now),
            "exp": int(now + ttl),
            "scope": scope,
            "client_id": client_id,
        }
        claims.update(entitlement_claims(user, self.plan_of(user), now))
        if self.config.org_id:
            claims["org_id"] = self.config.org_id
        return claims

    def issue_access_token(self, user: User, *, ttl: float, scope: str = DEFAULT_CLI_SCOPE, source: str = "cli",
                           family: str | None = None, client_id: str = "hermes-cli") -> IssuedToken:
        """Sign a new access token and record its id (not in a transaction of its own: callers may batch)."""
        if user.disabled:
            raise AccountError(f"user {user.name!r} is disabled")
        now = self.clock()
        jti = "tok_" + secrets.token_hex(10)
        token = jwt.sign(self.claims(user, jti=jti, scope=scope, client_id=client_id, now=now, ttl=ttl), self.secret)
        expires = float(int(now + ttl))
        self.conn.execute(
            "INSERT INTO access_tokens (jti, user_id, family, source, scope, issued, expires) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (jti, user.id, family, source, scope, now, expires),
        )
        return IssuedToken(token, jti, expires, scope)

    def revoke(self, token_or_id: str) -> list[str]:
        """Revoke an access token given whole (a JWT) or by its id; returns the revoked ids.

        A token that belongs to a device-login family also ends that family (its refresh token stops
        working), so a leaked token cannot be renewed. An unknown token is an :class:`AccountError`.
        """
        jti = token_or_id.strip()
        if jti.count(".") == 2:
            claims = jwt.unverified_claims(jti)
            jti = str(claims.get("jti", "")) if claims else ""
        row = self.conn.execute("SELECT jti, family FROM access_tokens WHERE jti = ?", (jti,)).fetchone()
        if row is None:
            raise AccountError("no such token on this gateway (give the whole token or its id, tok_...)")
        now = self.clock()
        if row["family"]:
            return self.revoke_family(row["family"], now)
        self.conn.execute("UPDATE access_tokens SET revoked = COALESCE(revoked, ?) WHERE jti = ?", (now, jti))
        self.on_change()
        return [jti]

    def revoke_family(self, family: str, now: float) -> list[str]:
        """End a login: its refresh tokens and every access token issued from it."""
        with self.conn.transaction():
            self.conn.execute("UPDATE token_families SET revoked = COALESCE(revoked, ?) WHERE family = ?",
                              (now, family))
            self.conn.execute("UPDATE access_tokens SET revoked = COALESCE(revoked, ?) WHERE family = ?",
                              (now, family))
            ids = [r["jti"] for r in self.conn.execute("SELECT jti FROM access_tokens WHERE family = ?", (family,))]
        self.on_change()
        return ids

    def list_tokens(self, name: str | None = None) -> list[dict[str, Any]]:
        """Token ids with owner, source, scope, times and state (never the tokens themselves)."""
        sql = ("SELECT t.jti, u.name, t.source, t.scope, t.issued, t.expires, t.revoked, t.family "
               "FROM access_tokens t JOIN users u ON u.id = t.user_id")
        params: tuple[Any, ...] = ()
        if name is not None:
            sql += " WHERE u.id = ?"
            params = (self.get_user(name).id,)
        now = self.clock()
        out = []
        for r in self.conn.execute(sql + " ORDER BY t.issued", params):
            state = "revoked" if r["revoked"] is not None else ("expired" if r["expires"] <= now else "active")
            out.append({"id": r["jti"], "user": r["name"], "source": r["source"], "scope": r["scope"],
                        "issued": r["issued"], "expires": r["expires"], "state": state})
        return out

    def token_state(self, jti: str) -> tuple[bool, User] | None:
        """``(revoked, owner)`` for a token id, in one indexed query; None when the id is unknown."""
        row = self.conn.execute(_TOKEN_STATE, (jti,)).fetchone()
        if row is None:
            return None
        return row["t_revoked"] is not None, User.from_row(row)

    def auth_version(self) -> int | None:
        """SQLite databases only: the change counter of the token and user rows (raised by triggers on every
        change, by any process). PostgreSQL announces the same changes instead (``pg_notify``).

        With :attr:`wal_watch` the counter is read again only after a commit (by anyone) moved the WAL-index
        header; the header is taken before the statement, so a commit racing the read moves it again."""
        watch = self.wal_watch
        header = b""
        if watch is not None:
            header = watch.header()
            if header == self._seen_header:
                return self._seen_version
        row = self.conn.execute("SELECT version FROM auth_version WHERE id = 1").fetchone()
        version = int(row[0]) if row is not None else None
        if watch is not None and watch.settled():  # a transaction's snapshot may predate the header
            self._seen_header, self._seen_version = header, version
        return version

    def auth_watch_intact(self) -> bool:
        """SQLite databases only: whether the change counter and every trigger raising it are in the file (a
        table rebuilt by hand, or a trigger dropped, would leave changes the counter never sees)."""
        from hermes.toolgateway.storage.sqlite_schema import AUTH_VERSION_TRIGGERS

        found = {row[0] for row in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE (type = 'trigger' AND tbl_name IN ('users', 'access_tokens')) "
            "OR (type = 'table' AND name = 'auth_version')")}
        return {"auth_version", *(name for name, _, _ in AUTH_VERSION_TRIGGERS)} <= found

    async def token_state_async(self, jti: str) -> tuple[bool, User] | None:
        """:meth:`token_state` on the async pool when there is one (PostgreSQL)."""
        if self.pool is None:
            return self.token_state(jti)
        row = await self.pool.fetchone(_TOKEN_STATE, (jti,))
        if row is None:
            return None
        return row["t_revoked"] is not None, User.from_row(row)

    def account_info(self, user: User) -> Mapping[str, Any]:
        """The ``/api/oauth/account`` document: entitlement fields plus display fields."""
        now = self.clock()
        claims = entitlement_claims(user, self.plan_of(user), now)
        reason = None
        if user.disabled:
            reason = "account_disabled"
        elif not user.plan_active(now):
            reason = "subscription_expired"
        elif not claims["tool_access"]["enabled"]:
            reason = "no_tool_access"
        info: dict[str, Any] = {
            "user": {"id": user.uid, "name": user.name, "email": user.name if "@" in user.name else None},
            "paid_service_access": {"allowed": claims["paid_access"]},
            "paid_access": claims["paid_access"],
            "tool_access": claims["tool_access"],
            "managed_tools": bool(claims.get("managed_tools", False)),
            "subscription": {"plan": user.plan, "tier": user.plan, "active": user.plan_active(now),
                             "expires_at": user.plan_expires},
            "reason": reason,
            "portal_url": self.config.base_url(),
        }
        if self.config.org_id:
            info["organisation"] = {"id": self.config.org_id, "slug": self.config.org_id, "name": self.config.org_id}
        return info
