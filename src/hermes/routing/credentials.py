"""The portal login as the client sees it: tokens, claims and entitlement (requirement GW-10, T-CONN).

The access token the Nous Portal issues is a JWT whose payload carries the account's entitlement:

* ``paid_access`` — a paid subscription (only a literal ``true`` counts);
* ``tool_access`` — ``{"enabled": bool, "coverage": {category: bool}}``, the tool pool. On an account
  without ``paid_access`` an enabled pool is the *free tool tier*: it covers only the categories whose
  ``coverage`` entry is a literal ``true``;
* ``managed_tools`` — the account may use managed connectors (the ``connections`` tool);
* ``exp`` — expiry, seconds since the epoch; plus ``subscription_tier``, ``org_id``, ``sub``, ``scope``.

**The client does not verify the signature** — it has no key to verify it with, and need not: the
claims only decide what the client *offers* and which error it shows; the gateway checks the token
itself on every call. Decoding is plain base64url JSON of the middle part. Anything that is not such a
token (an opaque token, garbage, a wrong type anywhere) reads as "no claims" → not entitled; parsing
never raises.

Coverage keys are the gateway's category names: ``firecrawl``, ``fal``, ``fal-video``,
``openai-audio`` (TTS and STT), ``browser-use``, ``modal``. A paid account is entitled to all.

Sources: ``HERMES_HOME/auth.json`` in the upstream layout (``providers.nous.access_token``, else the
first ``credential_pool.nous[]`` entry holding an ``access_token``) and ``TOOL_GATEWAY_USER_TOKEN``. The
token *sent* to the gateway is ``TOOL_GATEWAY_USER_TOKEN`` when set, else the auth.json token, and the
claims (plan, coverage, expiry) are read from that same token, so one credential decides both what is
sent and which models and relays are chosen (a paid login beside a free-tier env token is judged as
the free tier it sends). An env token carrying claims is enough for a self-hosted gateway.
This module only reads auth.json; the login flow writes it.
"""

from __future__ import annotations

import json
import logging
import math
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from hermes.routing.advertised import AdvertisedGateway

log = logging.getLogger("hermes.routing")

DEFAULT_PORTAL_URL = "https://portal.nousresearch.com"
_PORTAL_HOSTS = frozenset({"portal.nousresearch.com", "localhost", "127.0.0.1"})
_MAX_TOKEN = 64 * 1024
_B64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=")

EntitlementStatus = Literal["paid", "free_tier", "not_logged_in", "unknown", "expired", "not_covered", "no_access",
                            "not_offered"]
TokenSource = Literal["env", "auth.json"]


def _b64url_json(part: str) -> dict[str, Any] | None:
    import base64  # here: availability checks import this module at every start-up
    import binascii

    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        value = json.loads(raw.decode("utf-8"))
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def decode_jwt_payload(token: object) -> dict[str, Any] | None:
    """The JSON payload of a JWT (``header.payload.signature``) WITHOUT verifying it; None if not one."""
    if not isinstance(token, str) or len(token) > _MAX_TOKEN or token.count(".") != 2:
        return None
    payload = token.split(".")[1]
    if not payload or any(c not in _B64URL for c in payload):
        return None
    return _b64url_json(payload)



def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


@dataclass(frozen=True)
class Claims:
    """What the portal says about the account, read strictly: wrong types count as absent."""

    paid_access: bool = False
    tool_access_enabled: bool = False
    coverage: frozenset[str] = frozenset()
    managed_tools: bool = False
    managed_tool_names: tuple[str, ...] = ()
    exp: float | None = None
    subscription_tier: str | None = None
    org_id: str | None = None
    subject: str | None = None
    scopes: frozenset[str] = frozenset()

    @property
    def free_tier(self) -> bool:
        """The free tool tier: a tool pool without a paid subscription."""
        return self.tool_access_enabled and not self.paid_access

    @property
    def any_tool_access(self) -> bool:
        """Paid, or a tool pool that is switched on."""
        return self.paid_access or self.tool_access_enabled

    def covers(self, coverage_key: str) -> bool:
        """Entitled to one gateway category, ignoring expiry (paid, or pool on and category covered)."""
        return self.paid_access or (self.tool_access_enabled and coverage_key in self.coverage)

    def is_expired(self, now: float, leeway: float = 0.0) -> bool:
        """Whether ``exp`` is at or before ``now + leeway``; a token without ``exp`` never expires here."""
        return self.exp is not None and self.exp <= now + leeway

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> Claims:
        """Read a decoded JWT payload; never raises."""
        tool_access = payload.get("tool_access")
        enabled = False
        coverage: frozenset[str] = frozenset()
        if isinstance(tool_access, Mapping):
            enabled = tool_access.get("enabled") is True
            raw_cov = tool_access.get("coverage")
            if isinstance(raw_cov, Mapping):
                coverage = frozenset(k for k, v in raw_cov.items() if isinstance(k, str) and v is True)
        managed, names = _managed_tools(payload.get("managed_tools"))
        scope = payload.get("scope", payload.get("scp"))
        if isinstance(scope, str):
            scopes = frozenset(scope.split())
        elif isinstance(scope, list):
            scopes = frozenset(s for s in scope if isinstance(s, str))
        else:
            scopes = frozenset()
        return cls(
            paid_access=payload.get("paid_access") is True,
            tool_access_enabled=enabled,
            coverage=coverage,
            managed_tools=managed,
            managed_tool_names=names,
            exp=_number(payload.get("exp")),
            subscription_tier=_text(payload.get("subscription_tier")),
            org_id=_text(payload.get("org_id")),
            subject=_text(payload.get("sub")),
            scopes=scopes,
        )

    @classmethod
    def from_account_info(cls, info: Mapping[str, Any], exp: float | None = None) -> Claims:
        """Read the portal's ``/api/oauth/account`` answer (for opaque tokens); never raises."""
        paid_block = info.get("paid_service_access")
        if isinstance(paid_block, Mapping) and "allowed" in paid_block:
            paid = paid_block.get("allowed") is True
        else:
            paid = info.get("paid_access") is True
        payload = {"paid_access": paid, "tool_access": info.get("tool_access"),
                   "managed_tools": info.get("managed_tools"), "exp": exp}
        subscription = info.get("subscription")
        if isinstance(subscription, Mapping):
            payload["subscription_tier"] = subscription.get("tier")
        return cls.from_payload(payload)


def _managed_tools(value: object) -> tuple[bool, tuple[str, ...]]:
    if value is True:
        return True, ()
    if isinstance(value, list):
        names = tuple(v for v in value if isinstance(v, str) and v)
        return bool(names), names
    if isinstance(value, Mapping):
        return value.get("enabled") is True, ()
    return False, ()


@dataclass(frozen=True)
class Entitlement:
    """Whether the account may use the gateway for one category, and why (for errors and status)."""

    coverage_key: str
    status: EntitlementStatus

    @property
    def entitled(self) -> bool:
        """True for a paid account or a free tier that covers the category."""
        return self.status in ("paid", "free_tier")

    @property
    def summary(self) -> str:
        """A short phrase for status lines."""
        return _SUMMARIES[self.status]


_SUMMARIES: Mapping[EntitlementStatus, str] = {
    "paid": "included in your subscription",
    "free_tier": "covered by the free tool tier",
    "not_logged_in": "not logged in to Nous Portal",
    "unknown": "the portal token carries no readable claims",
    "expired": "the Nous Portal login has expired",
    "not_covered": "not covered by the free tool tier",
    "no_access": "no active subscription with tool access",
    "not_offered": "this gateway does not offer it",
}


@dataclass(frozen=True)
class Credentials:
    """Portal tokens and claims; secrets are kept out of ``repr``.

    Build with :meth:`from_sources` (pure) or :func:`load_credentials` (reads auth.json).
    """

    access_token: str | None = field(default=None, repr=False)
    env_token: str | None = field(default=None, repr=False)
    claims: Claims | None = None
    portal_base_url: str = DEFAULT_PORTAL_URL
    expires_at: float | None = None
    warnings: tuple[str, ...] = ()
    #: the portal login holds a refresh token, so an expired access token can still be renewed
    refreshable: bool = False
    #: the gateway the portal login advertised (``tool_gateway`` in auth.json); None for the managed
    #: portal, an older login, or when ``TOOL_GATEWAY_USER_TOKEN`` is the token sent
    gateway: AdvertisedGateway | None = None

    @classmethod
    def anonymous(cls) -> Credentials:
        """Nobody logged in, no token anywhere."""
        return cls()

    @classmethod
    def from_sources(cls, auth: object, env: Mapping[str, str]) -> Credentials:
        """From a parsed auth.json document (anything; garbage is tolerated) and the environment."""
        nous = _nous_entry(auth)
        access = _text(nous.get("access_token")) if nous else None
        env_token = _text(env.get("TOOL_GATEWAY_USER_TOKEN"))
        # one credential decides both what is sent and the plan it is judged by: the token that is sent
        payload = decode_jwt_payload(env_token if env_token else access)
        claims = Claims.from_payload(payload) if payload is not None else None
        return cls(
            access_token=access,
            env_token=env_token,
            claims=claims,
            portal_base_url=_portal_url(nous, env),
            expires_at=_iso_time(nous.get("expires_at")) if nous else None,
            refreshable=bool(nous and access and _text(nous.get("refresh_token"))),
            gateway=AdvertisedGateway.read(nous.get("tool_gateway")) if nous and access and not env_token else None,
        )

    def with_claims(self, claims: Claims | None) -> Credentials:
        """A copy with other claims (e.g. from the account API for an opaque token)."""
        return replace(self, claims=claims)

    # -- what the routing needs -----------------------------------------------------------------
    @property
    def gateway_origins(self) -> Mapping[str, str]:
        """The relay origins the portal login advertised, by label (empty when none)."""
        return self.gateway.origins if self.gateway is not None else {}

    @property
    def token(self) -> str | None:
        """The token sent to the gateway: ``TOOL_GATEWAY_USER_TOKEN`` wins over the portal login."""
        return self.env_token or self.access_token

    @property
    def token_source(self) -> TokenSource | None:
        """Where :attr:`token` comes from."""
        if self.env_token:
            return "env"
        return "auth.json" if self.access_token else None

    @property
    def logged_in(self) -> bool:
        """Some gateway token is present (its claims may still say "not entitled")."""
        return self.token is not None

    @property
    def paid_access(self) -> bool:
        return self.claims is not None and self.claims.paid_access

    @property
    def tool_access_enabled(self) -> bool:
        return self.claims is not None and self.claims.tool_access_enabled

    @property
    def coverage(self) -> frozenset[str]:
        return self.claims.coverage if self.claims else frozenset()

    @property
    def free_tier(self) -> bool:
        return self.claims is not None and self.claims.free_tier

    @property
    def managed_tools(self) -> bool:
        """The ``managed_tools`` claim: managed connectors may be offered (T-CONN)."""
        return self.claims is not None and self.claims.managed_tools

    @property
    def exp(self) -> float | None:
        return self.claims.exp if self.claims else None

    def is_expired(self, now: float, leeway: float = 0.0) -> bool:
        """Whether the claims have expired (a token without ``exp`` or claims never does here)."""
        return self.claims is not None and self.claims.is_expired(now, leeway)

    def covers(self, coverage_key: str) -> bool:
        """Entitled to a gateway category by the claims, ignoring expiry."""
        return self.logged_in and self.claims is not None and self.claims.covers(coverage_key)

    def entitlement(self, coverage_key: str, now: float) -> Entitlement:
        """The full check for one gateway category at time ``now``."""
        if not self.logged_in:
            return Entitlement(coverage_key, "not_logged_in")
        claims = self.claims
        if claims is None:
            return Entitlement(coverage_key, "unknown")
        if claims.is_expired(now):
            return Entitlement(coverage_key, "expired")
        if claims.paid_access:
            return Entitlement(coverage_key, "paid")
        if claims.tool_access_enabled:
            return Entitlement(coverage_key, "free_tier" if coverage_key in claims.coverage else "not_covered")
        return Entitlement(coverage_key, "no_access")


def _nous_entry(auth: object) -> Mapping[str, Any] | None:
    if not isinstance(auth, Mapping):
        return None
    providers = auth.get("providers")
    nous = providers.get("nous") if isinstance(providers, Mapping) else None
    if isinstance(nous, Mapping) and _text(nous.get("access_token")):
        return nous
    pool = auth.get("credential_pool")
    entries = pool.get("nous") if isinstance(pool, Mapping) else None
    if isinstance(entries, list):
        for entry in entries:
            if isinstance(entry, Mapping) and _text(entry.get("access_token")):
                return entry
    return nous if isinstance(nous, Mapping) else None


def _portal_url(nous: Mapping[str, Any] | None, env: Mapping[str, str]) -> str:
    for name in ("HERMES_PORTAL_BASE_URL", "NOUS_PORTAL_BASE_URL"):
        value = _text(env.get(name))
        if value:
            return value.strip().rstrip("/")
    stored = _text(nous.get("portal_base_url")) if nous else None
    if stored:
        try:
            host = (urlsplit(stored.strip()).hostname or "").lower()
        except ValueError:
            host = ""
        if host in _PORTAL_HOSTS:
            return stored.strip().rstrip("/")
    return DEFAULT_PORTAL_URL


def _iso_time(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.timestamp()


def load_credentials(auth_path: Path, env: Mapping[str, str]) -> Credentials:
    """Read ``auth_path`` (read-only) and build :class:`Credentials`; never raises for file content.

    A missing file means "not logged in"; an unreadable or malformed one is reported in
    ``Credentials.warnings`` (and logged) and treated as absent. A file readable by group or others is
    used but warned about — it holds the portal tokens and should be mode 0600.
    """
    notes: list[str] = []
    document: object = None
    try:
        st = auth_path.stat()
        text = auth_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Credentials.from_sources(None, env)
    except (OSError, UnicodeDecodeError) as exc:
        notes.append(f"{auth_path} could not be read ({exc.__class__.__name__}); treating as not logged in")
    else:
        if os.name != "nt" and stat.S_IMODE(st.st_mode) & 0o077:
            notes.append(
                f"{auth_path} is readable by other users (mode {stat.S_IMODE(st.st_mode):04o}); "
                f"it holds your portal tokens: run 'chmod 600 {auth_path}'"
            )
        try:
            document = json.loads(text)
        except (ValueError, RecursionError):
            notes.append(f"{auth_path} is not valid JSON; treating as not logged in")
    for note in notes:
        log.warning("%s", note)
    return replace(Credentials.from_sources(document, env), warnings=tuple(notes))
