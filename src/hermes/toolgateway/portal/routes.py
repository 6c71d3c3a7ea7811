"""The portal endpoints the clients log in with (the upstream client's ``hermes_cli/auth.py`` flow).

* ``POST /api/oauth/device/code`` — form ``client_id``, ``scope`` → ``device_code``, ``user_code``,
  ``verification_uri``, ``verification_uri_complete``, ``expires_in``, ``interval`` (all six required
  by the upstream client);
* ``POST /api/oauth/token`` — ``grant_type=urn:ietf:params:oauth:grant-type:device_code`` (form
  ``client_id``, ``device_code``) or ``grant_type=refresh_token`` (the refresh token in the
  ``x-nous-refresh-token`` header as the upstream client sends it, or the standard form field
  ``refresh_token``). Errors are ``{"error", "error_description"}`` with status 400;
* ``GET /api/oauth/account`` — ``Authorization: Bearer`` → the account document (entitlement fields
  ``paid_service_access.allowed``, ``paid_access``, ``tool_access``, plus display fields, and
  ``tool_gateway``: the origin of each relay and what the relays that are on offer — the client stores it
  beside its token, :mod:`hermes.toolgateway.offer`);
* ``GET|POST /device`` — the approval page. Approving needs proof of identity: a one-time *login link*
  (``hermes toolgateway users login-link NAME`` prints ``…/device?login=…``) or the admin token plus a
  user name (an operator approving for someone). The page sends no referrer, cannot be framed and runs
  no script.
"""

from __future__ import annotations

import hmac
import html
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from hermes.toolgateway.errors import GatewayHTTPError, json_response
from hermes.toolgateway.portal.accounts import AccountError, User
from hermes.toolgateway.portal.auth import extract_token
from hermes.toolgateway.portal.oauth import DEVICE_GRANT, OAuthError, normalise_user_code

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway

_MAX_FORM = 64 * 1024
_PAGE_HEADERS = {
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
}


async def read_form(request: Request) -> dict[str, str]:
    """A urlencoded (or JSON) body as a flat dict of first values; 413 past 64 KiB."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > _MAX_FORM:
            raise GatewayHTTPError(413, "request_too_large", "the form is too large")
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "application/json":
        import json

        try:
            data = json.loads(body or b"{}")
        except ValueError:
            raise GatewayHTTPError(400, "invalid_request", "the body is not valid JSON") from None
        if not isinstance(data, dict):
            raise GatewayHTTPError(400, "invalid_request", "the body must be a JSON object")
        return {str(k): str(v) for k, v in data.items() if isinstance(v, str | int)}
    try:
        parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=50)
    except (UnicodeDecodeError, ValueError):
        raise GatewayHTTPError(400, "invalid_request", "the form is not valid") from None
    return {k: v[0] for k, v in parsed.items() if v}


def portal_base(gw: Gateway, request: Request) -> str:
    """The portal's public URL: ``public_url`` when configured, else the URL this request came to."""
    if gw.config.public_url:
        return gw.config.public_url.rstrip("/")
    return str(request.base_url).rstrip("/")


def _oauth_error(exc: OAuthError) -> Response:
    return json_response(exc.body(), exc.status, {"pragma": "no-cache"})


def routes(gw: Gateway) -> list[Route]:
    """The portal routes bound to ``gw``."""

    async def device_code(request: Request) -> Response:
        form = await read_form(request)
        try:
            grant = gw.oauth.start_device(form.get("client_id", ""), form.get("scope"))
        except OAuthError as exc:
            return _oauth_error(exc)
        base = portal_base(gw, request)
        return json_response({
            "device_code": grant.device_code,
            "user_code": grant.user_code,
            "verification_uri": f"{base}/device",
            "verification_uri_complete": f"{base}/device?user_code={grant.user_code}",
            "expires_in": grant.expires_in,
            "interval": grant.interval,
        })

    async def token(request: Request) -> Response:
        form = await read_form(request)
        grant_type = form.get("grant_type", "")
        client_id = form.get("client_id", "")
        try:
            if grant_type == DEVICE_GRANT:
                tokens = gw.oauth.poll(form.get("device_code", ""), client_id)
            elif grant_type == "refresh_token":
                presented = request.headers.get("x-nous-refresh-token") or form.get("refresh_token", "")
                if not presented:
                    raise OAuthError("invalid_request", "send the refresh token in x-nous-refresh-token")
                tokens = gw.oauth.refresh(presented, client_id)
            else:
                raise OAuthError("unsupported_grant_type", f"grant_type {grant_type!r} is not supported")
        except OAuthError as exc:
            await gw.changes_applied()  # a reused refresh token revoked its family: every process first
            return _oauth_error(exc)
        request.scope.setdefault("state", {})["gw_user"] = tokens.subject
        return json_response(tokens.body(), 200, {"pragma": "no-cache"})

    async def account(request: Request) -> Response:
        principal = gw.auth.authenticate(extract_token(request.headers))
        request.scope.setdefault("state", {})["gw_user"] = principal.user.uid
        from hermes.toolgateway.offer import gateway_document

        info = dict(gw.accounts.account_info(principal.user))
        base = (gw.config.public_url or str(request.base_url)).rstrip("/")
        info["tool_gateway"] = gateway_document(gw.config, base)  # where this gateway's relays are, which are on
        return json_response(info)

    async def device_page(request: Request) -> Response:
        if request.method == "POST":
            return await _device_submit(gw, request)
        user_code = request.query_params.get("user_code", "")
        login = request.query_params.get("login", "")
        user = gw.oauth.peek_login_link(login) if login else None
        note = ""
        if login and user is None:
            note = "This sign-in link is invalid, expired or already used; ask the operator for a new one."
        return _page(_form(user_code, login if user else "", user), note)

    return [
        Route("/api/oauth/device/code", device_code, methods=["POST"]),
        Route("/api/oauth/token", token, methods=["POST"]),
        Route("/api/oauth/account", account, methods=["GET"]),
        Route("/device", device_page, methods=["GET", "POST"]),
    ]


async def _device_submit(gw: Gateway, request: Request) -> Response:
    form = await read_form(request)
    user_code = normalise_user_code(form.get("user_code", ""))
    approve = form.get("action", "approve") != "deny"
    if not user_code or gw.oauth.pending_device(user_code) is None:
        return _page(_form(user_code, form.get("login", ""), None),
                     "No pending login has that code (it may have expired or been used).", 400)
    user: User | None = None
    admin = form.get("admin_token", "")
    if admin:
        if not hmac.compare_digest(admin.encode(), gw.admin_token.encode()):
            return _page(_form(user_code, "", None), "The admin token is wrong.", 403)
        try:
            user = gw.accounts.get_user(form.get("user", ""))
        except AccountError as exc:
            return _page(_form(user_code, "", None), str(exc), 400)
    else:
        user = gw.oauth.consume_login_link(form.get("login", ""))
        if user is None:
            return _page(_form(user_code, "", None), "Sign in first: open the login link the operator gave you "
                         "(hermes toolgateway users login-link NAME).", 403)
    try:
        done = gw.oauth.decide(user_code, user, approve)
    except AccountError as exc:
        return _page(_form(user_code, "", None), str(exc), 403)
    if not done:
        return _page(_form(user_code, "", None), "That login is no longer pending.", 400)
    request.scope.setdefault("state", {})["gw_user"] = user.uid
    verdict = "approved" if approve else "denied"
    return _page(f"<p>Login <b>{html.escape(user_code)}</b> {verdict} for <b>{html.escape(user.name)}</b>. "
                 "You can close this page and return to your terminal.</p>", "")


def _form(user_code: str, login: str, user: User | None) -> str:
    e = html.escape
    who = (f"<p>Signed in as <b>{e(user.name)}</b> (one-time link).</p>"
           f'<input type="hidden" name="login" value="{e(login)}">') if user else (
        '<label>Sign-in code from your login link <input name="login" type="password" autocomplete="off"></label>'
        "<details><summary>Operator approval</summary>"
        '<label>Admin token <input name="admin_token" type="password" autocomplete="off"></label>'
        '<label>For user <input name="user"></label></details>')
    return (
        '<form method="post" action="device">'
        f'<label>Code shown in your terminal <input name="user_code" value="{e(user_code)}" '
        'autocomplete="off" required></label>'
        f"{who}"
        '<p><button name="action" value="approve">Approve</button> '
        '<button name="action" value="deny">Deny</button></p></form>'
    )


def _page(body: str, note: str, status: int = 200) -> Response:
    alert = f'<p class="note">{html.escape(note)}</p>' if note else ""
    doc = (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Tool Gateway login</title>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        "<style>body{font:16px system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem}"
        "label{display:block;margin:.8rem 0}input{display:block;width:100%;padding:.4rem;font:inherit}"
        "button{padding:.5rem 1.2rem;font:inherit}.note{color:#a40000}</style></head><body>"
        f"<h1>Approve a Hermes login</h1>{alert}{body}</body></html>"
    )
    return HTMLResponse(doc, status_code=status, headers=_PAGE_HEADERS)
