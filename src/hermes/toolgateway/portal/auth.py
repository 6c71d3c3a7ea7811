"""Who is calling, and may they use this category? Checked on every relayed request.

:meth:`Authenticator.authenticate` turns the credential a relay receives into a :class:`Principal`:

1. the token is taken from where the vendor's client puts it (``Authorization: Bearer``,
   ``Authorization: Key`` for FAL, or a vendor header such as ``X-Browser-Use-API-Key``);
2. its HS256 signature and ``exp`` are verified with the server secret (``alg`` other than HS256 is
   refused) — 401 ``invalid_token`` / ``token_expired``; a verified token is remembered (bounded) so
   the next request with the same bytes only re-checks ``exp``;
3. its ``jti`` is looked up together with its owner in one indexed query — 401 ``unknown_token`` (not
   issued here, or the database was reset), 401 ``token_revoked``, 403 ``account_disabled``. This is
   what makes revocation effective on the very next request. On the relay hot path with Redis
   (:meth:`Authenticator.authenticate_async`) the two rows are reused for up to ``auth_cache_ttl``
   seconds, but only while the shared **revocation version** — a Redis counter raised by every
   revocation, disabled user and plan change (:attr:`~hermes.toolgateway.portal.accounts.Accounts.on_change`),
   pushed to every serving process before the change returns (:mod:`~hermes.toolgateway.storage.redis_watch`),
   or read in the rate limiter's round trip while a process is not subscribed — is the one they were read
   under: a revocation still applies to the very next request. On SQLite the version is the database's own
   change counter (``auth_version``, raised by triggers on every insert, update or delete of a token or
   user row, whichever process makes it), read in one small query per request.

:meth:`Authenticator.authorize` then checks the relay's needs against the owner's *current* plan:
403 ``insufficient_scope`` (no ``tool:invoke``), 402 ``subscription_expired`` (with the portal URL),
403 ``not_entitled`` (plan ``none``) or ``category_not_covered`` (free tier without that category).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from hermes.toolgateway.config import PlanConfig
from hermes.toolgateway.errors import GatewayHTTPError, unauthorized
from hermes.toolgateway.portal import jwt
from hermes.toolgateway.portal.accounts import Accounts, User

#: ``bearer`` and ``key`` read ``Authorization``; any other entry is a header name holding the bare token.
TokenSource = str


def extract_token(headers: Mapping[str, str], sources: Sequence[TokenSource] = ("bearer",)) -> str | None:
    """The credential from the first source that carries one (header names are lower-case)."""
    for source in sources:
        if source in ("bearer", "key"):
            value = headers.get("authorization", "")
            scheme, _, rest = value.strip().partition(" ")
            if scheme.lower() == source and rest.strip():
                return rest.strip()
        else:
            value = headers.get(source, "").strip()
            if value:
                return value
    return None


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: the user (as stored now), the token id and the token's scopes."""

    user: User
    plan: PlanConfig
    jti: str
    scopes: frozenset[str]
    claims: Mapping[str, Any] = field(repr=False, default_factory=dict)

    @cached_property
    def rate_key(self) -> str:
        """The rate-limit bucket: the verified subject and token id."""
        return f"{self.user.uid}:{self.jti}"


class Authenticator:
    """Verifies gateway tokens against the secret and the database."""

    def __init__(self, accounts: Accounts, clock: Callable[[], float] = time.time, cache_size: int = 10_000,
                 cache_ttl: float = 0.0) -> None:
        self.accounts = accounts
        self.clock = clock
        self.cache_size = cache_size
        #: seconds a token's row and its owner's are reused on the hot path (with a revocation version only)
        self.cache_ttl = cache_ttl
        self._verified: dict[str, dict[str, Any]] = {}
        #: jti → (revoked, user), the (version, generation) they were read under, until when, the Principal made of them
        self._rows: dict[str, tuple[tuple[bool, User], tuple[int, int], float, Principal | None]] = {}
        self._generation = 0
        #: whether changes made outside hermes's knowledge reach :meth:`forget_rows` now (the database's
        #: change notifications are being received); nothing is cached while this answers False
        self.rows_watched: Callable[[], bool] = lambda: False
        #: SQLite: reads the change counter its triggers raise on every token or user change (by any process,
        #: by hand too), which then stands in for the revocation version on every request
        self.local_version: Callable[[], int | None] | None = None
        self._last_version: int | None = None  # a version lower than this one: the counter was reset

    def _claims(self, token: str) -> dict[str, Any]:
        """Verified claims; a token already verified (same bytes, signature included) skips the HMAC and JSON
        work until its ``exp``. Revocation and the user are still read from the database on every request."""
        now = self.clock()
        claims = self._verified.get(token)
        if claims is not None and claims["exp"] > now:
            return claims
        claims = jwt.verify(token, self.accounts.secret, now=now)
        if len(self._verified) >= self.cache_size:
            self._verified.clear()
        self._verified[token] = claims
        return claims

    @property
    def portal_url(self) -> str:
        return self.accounts.config.base_url()

    def authenticate(self, token: str | None) -> Principal:
        """The caller of ``token``, reading its row and its owner's from the database now."""
        claims, jti = self._verified_claims(token)
        return self._principal(claims, jti, self.accounts.token_state(jti))

    async def authenticate_async(self, token: str | None, version: int | None = None) -> Principal:
        """:meth:`authenticate` for the relay hot path: the rows come from the async pool, or from the cache
        of the last :attr:`cache_ttl` seconds when ``version`` (the shared revocation version, read with the
        rate limit; on SQLite :attr:`local_version`) is the one they were read under. Without a version
        nothing is cached."""
        claims, jti = self._verified_claims(token)
        now = time.monotonic()
        if self.cache_ttl <= 0:
            version = None
        elif self.local_version is not None:  # SQLite: the database's own change counter, whatever Redis says
            version = self.local_version()
        if version is not None:
            if self._last_version is not None and version < self._last_version:
                self.forget_rows()  # a restarted Redis, a restored backup: old entries may match a version again
            self._last_version = version
        cacheable = version is not None and self.rows_watched()
        generation = self._generation
        if cacheable:
            hit = self._rows.get(jti)
            if hit is not None and hit[1] == (version, generation) and hit[2] > now:
                made = hit[3]
                if made is not None and made.claims is claims:  # the same rows and the same verified token
                    return made
                principal = self._principal(claims, jti, hit[0])
                self._rows[jti] = (hit[0], hit[1], hit[2], principal)
                return principal
        state = await self.accounts.token_state_async(jti)
        if cacheable and state is not None and generation == self._generation:  # no change while we read
            if len(self._rows) >= self.cache_size:
                self._rows.clear()
            assert version is not None
            self._rows[jti] = (state, (version, generation), now + self.cache_ttl, None)
        return self._principal(claims, jti, state)

    def forget_rows(self) -> None:
        """Make every cached token and user row stale (a change was made, or announced by the database)."""
        self._generation += 1
        self._rows.clear()

    def rate_key_of(self, token: str | None) -> str:
        """The rate-limit bucket of ``token`` from its verified claims alone (401 when they do not verify);
        the same as the :class:`Principal`'s once its row confirms the subject."""
        claims, jti = self._verified_claims(token)
        return f"{claims.get('sub')}:{jti}"

    def _verified_claims(self, token: str | None) -> tuple[dict[str, Any], str]:
        if not token:
            raise unauthorized("missing_token", "no gateway token: send 'Authorization: Bearer <token>'")
        try:
            claims = self._claims(token)
        except jwt.InvalidToken as exc:
            if exc.reason == "expired":
                raise unauthorized("token_expired", "the gateway token has expired; log in again or refresh it",
                                   self.portal_url) from None
            raise unauthorized("invalid_token", f"the gateway token is not valid: {exc}") from None
        jti = claims.get("jti")
        if not isinstance(jti, str):
            raise unauthorized("invalid_token", "the token has no id")
        return claims, jti

    def _principal(self, claims: dict[str, Any], jti: str, state: tuple[bool, User] | None) -> Principal:
        if state is None:
            raise unauthorized("unknown_token", "this token was not issued by this gateway")
        revoked, user = state
        if revoked:
            raise unauthorized("token_revoked", "this token has been revoked", self.portal_url)
        if claims.get("sub") != user.uid:
            raise unauthorized("invalid_token", "the token's subject does not match its record")
        if user.disabled:
            raise GatewayHTTPError(403, "account_disabled", "this account is disabled; ask the gateway operator")
        scope = claims.get("scope")
        scopes = frozenset(scope.split()) if isinstance(scope, str) else frozenset()
        return Principal(user, self.accounts.plan_of(user), jti, scopes, claims)

    def authorize(self, principal: Principal, category: str, *, scope: str = "tool:invoke") -> None:
        """Refuse unless ``principal`` may use a relay of ``category`` right now."""
        if scope not in principal.scopes:
            raise GatewayHTTPError(403, "insufficient_scope", f"this token lacks the {scope} scope")
        if not principal.user.plan_active(self.clock()):
            raise GatewayHTTPError(
                402, "subscription_expired",
                f"your {principal.plan.name} plan has expired; renew it at {self.portal_url} "
                "or switch this tool to your own key",
                extra={"portal_url": self.portal_url},
            )
        if not principal.plan.covers(category):
            if principal.plan.tool_access:
                raise GatewayHTTPError(
                    403, "category_not_covered",
                    f"the {principal.plan.name} plan does not cover {category}; upgrade at {self.portal_url}",
                    extra={"portal_url": self.portal_url, "category": category},
                )
            raise GatewayHTTPError(403, "not_entitled", f"this account has no tool access; see {self.portal_url}",
                                   extra={"portal_url": self.portal_url, "category": category})
