"""Connecting an account at an app's OAuth2 provider (authorization code + PKCE, with authlib).

Part of the ``connector`` label (:mod:`.connectors` routes here)::

    POST /v1/connectors/{app}/connect      {"name"?: "work", "replaces"?: "<id or name>"}  (gateway token)
         → {"connect_id", "url", "expires_at"}: open ``url`` in the account holder's browser
    GET  /v1/connectors/connect/{connect_id}   pending | awaiting_confirmation | connected (with the account)
                                               | failed (with why)
    POST /v1/connectors/connect/{connect_id}/confirm   {"code": "ABCD-EFGH"}  (gateway token, same user)
    GET  /v1/connectors/oauth/start?ticket=…   (the browser) a page naming the Hermes user who will get the
                                               account, with a button (no automatic redirect)
    POST /v1/connectors/oauth/start            (that button: ticket=…) sets the flow's cookie, 303 to the provider
    GET  /v1/connectors/oauth/callback?code=…&state=…   (the browser, sent back by the provider)

**What binds a flow.** ``connect`` records the flow for the caller (its id answers only them) and hands
out a single-use ``ticket``. ``start`` takes the ticket, makes the ``state`` and the PKCE verifier, keeps
them server-side with the user (the verifier sealed), and sets an HttpOnly cookie holding a third
random value — so the ``state`` is bound to the user *and* to the browser that started, and the
callback is refused in any other browser. ``state`` is taken in one statement (``DELETE … RETURNING``):
it works once, whatever happens next. Everything lives ten minutes. The redirect URI is the app's
configured one (:mod:`hermes.toolgateway.connector_oauth`); nothing a client sends picks it.

**What ties the browser to the client.** The link alone proves nothing: anyone can start a flow and send
the link to someone else, whose sign-in would then land under the sender's Hermes user. So the callback
stores no account: it exchanges the code, keeps the provider's tokens sealed with the flow and shows a
one-time confirmation code (:data:`CODE_LENGTH` symbols of 32, 40 bits). The account is stored only when
the client that called ``connect`` — its user's token — sends that code to ``…/confirm``; five wrong codes
end the flow (its tokens dropped), and the code lapses with the flow, ten minutes after ``connect``.

On confirmation the provider's tokens are sealed into a new account (``ConnectorStore.add``; with
``replaces`` the old account is retired and its token dropped, the new one keeping its name). No
answer, page or log line carries a provider token, code, verifier or the client secret.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import secrets
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import Receive, Scope

from hermes.toolgateway.errors import GatewayHTTPError, json_object, json_response
from hermes.toolgateway.storage.jobs import JobTable

if TYPE_CHECKING:
    from hermes.toolgateway.connector_apps import App
    from hermes.toolgateway.connector_oauth import OAuthProvider
    from hermes.toolgateway.portal.auth import Principal
    from hermes.toolgateway.services import Gateway
    from hermes.toolgateway.storage.connector_store import ConnectorStore

NAMESPACE = "connector-connect"
#: how long a flow may take, from ``connect`` to the confirmation
FLOW_TTL = 600.0
#: the confirmation code: symbols (no 0/O, 1/I), length (40 bits), wrong codes before the flow fails
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
CODE_ATTEMPTS = 5
AWAITING = "awaiting_confirmation"
_PAGE_HEADERS = {"cache-control": "no-store", "referrer-policy": "no-referrer",
                 "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
                 "x-frame-options": "DENY"}


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _page(status: int, title: str, text: str, extra: str = "") -> HTMLResponse:
    """A small page; ``extra`` is HTML the caller built (everything in it escaped)."""
    body = (f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
            f"<body style='font-family:sans-serif;max-width:40em;margin:3em auto'>"
            f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>{extra}</body>")
    return HTMLResponse(body, status, headers=_PAGE_HEADERS)


def _normal_code(code: str) -> str:
    return "".join(c for c in code.upper() if c not in "- \t")


def _shown_code(code: str) -> str:
    return code[:4] + "-" + code[4:]

class ConnectFlow:
    """The OAuth connect flows of one gateway."""

    def __init__(self, gateway: Gateway, apps: dict[str, App]) -> None:
        self.gateway = gateway
        self.apps = apps
        self.flows = JobTable(lambda: gateway.conn, NAMESPACE, ttl=FLOW_TTL, clock=gateway.clock)

    def _provider(self, app_name: str) -> tuple[App, OAuthProvider]:
        app = self.apps.get(app_name)
        if app is None:
            raise GatewayHTTPError(404, "unknown_app", f"this gateway runs no connector app {app_name!r}")
        if app.config.oauth is None:
            raise GatewayHTTPError(409, "no_oauth", f"{app.title} accounts are recorded by the gateway's operator "
                                                    "here; this gateway has no OAuth provider for it")
        return app, app.config.oauth

    # -- the account holder's client -----------------------------------------------------------------
    async def begin(self, principal: Principal, store: ConnectorStore, app_name: str, body: bytes) -> Response:
        from hermes.toolgateway.storage.connector_store import check_name

        app, provider = self._provider(app_name)
        data = json_object(body) if body.strip() else {}
        unknown = sorted(set(data) - {"name", "replaces"})
        if unknown:
            raise GatewayHTTPError(400, "invalid_request", f"unknown field(s): {', '.join(unknown)}")
        name = check_name(data["name"]) if data.get("name") is not None else ""
        replaces = ""
        if data.get("replaces") is not None:
            old = store.find(principal.user.id, app.config.app, str(data["replaces"]))
            if not old.active:
                raise GatewayHTTPError(409, "account_retired", "that account is already retired")
            replaces = old.id
        connect_id = "cn_" + secrets.token_hex(12)
        ticket = secrets.token_urlsafe(32)
        owner = str(principal.user.uid)
        flow = {"app": app.config.app, "user_id": str(principal.user.id), "user_name": principal.user.name,
                "name": name, "replaces": replaces, "status": "pending",
                "deadline": repr(self.gateway.clock() + FLOW_TTL)}
        await self.flows.remember("c:" + connect_id, owner, flow)
        await self.flows.remember("t:" + _digest(ticket), owner, {"connect_id": connect_id})
        start = provider.redirect_uri.removesuffix("/callback") + "/start?ticket=" + ticket
        return json_response({"connect_id": connect_id, "app": app.config.app, "app_title": app.title,
                              "url": start, "expires_at": _iso(self.gateway.clock() + FLOW_TTL)})

    async def status(self, principal: Principal, connect_id: str) -> Response:
        flow = await self.flows.get("c:" + connect_id, str(principal.user.uid))
        if flow is None:
            raise GatewayHTTPError(404, "unknown_connect", "no connect flow of yours with that id (flows last "
                                                           "ten minutes)")
        answer: dict[str, Any] = {"connect_id": connect_id, "app": flow["app"], "status": flow["status"]}
        if flow.get("account"):
            import json

            answer["account"] = json.loads(flow["account"])
        if flow.get("error"):
            answer["error"] = flow["error"]
        return json_response(answer)

    async def _finish(self, owner: str, connect_id: str, **changes: str) -> None:
        flow = await self.flows.get("c:" + connect_id, owner)
        if flow is not None:
            await self.flows.remember("c:" + connect_id, owner, {**flow, **changes})

    # -- the browser ---------------------------------------------------------------------------------
    async def start(self, scope: Scope, receive: Receive) -> Response:
        """GET: the page naming who gets the account; POST (its button): the flow's cookie and the provider."""
        from hermes.toolgateway.relays.base import read_body
        from hermes.toolgateway.storage.sealed import seal

        gone = _page(400, "This link no longer works",
                     "Connect links work once and for ten minutes. Start again from Hermes.")
        headers = Headers(scope=scope)
        if scope["method"] == "GET":
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            ticket = query.get("ticket", "")
            peeked = await self.flows.peek("t:" + _digest(ticket))
            flow = await self.flows.get("c:" + peeked[1]["connect_id"], peeked[0]) if peeked else None
            if flow is None or flow["status"] != "pending":
                return gone
            app, _ = self._provider(flow["app"])
            who = flow.get("user_name", "")
            form = ("<form method=post><input type=hidden name=ticket value='" + html.escape(ticket, quote=True)
                    + "'><p><button type=submit>Continue to " + html.escape(app.title) + " sign-in</button></p></form>")
            return _page(200, f"Connect {app.title} to the Hermes account {who}?",
                         f"The {app.title} account you sign in with next will be usable by the Hermes user {who}. "
                         "Continue only if you are that user and started this yourself in Hermes (hermes "
                         "connectors connect); if someone sent you this link, close this page.", form)
        if headers.get("sec-fetch-site", "same-origin") != "same-origin":
            return _page(403, "This sign-in cannot be started from another site",
                         "Open the link Hermes printed for you and use its button.")
        form_body = await read_body(scope, receive, headers, 4096)
        ticket = dict(parse_qsl(form_body.decode("latin-1"))).get("ticket", "")
        taken = await self.flows.take("t:" + _digest(ticket)) if ticket else None
        if taken is None:
            return gone
        owner, data = taken
        connect_id = data["connect_id"]
        flow = await self.flows.get("c:" + connect_id, owner)
        if flow is None or flow["status"] != "pending":
            return _page(400, "This link no longer works", "That connect flow has ended. Start again from Hermes.")
        _, provider = self._provider(flow["app"])
        state, verifier, browser = (secrets.token_urlsafe(32), secrets.token_urlsafe(64),
                                    secrets.token_urlsafe(32))
        cookie = "hc_" + connect_id[3:]
        await self.flows.remember("s:" + _digest(state), owner, {
            "connect_id": connect_id, "browser": _digest(browser), "cookie": cookie,
            "verifier": seal(self.gateway.sealing_key, connect_id, verifier)})
        async with provider.client() as client:
            url, _ = client.create_authorization_url(provider.authorize_url, state=state, code_verifier=verifier,
                                                     **provider.authorize_params)
        resp = RedirectResponse(url, 303, headers=_PAGE_HEADERS)
        path = provider.redirect_uri.split("://", 1)[1].partition("/")[2]
        resp.set_cookie(cookie, browser, max_age=int(FLOW_TTL), path="/" + path.rpartition("/")[0],
                        secure=provider.redirect_uri.startswith("https://"), httponly=True, samesite="lax")
        return resp

    async def callback(self, scope: Scope) -> Response:
        from hermes.toolgateway.storage.sealed import unseal

        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        state = query.get("state", "")
        taken = await self.flows.take("s:" + _digest(state)) if state else None
        if taken is None:
            return _page(400, "This sign-in cannot be used",
                         "It has expired, was used already, or did not start here. Start again from Hermes.")
        owner, data = taken
        connect_id = data["connect_id"]
        cookie = Headers(scope=scope).get("cookie", "")
        jar = dict(part.strip().partition("=")[::2] for part in cookie.split(";") if "=" in part)
        if not hmac.compare_digest(_digest(jar.get(data["cookie"], "")), data["browser"]):
            await self._finish(owner, connect_id, status="failed",
                               error="the sign-in came back to a different browser than the one that started it")
            return _page(400, "This sign-in cannot be used",
                         "It came back to a different browser than the one that started it.")
        flow = await self.flows.get("c:" + connect_id, owner)
        if flow is None or flow["status"] != "pending":
            return _page(400, "This sign-in cannot be used", "That connect flow has ended.")
        app, provider = self._provider(flow["app"])
        if query.get("error") or not query.get("code"):
            why = "".join(c for c in (query.get("error") or "no code")[:60] if c.isalnum() or c in "_-. ")
            await self._finish(owner, connect_id, status="failed", error=f"{app.title} did not grant access ({why})")
            return _page(400, f"{app.title} was not connected", f"{app.title} did not grant access ({why}).")
        verifier = unseal(self.gateway.sealing_key, connect_id, data["verifier"])
        return await self._connect(owner, connect_id, flow, app, provider, query["code"], verifier)

    async def _connect(self, owner: str, connect_id: str, flow: dict[str, str], app: App, provider: OAuthProvider,
                       code: str, verifier: str) -> Response:
        from hermes.toolgateway.connector_oauth import ProviderError, display_name, exchange_code
        from hermes.toolgateway.storage.sealed import seal

        gw = self.gateway
        try:
            token = await exchange_code(provider, code, verifier, gw.clock())
        except ProviderError as exc:
            await self._finish(owner, connect_id, status="failed", error=str(exc))
            return _page(502, f"{app.title} was not connected", str(exc))
        shown = await display_name(provider, token)
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        await self.flows.remember("k:" + connect_id, owner, {
            "token": seal(gw.sealing_key, connect_id, token.stored()), "display_name": shown or "",
            "code": seal(gw.sealing_key, connect_id + ":code", code), "attempts": "0"})
        await self._finish(owner, connect_id, status=AWAITING)
        label = f"the {app.title} account {shown}" if shown else f"this {app.title} account"
        box = ("<p style='font-size:2em;font-family:monospace;letter-spacing:.1em'>"
               + html.escape(_shown_code(code)) + "</p>")
        return _page(200, "Type this code into Hermes",
                     f"To connect {label} to the Hermes user {flow.get('user_name', '')}, type this code where Hermes "
                     "asks for it (hermes connectors connect). Never give it to anyone else: whoever types it gets "
                     "the account. It works once, within ten minutes of starting.", box)

    async def confirm(self, principal: Principal, connect_id: str, body: bytes) -> Response:
        """The code the callback page showed, from the client (same user) that started the flow."""
        from hermes.toolgateway.storage.connector_store import ConnectorStore, ConnectorStoreError
        from hermes.toolgateway.storage.sealed import seal, unseal

        gw = self.gateway
        data = json_object(body)
        if not isinstance(data.get("code"), str) or set(data) != {"code"}:
            raise GatewayHTTPError(400, "invalid_request", 'send {"code": "…"}: the code the browser showed')
        owner = str(principal.user.uid)
        flow = await self.flows.get("c:" + connect_id, owner)
        if flow is None:
            raise GatewayHTTPError(404, "unknown_connect", "no connect flow of yours with that id (flows last "
                                                           "ten minutes)")
        if flow["status"] != AWAITING:
            why = {"pending": "the sign-in has not finished in the browser yet",
                   "connected": "this flow has already connected its account"}.get(
                flow["status"], f"this flow has failed: {flow.get('error', '')}")
            raise GatewayHTTPError(409, "not_awaiting_confirmation", why)
        held = await self.flows.take("k:" + connect_id, owner)
        if gw.clock() >= float(flow.get("deadline", "0")):
            await self._finish(owner, connect_id, status="failed", error="the confirmation code has expired")
            raise GatewayHTTPError(410, "connect_expired", "the confirmation code has expired; start again")
        if held is None:  # another confirmation of this flow is being checked right now
            raise GatewayHTTPError(409, "confirmation_busy", "another confirmation of this flow is under way")
        kept = held[1]
        expected = unseal(gw.sealing_key, connect_id + ":code", kept["code"])
        if not hmac.compare_digest(_normal_code(data["code"]).encode(), expected.encode()):
            attempts = int(kept["attempts"]) + 1
            left = CODE_ATTEMPTS - attempts
            if left <= 0:
                await self._finish(owner, connect_id, status="failed", error="too many wrong confirmation codes")
            else:
                await self.flows.remember("k:" + connect_id, owner, {**kept, "attempts": str(attempts)})
            if left <= 0:
                raise GatewayHTTPError(400, "too_many_wrong_codes", "that is not the code the browser showed, "
                                       "and it was the last try: the flow has ended, start again",
                                       extra={"attempts_left": 0})
            raise GatewayHTTPError(400, "wrong_code", f"that is not the code the browser showed; {left} tries left",
                                   extra={"attempts_left": left})
        import json

        app, _ = self._provider(flow["app"])
        stored = unseal(gw.sealing_key, connect_id, kept["token"])
        store = ConnectorStore(gw.conn, gw.clock)
        try:
            account = store.add(int(flow["user_id"]), app.config.app, name=flow["name"] or None,
                                display_name=kept["display_name"] or None, replaces=flow["replaces"] or None,
                                credential=lambda ident: seal(gw.sealing_key, ident, stored))
        except ConnectorStoreError as exc:
            await self._finish(owner, connect_id, status="failed", error=exc.message)
            raise GatewayHTTPError(409, exc.code, exc.message) from None
        await self._finish(owner, connect_id, status="connected", account=json.dumps(account.as_json()))
        return await self.status(principal, connect_id)
