"""The portal's OAuth side: device codes (RFC 8628), refresh-token rotation, one-time login links.

* **Device code.** :meth:`OAuth.start_device` hands out a ``device_code`` (secret, stored hashed) and a
  short ``user_code`` (``BCDF-GHJK``: no vowels, no look-alikes). Polling answers
  ``authorization_pending`` until someone approves the code on the approval page, ``slow_down`` when
  polls come faster than half the interval, ``expired_token`` after ``device_code_ttl``,
  ``access_denied`` when denied. An approved code is exchanged exactly once (a conditional UPDATE).
* **Refresh.** A login is a *family*: one refresh token at a time, rotated on every refresh. The old
  token is marked used in the same statement that checks it was unused, so two concurrent refreshes
  cannot both win. Presenting a used token again is reuse — someone else may hold a copy — so the
  whole family (its refresh token and every access token it produced) is revoked:
  ``refresh_token_reused``.
* **Login links.** ``hermes toolgateway users login-link NAME`` creates a one-time secret (15 minutes
  by default) that proves "I am NAME" on the approval page; it is consumed by the approval.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from hermes.toolgateway.portal.accounts import AccountError, Accounts, IssuedToken, User, grant_scope

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
_USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"


def secret_hash(value: str) -> str:
    """SHA-256 hex of a secret (refresh tokens, device codes, login links are stored only this way)."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


class OAuthError(Exception):
    """An OAuth error answer: ``error`` code, ``description``, HTTP ``status`` (400 unless said)."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status

    def body(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description}


@dataclass(frozen=True)
class DeviceGrant:
    """The answer to a device authorization request (secrets included: shown once)."""

    device_code: str
    user_code: str
    expires_in: int
    interval: int


@dataclass(frozen=True)
class TokenSet:
    """What the token endpoint returns: an access token and its rotated refresh token."""

    access: IssuedToken
    refresh_token: str
    ttl: int
    subject: str

    def body(self) -> dict[str, Any]:
        return {
            "access_token": self.access.token,
            "refresh_token": self.refresh_token,
            "token_type": "Bearer",
            "expires_in": self.ttl,
            "scope": self.access.scope,
        }


def _no_nul(*fields: str | None) -> None:
    """400 ``invalid_request`` for a form field holding a NUL character (no database column can store one)."""
    if any(field and "\x00" in field for field in fields):
        raise OAuthError("invalid_request", "a form field holds a NUL character")


def normalise_user_code(code: str) -> str:
    """``bcdf ghjk`` / ``BCDFGHJK`` → ``BCDF-GHJK`` (people retype it)."""
    letters = "".join(c for c in code.upper() if c.isalnum())
    return f"{letters[:4]}-{letters[4:]}" if len(letters) == 8 else letters


class OAuth:
    """Device-code, refresh and login-link operations over :class:`Accounts`."""

    def __init__(self, accounts: Accounts) -> None:
        self.accounts = accounts
        self.conn = accounts.conn
        self.config = accounts.config

    # -- device authorization ------------------------------------------------------------------------
    def start_device(self, client_id: str, scope: str | None) -> DeviceGrant:
        _no_nul(client_id, scope)
        if not client_id or len(client_id) > 200:
            raise OAuthError("invalid_client", "client_id is required")
        now = self.accounts.clock()
        cfg = self.config
        self.conn.execute("DELETE FROM device_codes WHERE expires < ?", (now - 3600,))
        device_code = secrets.token_urlsafe(32)
        for _ in range(10):
            raw = "".join(secrets.choice(_USER_CODE_ALPHABET) for _ in range(8))
            user_code = f"{raw[:4]}-{raw[4:]}"
            try:
                self.conn.execute(
                    "INSERT INTO device_codes (device_hash, user_code, client_id, scope, created, expires, interval) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (secret_hash(device_code), user_code, client_id, grant_scope(scope), now,
                     now + cfg.device_code_ttl, cfg.device_poll_interval),
                )
            except self.conn.integrity_error:
                continue
            return DeviceGrant(device_code, user_code, cfg.device_code_ttl, cfg.device_poll_interval)
        raise OAuthError("server_error", "could not allocate a user code", status=500)

    def pending_device(self, user_code: str) -> Any:
        """The still-pending, unexpired device request with this user code (a row by column name), or None."""
        row: Any = self.conn.execute(
            "SELECT * FROM device_codes WHERE user_code = ? AND status = 'pending' AND expires > ?",
            (normalise_user_code(user_code), self.accounts.clock()),
        ).fetchone()
        return row

    def decide(self, user_code: str, user: User | None, approve: bool) -> bool:
        """Approve (for ``user``) or deny a pending code; False when no such pending code exists."""
        if approve and (user is None or user.disabled):
            raise AccountError("a disabled or unknown user cannot approve a login")
        cur = self.conn.execute(
            "UPDATE device_codes SET status = ?, user_id = ? WHERE user_code = ? AND status = 'pending' "
            "AND expires > ?",
            ("approved" if approve else "denied", user.id if (approve and user) else None,
             normalise_user_code(user_code), self.accounts.clock()),
        )
        return cur.rowcount == 1

    def poll(self, device_code: str, client_id: str) -> TokenSet:
        """One poll of the token endpoint with ``grant_type=device_code``."""
        _no_nul(device_code, client_id)
        now = self.accounts.clock()
        key = secret_hash(device_code or "")
        row = self.conn.execute("SELECT * FROM device_codes WHERE device_hash = ?", (key,)).fetchone()
        if row is None or row["client_id"] != client_id:
            raise OAuthError("invalid_grant", "unknown device_code")
        if row["status"] == "consumed":
            raise OAuthError("invalid_grant", "this device_code was already exchanged")
        if row["status"] == "denied":
            raise OAuthError("access_denied", "the login was denied")
        if row["expires"] <= now:
            raise OAuthError("expired_token", "the device code expired; start the login again")
        if row["status"] == "pending":
            last = row["last_poll"]
            self.conn.execute("UPDATE device_codes SET last_poll = ? WHERE device_hash = ?", (now, key))
            if last is not None and now - last < row["interval"] / 2:
                raise OAuthError("slow_down", "polling too fast; wait longer between requests")
            raise OAuthError("authorization_pending", "waiting for the login to be approved")
        cur = self.conn.execute(
            "UPDATE device_codes SET status = 'consumed' WHERE device_hash = ? AND status = 'approved'", (key,)
        )
        if cur.rowcount != 1:
            raise OAuthError("invalid_grant", "this device_code was already exchanged")
        user = self.accounts.user_by_id(int(row["user_id"]))
        if user.disabled:
            raise OAuthError("access_denied", "this account is disabled")
        return self._new_family(user, client_id, row["scope"])

    # -- token families --------------------------------------------------------------------------------
    def _new_family(self, user: User, client_id: str, scope: str) -> TokenSet:
        now = self.accounts.clock()
        family = "fam_" + secrets.token_hex(10)
        with self.conn.transaction():
            self.conn.execute(
                "INSERT INTO token_families (family, user_id, client_id, scope, created) VALUES (?, ?, ?, ?, ?)",
                (family, user.id, client_id, scope, now),
            )
            return self._issue(user, family, client_id, scope, now)

    def _issue(self, user: User, family: str, client_id: str, scope: str, now: float) -> TokenSet:
        ttl = self.config.access_token_ttl
        access = self.accounts.issue_access_token(user, ttl=ttl, scope=scope, source="device", family=family,
                                                  client_id=client_id)
        refresh = "rt_" + secrets.token_urlsafe(32)
        self.conn.execute(
            "INSERT INTO refresh_tokens (hash, family, issued, expires) VALUES (?, ?, ?, ?)",
            (secret_hash(refresh), family, now, now + self.config.refresh_token_ttl),
        )
        return TokenSet(access, refresh, ttl, user.uid)

    def refresh(self, refresh_token: str, client_id: str) -> TokenSet:
        """Rotate: the presented token becomes used and a new pair is returned; reuse revokes the family."""
        _no_nul(refresh_token, client_id)
        now = self.accounts.clock()
        key = secret_hash(refresh_token or "")
        row = self.conn.execute(
            "SELECT r.*, f.user_id, f.client_id, f.scope, f.revoked AS family_revoked FROM refresh_tokens r "
            "JOIN token_families f ON f.family = r.family WHERE r.hash = ?", (key,),
        ).fetchone()
        if row is None:
            raise OAuthError("invalid_grant", "unknown refresh token")
        if row["family_revoked"] is not None:
            raise OAuthError("invalid_grant", "this login was revoked; log in again")
        if row["used"] is not None:
            self.accounts.revoke_family(row["family"], now)
            raise OAuthError("refresh_token_reused",
                             "this refresh token was already used; the login was revoked for safety")
        if row["expires"] <= now:
            raise OAuthError("invalid_grant", "the refresh token expired; log in again")
        if client_id and client_id != row["client_id"]:
            raise OAuthError("invalid_grant", "the refresh token belongs to another client")
        user = self.accounts.user_by_id(int(row["user_id"]))
        if user.disabled:
            raise OAuthError("invalid_grant", "this account is disabled")
        tokens: TokenSet | None = None
        with self.conn.transaction():
            cur = self.conn.execute("UPDATE refresh_tokens SET used = ? WHERE hash = ? AND used IS NULL", (now, key))
            if cur.rowcount == 1:
                tokens = self._issue(user, row["family"], row["client_id"], row["scope"], now)
        if tokens is None:  # another process rotated it first (nothing was written here): that is reuse too
            self.accounts.revoke_family(row["family"], now)
            raise OAuthError("refresh_token_reused", "this refresh token was already used")
        return tokens

    # -- login links ---------------------------------------------------------------------------------
    def create_login_link(self, user: User, minutes: float = 15.0) -> str:
        """A one-time secret that lets ``user`` approve one device login on the portal page."""
        if user.disabled:
            raise AccountError(f"user {user.name!r} is disabled")
        secret = "ll_" + secrets.token_urlsafe(24)
        now = self.accounts.clock()
        self.conn.execute("INSERT INTO login_links (hash, user_id, created, expires) VALUES (?, ?, ?, ?)",
                          (secret_hash(secret), user.id, now, now + minutes * 60))
        return secret

    def peek_login_link(self, secret: str) -> User | None:
        """The user a still-valid login link belongs to (not consumed)."""
        row = self.conn.execute("SELECT user_id FROM login_links WHERE hash = ? AND used IS NULL AND expires > ?",
                                (secret_hash(secret or ""), self.accounts.clock())).fetchone()
        return self.accounts.user_by_id(int(row["user_id"])) if row else None

    def consume_login_link(self, secret: str) -> User | None:
        """Use a login link once; None when it is unknown, used or expired."""
        user = self.peek_login_link(secret)
        if user is None:
            return None
        cur = self.conn.execute("UPDATE login_links SET used = ? WHERE hash = ? AND used IS NULL",
                                (self.accounts.clock(), secret_hash(secret)))
        return user if cur.rowcount == 1 else None
