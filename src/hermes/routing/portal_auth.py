"""The portal login's stored tokens: ``HERMES_HOME/auth.json``, where they may be sent, and refresh.

Layout (the upstream client's, so either client reads the other's file)::

    {"version": 1,
     "providers": {"nous": {"portal_base_url": "https://portal.nousresearch.com", "client_id": "hermes-cli",
                            "scope": "inference:invoke tool:invoke", "token_type": "Bearer",
                            "access_token": "<JWT>", "refresh_token": "<opaque>",
                            "obtained_at": "<ISO-8601>", "expires_at": "<ISO-8601>", "expires_in": 3600}}}

* **Writes** are atomic (temporary file + rename) with mode 0600, under an advisory lock
  (``auth.json.lock``, ``flock``) so two processes refreshing at once do not both spend the same
  refresh token — the portal treats a refresh token presented twice as stolen and revokes the login.
  Other providers' entries in the file are kept.
* **Where the tokens may go.** Only to the portal that issued them: the entry's ``portal_base_url``,
  and only while it is still the configured portal (``HERMES_PORTAL_BASE_URL`` /
  ``NOUS_PORTAL_BASE_URL`` when set, otherwise one of the known portal hosts). Plain http is accepted
  for loopback only. Requests never follow redirects, and no message or log line carries a token.
* **Refresh** (:func:`fresh_credentials`) happens when a tool actually needs the token and the access
  token expires within :data:`REFRESH_LEEWAY` seconds: ``POST {portal}/api/oauth/token`` with
  ``grant_type=refresh_token`` and the refresh token in the ``x-nous-refresh-token`` header. The
  rotated refresh token is stored (the old one is kept when none comes back). A refused refresh
  (``invalid_grant``, ``invalid_token``, ``refresh_token_reused``) means "log in again"; a failed one
  leaves the stale token, so the tool's entitlement check explains what is wrong (GW-10).
  ``TOOL_GATEWAY_USER_TOKEN`` is never refreshed. Status commands never refresh.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hermes.errors import ConfigError
from hermes.routing.credentials import (
    _PORTAL_HOSTS,
    DEFAULT_PORTAL_URL,
    Credentials,
    decode_jwt_payload,
    load_credentials,
)
from hermes.routing.endpoints import parse_origin
from hermes.routing.portal_http import PortalError, TokenResponse, check_portal_url, oauth_error, post_form

log = logging.getLogger("hermes.routing")

CLIENT_ID = "hermes-cli"
LOGIN_SCOPE = "inference:invoke tool:invoke"
#: Refresh when the access token expires within this many seconds (the upstream client's margin).
REFRESH_LEEWAY = 120.0
PORTAL_ENV = ("HERMES_PORTAL_BASE_URL", "NOUS_PORTAL_BASE_URL")
_REJECTED = frozenset({"invalid_grant", "invalid_token", "refresh_token_reused"})


class LoginRequired(PortalError):
    """The stored login cannot be renewed: the person must run ``hermes portal login`` again."""


# -- the portal URL ---------------------------------------------------------------------------------
def _env_portal(env: Mapping[str, str]) -> tuple[str, str] | None:
    for name in PORTAL_ENV:
        value = env.get(name)
        if isinstance(value, str) and value.strip():
            return name, value.strip()
    return None


def resolve_portal_url(flag: str | None, env: Mapping[str, str]) -> str:
    """The portal to log in to: ``--portal-url``, then the two variables, then the production portal."""
    if flag:
        return check_portal_url(flag, "--portal-url")
    found = _env_portal(env)
    if found is not None:
        return check_portal_url(found[1], found[0])
    return DEFAULT_PORTAL_URL


def _same_portal(a: str, b: str) -> bool:
    return parse_origin(a) == parse_origin(b) and _path(a) == _path(b)


def _path(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).path.rstrip("/")


def token_portal(entry: Mapping[str, Any] | None, env: Mapping[str, str]) -> str | None:
    """The portal the stored tokens may be sent to, or None (see the module docstring)."""
    stored = entry.get("portal_base_url") if entry else None
    stored = stored.strip().rstrip("/") if isinstance(stored, str) and stored.strip() else DEFAULT_PORTAL_URL
    try:
        stored = check_portal_url(stored)
    except ConfigError:
        return None
    found = _env_portal(env)
    if found is not None:
        return stored if _same_portal(stored, found[1]) else None
    origin = parse_origin(stored)
    return stored if origin is not None and origin.host in _PORTAL_HOSTS else None


def portal_mismatch_text(entry: Mapping[str, Any] | None, env: Mapping[str, str]) -> str:
    """Why :func:`token_portal` refused, for messages (names variables and hosts, never tokens)."""
    stored = entry.get("portal_base_url") if entry else None
    found = _env_portal(env)
    if found is not None:
        return (f"the login was made with the portal {stored or DEFAULT_PORTAL_URL}, but {found[0]} names "
                "another one; run 'hermes portal login' for the configured portal")
    return (f"the login was made with the portal {stored}, which is not a known portal host; set "
            "HERMES_PORTAL_BASE_URL to it in ~/.hermes/.env, or run 'hermes portal login' again")


def _iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _parse_iso(value: object) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.timestamp() if moment.tzinfo is not None else None


def entry_expiry(entry: Mapping[str, Any] | None) -> float | None:
    """When the stored access token expires: the earlier of ``expires_at`` and the JWT's ``exp``."""
    if not entry:
        return None
    found: list[float] = []
    stored = _parse_iso(entry.get("expires_at"))
    if stored is not None:
        found.append(stored)
    payload = decode_jwt_payload(entry.get("access_token"))
    exp = payload.get("exp") if payload else None
    if isinstance(exp, int | float) and not isinstance(exp, bool):
        found.append(float(exp))
    return min(found) if found else None


# -- auth.json ----------------------------------------------------------------------------------------
class AuthStore:
    """``HERMES_HOME/auth.json``: read, write (atomic, 0600) and lock."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any]:
        """The document; ``{}`` when missing. Unreadable or malformed content also reads as ``{}``."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            log.warning("%s is unreadable or not JSON; it will be replaced on the next login", self.path)
            return {}
        return data if isinstance(data, dict) else {}

    def nous(self) -> dict[str, Any] | None:
        """``providers.nous`` when it holds a token."""
        providers = self.read().get("providers")
        entry = providers.get("nous") if isinstance(providers, dict) else None
        if isinstance(entry, dict) and isinstance(entry.get("access_token"), str) and entry["access_token"]:
            return entry
        return None

    def write(self, document: Mapping[str, Any]) -> None:
        from hermes.config.atomic import atomic_write

        atomic_write(self.path, json.dumps(document, indent=2, ensure_ascii=False) + "\n", mode=0o600)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold ``auth.json.lock`` (POSIX ``flock``; elsewhere a no-op)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            yield
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def save_tokens(self, tokens: TokenResponse, portal: str, now: float, previous: Mapping[str, Any] | None = None
                    ) -> dict[str, Any]:
        """Store a token answer as ``providers.nous`` (a refresh keeps what the answer leaves out)."""
        document = self.read()
        entry: dict[str, Any] = dict(previous or {})
        entry.update({
            "portal_base_url": portal,
            "client_id": CLIENT_ID,
            "scope": tokens.scope or entry.get("scope") or LOGIN_SCOPE,
            "token_type": tokens.token_type,
            "access_token": tokens.access_token,
            "obtained_at": _iso(now),
        })
        if tokens.refresh_token is not None:
            entry["refresh_token"] = tokens.refresh_token
        if tokens.inference_base_url:
            entry["inference_base_url"] = tokens.inference_base_url
        for stale in ("expires_at", "expires_in", "agent_key", "agent_key_expires_at"):
            entry.pop(stale, None)
        if tokens.expires_in is not None:
            entry["expires_in"] = int(tokens.expires_in)
            entry["expires_at"] = _iso(now + tokens.expires_in)
        else:
            exp = entry_expiry({"access_token": tokens.access_token})
            if exp is not None:
                entry["expires_at"] = _iso(exp)
        document["version"] = document.get("version", 1)
        providers = document.get("providers")
        if not isinstance(providers, dict):
            providers = document["providers"] = {}
        providers["nous"] = entry
        self.write(document)
        return entry

    def set_gateway(self, block: Mapping[str, Any]) -> None:
        """Store the gateway the login advertised as ``providers.nous.tool_gateway`` (kept by refreshes)."""
        document = self.read()
        providers = document.get("providers")
        entry = providers.get("nous") if isinstance(providers, dict) else None
        if isinstance(entry, dict):
            entry["tool_gateway"] = dict(block)
            self.write(document)

    def clear_nous(self) -> bool:
        """Remove the portal login (``providers.nous`` and ``credential_pool.nous``); True when one was there."""
        document = self.read()
        removed = False
        for section in ("providers", "credential_pool"):
            block = document.get(section)
            if isinstance(block, dict) and "nous" in block:
                del block["nous"]
                removed = True
                if not block:
                    del document[section]
        if document.get("active_provider") == "nous":
            del document["active_provider"]
            removed = True
        if not removed:
            return False
        if set(document) <= {"version"}:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        else:
            self.write(document)
        return True


# -- refresh ------------------------------------------------------------------------------------------
def expiring(entry: Mapping[str, Any] | None, now: float, leeway: float = REFRESH_LEEWAY) -> bool:
    """Whether the stored access token expires within ``leeway`` (a token without any expiry: no)."""
    expiry = entry_expiry(entry)
    return expiry is not None and expiry <= now + leeway


def refreshable(entry: Mapping[str, Any] | None) -> bool:
    """Whether the stored login holds a refresh token."""
    token = entry.get("refresh_token") if entry else None
    return isinstance(token, str) and bool(token.strip())


def request_refresh(portal: str, refresh_token: str) -> TokenResponse:
    """One refresh at the portal; LoginRequired when the portal refuses the refresh token."""
    status, body = post_form(portal, "/api/oauth/token", {"grant_type": "refresh_token", "client_id": CLIENT_ID},
                             headers={"x-nous-refresh-token": refresh_token}, secrets=(refresh_token,))
    if status == 200 and "access_token" in body:
        return TokenResponse.from_body(body, portal)
    code, text = oauth_error(body, (refresh_token,))
    if code in _REJECTED:
        raise LoginRequired(f"the Nous Portal refused to renew your login ({code}: {text}); "
                            "run 'hermes portal login'")
    raise PortalError(f"the Nous Portal at {portal} could not renew your login (HTTP {status}, {code}: {text})")


def refresh_stored(path: Path, env: Mapping[str, str], *, now: float | None = None,
                   leeway: float = REFRESH_LEEWAY, force: bool = False) -> bool:
    """Refresh the stored login if it expires within ``leeway`` (or ``force``); True when new tokens were saved.

    Runs under the auth.json lock and re-reads the file inside it, so a login another process has just
    refreshed is not refreshed twice.
    """
    store = AuthStore(path)
    with store.lock():
        entry = store.nous()
        moment = time.time() if now is None else now
        if entry is None:
            raise LoginRequired("you are not logged in to Nous Portal; run 'hermes portal login'")
        if not force and not expiring(entry, moment, leeway):
            return False
        if not refreshable(entry):
            raise LoginRequired("your Nous Portal login has expired and holds no refresh token; "
                                "run 'hermes portal login'")
        portal = token_portal(entry, env)
        if portal is None:
            raise PortalError(f"not renewing the Nous Portal login: {portal_mismatch_text(entry, env)}")
        tokens = request_refresh(portal, str(entry["refresh_token"]))
        store.save_tokens(tokens, portal, moment, previous=entry)
        return True


def fresh_credentials(path: Path, env: Mapping[str, str], *, now: float | None = None,
                      leeway: float = REFRESH_LEEWAY) -> Credentials:
    """:func:`~hermes.routing.credentials.load_credentials`, refreshing the portal login first when it
    expires within ``leeway``. For tools about to call the gateway; never raises for portal trouble
    (the problem is logged and added to ``Credentials.warnings``; the entitlement check then explains).
    """
    credentials = load_credentials(path, env)
    if credentials.env_token or not credentials.access_token:
        return credentials
    moment = time.time() if now is None else now
    entry = AuthStore(path).nous()
    if not expiring(entry, moment, leeway):
        return credentials
    try:
        refresh_stored(path, env, now=moment, leeway=leeway)
    except (PortalError, ConfigError, OSError) as exc:
        log.warning("%s", exc)
        return replace(credentials, warnings=(*credentials.warnings, str(exc)))
    return load_credentials(path, env)
