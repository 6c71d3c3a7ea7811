"""A SuperGrok login for the xAI API: ``hermes auth add xai --type oauth`` (OAuth 2.0 device code, RFC 8628).

xAI's authorization server (issuer ``https://auth.x.ai``; ``XAI_OAUTH_ISSUER`` points elsewhere, e.g. a
test server on loopback) offers the device-code grant to its public command-line client. hermes does not
ship xAI documentation for it: the endpoints (``/oauth2/device/code``, ``/oauth2/token``), the client id and
the scopes below are the ones xAI's public client uses, and the access token is a bearer for
``api.x.ai`` like an API key (so the subscription pays instead of API credit). The flow is the one the
Nous Portal login uses (:class:`~hermes.routing.portal_login.DeviceFlow`): show the code, poll for it.

The tokens are kept in ``HERMES_HOME/auth.json`` (0600, under its lock) as ``providers.xai-oauth``:
``access_token``, ``refresh_token``, ``expires_at`` (epoch seconds), ``token_type``, ``scope``,
``issuer``, ``obtained_at``. :func:`stored_token` is the offline answer (status, tools list: logged in or
not); :func:`fresh_token` renews a token that expires within :data:`REFRESH_MARGIN` seconds with the
refresh token first (one network call, only then), for the calls that send it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hermes.routing.portal_login import DeviceCode, DeviceFlow, request_device_code, wait_for_approval

ISSUER = "https://auth.x.ai"
CLIENT_ID = "b1a00492-073a-47ea-816f-4c329264a828"
SCOPE = "openid profile email offline_access grok-cli:access api:access"
PROVIDER_KEY = "xai-oauth"
#: the variable a SuperGrok login stands in for
VARIABLE = "XAI_API_KEY"
REFRESH_MARGIN = 300.0


def issuer(env: Mapping[str, str]) -> str:
    from hermes.routing.portal_http import check_portal_url

    return check_portal_url(env.get("XAI_OAUTH_ISSUER", "").strip() or ISSUER, "XAI_OAUTH_ISSUER")


def flow(env: Mapping[str, str]) -> DeviceFlow:
    return DeviceFlow(issuer(env), CLIENT_ID, "/oauth2/device/code", "/oauth2/token", "xAI's login server",
                      "hermes auth add xai --type oauth",
                      required=("device_code", "user_code", "verification_uri", "expires_in"))


def _entry(auth_path: Path) -> dict[str, Any] | None:
    from hermes.routing.portal_auth import AuthStore

    if not auth_path.exists():
        return None
    providers = AuthStore(auth_path).read().get("providers")
    entry = providers.get(PROVIDER_KEY) if isinstance(providers, dict) else None
    if isinstance(entry, dict) and isinstance(entry.get("access_token"), str) and entry["access_token"].strip():
        return entry
    return None


def _save(auth_path: Path, env: Mapping[str, str], body: Mapping[str, Any], previous: Mapping[str, Any] | None,
          now: float) -> dict[str, Any]:
    """Store a token answer (the caller holds the lock); a refresh keeps what the answer leaves out."""
    from hermes.routing.portal_auth import AuthStore

    store = AuthStore(auth_path)
    document = store.read()
    found = document.get("providers")
    providers: dict[str, Any] = found if isinstance(found, dict) else {}
    entry: dict[str, Any] = dict(previous or {})
    expires = body.get("expires_in")
    entry.update({"access_token": str(body["access_token"]).strip(), "token_type": body.get("token_type") or "Bearer",
                  "scope": body.get("scope") or entry.get("scope") or SCOPE, "issuer": issuer(env),
                  "obtained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
                  "expires_at": now + float(expires) if isinstance(expires, int | float) and expires > 0 else None})
    if isinstance(body.get("refresh_token"), str) and body["refresh_token"].strip():
        entry["refresh_token"] = body["refresh_token"].strip()
    providers[PROVIDER_KEY] = entry
    document["providers"] = providers
    store.write(document)
    return entry


def login(auth_path: Path, env: Mapping[str, str], *, show: Callable[[DeviceCode], None],
          sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """The device-code login; returns what was stored, without the tokens."""
    from hermes.routing.portal_auth import AuthStore

    device = flow(env)
    code = request_device_code(device, SCOPE)
    show(code)
    tokens = wait_for_approval(device, code, sleep=sleep)
    body = {"access_token": tokens.access_token, "refresh_token": tokens.refresh_token,
            "token_type": tokens.token_type, "scope": tokens.scope, "expires_in": tokens.expires_in}
    with AuthStore(auth_path).lock():
        entry = _save(auth_path, env, body, None, time.time())
    return {k: v for k, v in entry.items() if k not in ("access_token", "refresh_token")}


def stored_token(auth_path: Path, now: float | None = None) -> str | None:
    """The stored access token when it is usable as it is or can be renewed (offline: no network)."""
    entry = _entry(auth_path)
    if entry is None:
        return None
    expires = entry.get("expires_at")
    live = not isinstance(expires, int | float) or expires > (time.time() if now is None else now)
    return str(entry["access_token"]).strip() if live or entry.get("refresh_token") else None


def fresh_token(auth_path: Path, env: Mapping[str, str], now: float | None = None) -> str | None:
    """The access token, renewed first when it expires within :data:`REFRESH_MARGIN` seconds."""
    from hermes.errors import GatewayError
    from hermes.routing.portal_auth import AuthStore
    from hermes.routing.portal_http import PortalError, oauth_error, post_form

    entry = _entry(auth_path)
    if entry is None:
        return None
    at = time.time() if now is None else now
    expires = entry.get("expires_at")
    if not isinstance(expires, int | float) or expires - at > REFRESH_MARGIN:
        return str(entry["access_token"]).strip()
    with AuthStore(auth_path).lock():
        entry = _entry(auth_path) or entry  # another process may have renewed it meanwhile
        expires = entry.get("expires_at")
        if isinstance(expires, int | float) and expires - at > REFRESH_MARGIN:
            return str(entry["access_token"]).strip()
        refresh = entry.get("refresh_token")
        if not isinstance(refresh, str) or not refresh:
            return None
        try:
            status, body = post_form(issuer(env), "/oauth2/token", {
                "grant_type": "refresh_token", "client_id": CLIENT_ID, "refresh_token": refresh}, secrets=(refresh,))
        except PortalError as exc:
            raise GatewayError(f"the xAI login could not be renewed: {exc}") from None
        if status != 200 or not isinstance(body.get("access_token"), str):
            error, text = oauth_error(body, (refresh,))
            raise GatewayError(f"the xAI login could not be renewed ({error}: {text}); run "
                               "'hermes auth add xai --type oauth' again")
        return str(_save(auth_path, env, body, entry, at)["access_token"])


def logout(auth_path: Path) -> int:
    from hermes.routing.portal_auth import AuthStore

    store = AuthStore(auth_path)
    with store.lock():
        document = store.read()
        providers = document.get("providers")
        if not isinstance(providers, dict) or PROVIDER_KEY not in providers:
            return 0
        del providers[PROVIDER_KEY]
        store.write(document)
    return 1


def listing(auth_path: Path) -> list[dict[str, Any]]:
    entry = _entry(auth_path)
    if entry is None:
        return []
    return [{"provider": "xai", "label": "SuperGrok login", "kind": "oauth", "added_at": entry.get("obtained_at"),
             "expires_at": entry.get("expires_at"), "variable": VARIABLE,
             "usable": stored_token(auth_path) is not None}]
