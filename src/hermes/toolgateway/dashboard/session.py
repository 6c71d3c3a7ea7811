"""Browser sessions of the usage dashboard: signed, expiring cookie values and CSRF tokens.

A cookie never holds a gateway token. It holds a small HS256 JWT signed with a key *derived* from the
gateway secret (``HMAC(secret, "hermes-toolgateway-dashboard-v1")``), so a cookie can never pass as an
access token and an access token never as a cookie:

* a **user session** ``{"typ": "user", "sid", "sub", "exp"[, "via"]}``. ``sid`` is the id of a row in
  the access-token table (source ``dashboard``, scope ``dashboard``; the token signed for that row is
  thrown away), so sessions show up in ``hermes toolgateway tokens list`` and end with
  ``tokens revoke``, with sign-out, or when the user is disabled. ``via`` is the id of the gateway
  token the person signed in with: revoking that token ends the session too;
* an **admin session** ``{"typ": "admin", "sid", "fp", "exp"}``; ``fp`` fingerprints the admin token,
  so changing the admin token ends every admin session. Signed-out admin sessions are remembered by
  this process until they expire.

CSRF tokens are HMACs of the session id (forms of a signed-in page) or of a random pre-session nonce
kept in its own cookie (the sign-in forms), compared in constant time.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes.toolgateway.portal import jwt
from hermes.toolgateway.portal.accounts import AccountError, User

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway

USER_TTL = 8 * 3600
ADMIN_TTL = 3600
SESSION_SCOPE = "dashboard"
_KEY_LABEL = b"hermes-toolgateway-dashboard-v1"


@dataclass(frozen=True)
class Session:
    """A verified dashboard session (``user`` is None for the admin)."""

    kind: str
    sid: str
    user: User | None


@dataclass(frozen=True)
class Refusal:
    """Why a session cookie was not accepted: a note for the page and the page's status."""

    note: str
    status: int = 200


class Sessions:
    """Issues and checks dashboard cookies for one gateway."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self._ended_admin: dict[str, float] = {}

    def _key(self) -> bytes:
        return hmac.new(self.gw.accounts.secret, _KEY_LABEL, hashlib.sha256).digest()

    def _mac(self, label: str, value: str) -> str:
        return hmac.new(self._key(), f"{label}|{value}".encode(), hashlib.sha256).hexdigest()[:40]

    # -- CSRF ----------------------------------------------------------------------------------------
    def csrf(self, session: Session) -> str:
        """The form token bound to ``session``."""
        return self._mac("csrf", f"{session.kind}:{session.sid}")

    def csrf_ok(self, session: Session, given: str) -> bool:
        return hmac.compare_digest(self.csrf(session).encode(), given.encode())

    @staticmethod
    def new_nonce() -> str:
        return secrets.token_urlsafe(18)

    def pre_csrf(self, nonce: str) -> str:
        """The sign-in form's token, bound to the pre-session nonce cookie."""
        return self._mac("pre", nonce)

    def pre_csrf_ok(self, nonce: str, given: str) -> bool:
        return bool(nonce) and hmac.compare_digest(self.pre_csrf(nonce).encode(), given.encode())

    # -- user sessions -------------------------------------------------------------------------------
    def start_user(self, user: User, via: str | None = None) -> str:
        """A cookie value for a new session of ``user`` (raises AccountError for a disabled user)."""
        row = self.gw.accounts.issue_access_token(user, ttl=USER_TTL, scope=SESSION_SCOPE, source="dashboard",
                                                  client_id="hermes-dashboard")
        claims: dict[str, object] = {"typ": "user", "sid": row.jti, "sub": user.uid, "exp": int(row.expires)}
        if via:
            claims["via"] = via
        return jwt.sign(claims, self._key())

    def _claims(self, cookie: str, kind: str) -> dict[str, object] | None:
        try:
            claims = jwt.verify(cookie, self._key(), now=self.gw.clock())
        except jwt.InvalidToken:
            return None
        if claims.get("typ") != kind or not isinstance(claims.get("sid"), str):
            return None
        return claims

    def user_session(self, cookie: str | None) -> Session | Refusal | None:
        """The session in ``cookie``; a :class:`Refusal` when it ended; None when there is none."""
        claims = self._claims(cookie, "user") if cookie else None
        if claims is None:
            return None
        sid = str(claims["sid"])
        state = self.gw.accounts.token_state(sid)
        if state is None or state[1].uid != claims.get("sub"):
            return None
        revoked, user = state
        if revoked:
            return Refusal("Your session has ended; sign in again.")
        if user.disabled:
            return Refusal("This account is disabled; ask the gateway operator.", 403)
        via = claims.get("via")
        if isinstance(via, str):
            parent = self.gw.accounts.token_state(via)
            if parent is None or parent[0]:
                return Refusal("The token you signed in with was revoked; sign in again.")
        return Session("user", sid, user)

    def end_user(self, session: Session) -> None:
        with contextlib.suppress(AccountError):  # the row is gone (database reset): nothing left to end
            self.gw.accounts.revoke(session.sid)

    # -- admin sessions ------------------------------------------------------------------------------
    def _fingerprint(self) -> str:
        return self._mac("admin", self.gw.admin_token)

    def admin_token_ok(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self.gw.admin_token.encode())

    def start_admin(self) -> str:
        claims = {"typ": "admin", "sid": "adm_" + secrets.token_hex(10), "fp": self._fingerprint(),
                  "exp": int(self.gw.clock() + ADMIN_TTL)}
        return jwt.sign(claims, self._key())

    def admin_session(self, cookie: str | None) -> Session | Refusal | None:
        claims = self._claims(cookie, "admin") if cookie else None
        if claims is None:
            return None
        sid = str(claims["sid"])
        fp = claims.get("fp")
        if not isinstance(fp, str) or not hmac.compare_digest(fp.encode(), self._fingerprint().encode()):
            return Refusal("The admin token has changed; sign in again.")
        if sid in self._ended_admin:
            return Refusal("Your session has ended; sign in again.")
        return Session("admin", sid, None)

    def end_admin(self, session: Session) -> None:
        now = self.gw.clock()
        for sid in [s for s, until in self._ended_admin.items() if until < now]:
            del self._ended_admin[sid]
        self._ended_admin[session.sid] = now + ADMIN_TTL
