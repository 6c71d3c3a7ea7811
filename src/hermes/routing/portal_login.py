"""``hermes portal login`` / ``logout``: the OAuth device-code flow as the Nous Portal speaks it.

1. ``POST {portal}/api/oauth/device/code`` (form ``client_id=hermes-cli``, ``scope``) answers
   ``device_code``, ``user_code``, ``verification_uri``, ``verification_uri_complete``, ``expires_in``
   and ``interval`` — all six are required;
2. the person opens the verification URL and approves the user code;
3. meanwhile ``POST {portal}/api/oauth/token`` (``grant_type=urn:ietf:params:oauth:grant-type:device_code``)
   is polled every ``interval`` seconds: ``authorization_pending`` keeps waiting, ``slow_down`` adds a
   second, anything else ends the login with the portal's ``error_description``;
4. the tokens are stored in ``HERMES_HOME/auth.json`` (:class:`~hermes.routing.portal_auth.AuthStore`);
5. ``GET {portal}/api/oauth/account`` once: a self-hosted gateway's portal answers with a
   ``tool_gateway`` block (its relay origins and what it offers), stored beside the tokens
   (:mod:`hermes.routing.advertised`).

Logging in changes nothing else: not the model provider, not any tool's route. Logging out removes the
stored tokens (the portal's own session, if any, is ended on the portal).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.routing.advertised import AdvertisedGateway
from hermes.routing.credentials import Claims, Credentials, decode_jwt_payload, load_credentials
from hermes.routing.portal_auth import CLIENT_ID, LOGIN_SCOPE, AuthStore
from hermes.routing.portal_http import PortalError, TokenResponse, get_json, oauth_error, post_form

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
_FIELDS = ("device_code", "user_code", "verification_uri", "verification_uri_complete", "expires_in", "interval")
_MAX_INTERVAL = 30.0
_TRANSPORT_TRIES = 3


@dataclass(frozen=True)
class DeviceCode:
    """The portal's answer to a device authorization request (the device code is a secret)."""

    device_code: str = field(repr=False)
    user_code: str
    verification_uri: str
    verification_uri_complete: str
    expires_in: float
    interval: float


@dataclass(frozen=True)
class LoginResult:
    portal: str
    credentials: Credentials
    account: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class DeviceFlow:
    """An OAuth device-code server (RFC 8628): where to ask, as which client, and how to name it in errors.
    The Nous Portal's (:func:`nous_flow`) and xAI's (:mod:`hermes.routing.xai_oauth`) share this code."""

    server: str
    client_id: str
    device_path: str
    token_path: str
    who: str
    again: str
    #: the fields the device answer must have (RFC 8628 makes ``verification_uri_complete`` optional)
    required: tuple[str, ...] = _FIELDS
    default_interval: float = 5.0


def nous_flow(portal: str) -> DeviceFlow:
    return DeviceFlow(portal, CLIENT_ID, "/api/oauth/device/code", "/api/oauth/token", f"the Nous Portal at {portal}",
                      "hermes portal login")


def request_device_code(portal: str | DeviceFlow, scope: str = LOGIN_SCOPE) -> DeviceCode:
    """Step 1; PortalError when the answer lacks a required field."""
    flow = portal if isinstance(portal, DeviceFlow) else nous_flow(portal)
    status, body = post_form(flow.server, flow.device_path, {"client_id": flow.client_id, "scope": scope})
    if status != 200:
        code, text = oauth_error(body)
        raise PortalError(f"{flow.who} refused to start a login (HTTP {status}, {code}: {text})")
    missing = [name for name in flow.required if body.get(name) in (None, "")]
    body.setdefault("interval", flow.default_interval)
    numbers = [body.get("expires_in"), body.get("interval")]
    if missing or not all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
        what = ", ".join(missing) or "expires_in/interval as numbers"
        raise PortalError(f"{flow.who} answered the login request without {what}")
    return DeviceCode(
        device_code=str(body["device_code"]),
        user_code=str(body["user_code"]),
        verification_uri=str(body["verification_uri"]),
        verification_uri_complete=str(body.get("verification_uri_complete") or body["verification_uri"]),
        expires_in=float(body["expires_in"]),
        interval=float(body["interval"]),
    )


def wait_for_approval(portal: str | DeviceFlow, code: DeviceCode, *, sleep: Callable[[float], None] = time.sleep,
                      clock: Callable[[], float] = time.monotonic) -> TokenResponse:
    """Step 3: poll until the code is approved, denied or expired."""
    flow = portal if isinstance(portal, DeviceFlow) else nous_flow(portal)
    interval = min(max(code.interval, 1.0), _MAX_INTERVAL)
    deadline = clock() + code.expires_in
    failures = 0
    form = {"grant_type": DEVICE_GRANT, "client_id": flow.client_id, "device_code": code.device_code}
    expired = f"the login code expired before it was approved; run '{flow.again}' again"
    while True:
        if clock() + interval > deadline:
            raise PortalError(expired)
        sleep(interval)
        try:
            status, body = post_form(flow.server, flow.token_path, form, secrets=(code.device_code,))
        except PortalError:
            failures += 1
            if failures >= _TRANSPORT_TRIES:
                raise
            continue
        failures = 0
        if status == 200 and "access_token" in body:
            return TokenResponse.from_body(body, flow.server)
        error, text = oauth_error(body, (code.device_code,))
        if error == "authorization_pending":
            continue
        if error == "slow_down":
            interval = min(interval + 1.0, _MAX_INTERVAL)
            continue
        if error == "access_denied":
            raise PortalError(f"the login was denied on {flow.who}; nothing was saved")
        if error == "expired_token":
            raise PortalError(expired)
        raise PortalError(f"{flow.who} refused the login ({error}: {text})")


def login(auth_path: Path, env: Mapping[str, str], portal: str, *, show: Callable[[DeviceCode], None],
          sleep: Callable[[float], None] = time.sleep, fetch_account: bool = True) -> LoginResult:
    """The whole device-code login against ``portal``; ``show`` tells the person where to approve."""
    code = request_device_code(portal)
    show(code)
    tokens = wait_for_approval(portal, code, sleep=sleep)
    payload = decode_jwt_payload(tokens.access_token)
    exp = payload.get("exp") if payload else None
    if isinstance(exp, int | float) and not isinstance(exp, bool) and exp <= time.time():
        raise PortalError("the Nous Portal issued an access token that has already expired; check the clock "
                          "of this machine and try again")
    store = AuthStore(auth_path)
    with store.lock():
        store.save_tokens(tokens, portal, time.time())
    account = account_info(portal, tokens.access_token) if fetch_account else None
    advertised = AdvertisedGateway.read(account.get("tool_gateway")) if account is not None else None
    if advertised is not None:  # a self-hosted gateway's relay origins, kept beside the token
        with store.lock():
            store.set_gateway(advertised.to_json())
    credentials = load_credentials(auth_path, env)
    if account is not None and credentials.claims is None:
        credentials = credentials.with_claims(Claims.from_account_info(account))
    return LoginResult(portal, credentials, account)


def account_info(portal: str, token: str) -> Mapping[str, Any] | None:
    """``GET {portal}/api/oauth/account`` once (8 s); None on any failure or an ``error`` answer."""
    try:
        status, body = get_json(portal, "/api/oauth/account", token=token)
    except PortalError:
        return None
    if status != 200 or isinstance(body.get("error"), str):
        return None
    return body


def logout(auth_path: Path) -> bool:
    """Remove the stored portal login; True when there was one."""
    store = AuthStore(auth_path)
    with store.lock():
        return store.clear_nous()


def plan_text(credentials: Credentials) -> str:
    """``paid plan``, ``free tool tier (covers: fal, firecrawl)``, ``no tool access`` or ``unknown``."""
    claims = credentials.claims
    if claims is None:
        return "unknown (the token carries no readable claims; the gateway decides on each call)"
    name = claims.subscription_tier or ""

    def tier(*said: str) -> str:  # the tier's name, unless the words already say it ("paid (paid)")
        return f" ({name})" if name and name.strip().lower() not in said else ""

    if claims.paid_access:
        return f"paid{tier('paid')} — managed tools available"
    if claims.tool_access_enabled:
        covered = ", ".join(sorted(claims.coverage)) or "nothing yet"
        return f"free tool tier{tier('free', 'free tier', 'free tool tier')} — covers {covered}"
    return f"no subscription with tool access{tier('none')}"
