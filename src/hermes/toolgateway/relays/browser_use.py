"""The ``browser-use`` relay: cloud browsers in the Browser Use API v3 shape.

The upstream client (``X-Browser-Use-API-Key: <gateway token>``, no ``Authorization`` header) sends::

    POST  /browsers  {"timeout": 5, "proxyCountryCode": "us"}
          X-Idempotency-Key: browser-use-session-create:<hex>   (kept after a 5xx, or a 409 "already in progress")
          → {"id", "cdpUrl", …} (+ optional header x-external-call-id); it then opens cdpUrl over a WebSocket
    PATCH /browsers/{id}  {"action": "stop"}  → 200/201/204 means stopped

``GET /browsers/{id}`` answers the session's state too. Backends (``[relays.browser-use]``):

* ``vendor`` — the Browser Use API at ``url`` with the operator's key (the user's token stops here). The
  vendor's ``cdpUrl`` is handed back as the vendor gave it, so the client's browser traffic then goes
  to the vendor directly; the gateway only creates, reads and stops sessions (it remembers which user
  created which session id: nobody else can read or stop it).
* ``local`` — a pool of headless Chromium processes on the gateway's host
  (:mod:`hermes.toolgateway.browser.pool`). ``cdpUrl`` points at the gateway itself —
  ``ws[s]://<public_url or the client's host>[/relay/browser-use]/cdp/<session id>?token=<secret>`` — a
  capability URL that only its session answers to; the gateway relays that WebSocket to the Chromium's
  DevTools pipe (Chromium opens no port), screening commands that would reach the host
  (:mod:`hermes.toolgateway.browser.cdpproxy`).

Idempotency: a create repeated with the same ``X-Idempotency-Key`` by the same user gets the first
answer again (not metered again), or ``409 {"error": {"message": "… already in progress"}}`` while the
first is still running. Metering: **1 unit per created session** (category ``browser-use``); reading
and stopping are free (0 units, still recorded).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

from hermes.toolgateway.browser.cdpproxy import open_client, relay_cdp
from hermes.toolgateway.browser.pool import BrowserPool, BrowserSession
from hermes.toolgateway.errors import GatewayHTTPError, json_object, refusal
from hermes.toolgateway.peers import PEER_HEADER, deny, target_of
from hermes.toolgateway.portal.auth import extract_token
from hermes.toolgateway.relays.base import Operation, Relay, RelayCall, RelayResult
from hermes.toolgateway.relays.vendor import raise_for_vendor, vendor_request
from hermes.toolgateway.storage.base import StorageError
from hermes.toolgateway.storage.jobs import JobTable

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway

_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
DEFAULT_MINUTES = 15
MAX_MINUTES = 240
MAX_CONNECTIONS = 8  # client WebSockets on one local session at once
IDEMPOTENCY_TTL = 3600.0
IDEMPOTENCY_MAX = 10_000
#: request fields passed on to the vendor (profiles and recordings belong to the operator's account: dropped)
VENDOR_FIELDS = ("proxyCountryCode", "browserScreenWidth", "browserScreenHeight", "allowResizing")


def create_options(body: bytes) -> dict[str, Any]:
    """The create request's JSON object, checked (400 ``invalid_request`` names the field)."""
    data = json_object(body)
    minutes = data.get("timeout", DEFAULT_MINUTES)
    if isinstance(minutes, bool) or not isinstance(minutes, int) or not 1 <= minutes <= MAX_MINUTES:
        raise GatewayHTTPError(400, "invalid_request",
                               f"'timeout' must be a whole number of minutes, 1 to {MAX_MINUTES}")
    for name in ("browserScreenWidth", "browserScreenHeight"):
        value = data.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 6144):
            raise GatewayHTTPError(400, "invalid_request", f"'{name}' must be a number of pixels, 100 to 6144")
    country = data.get("proxyCountryCode")
    if country is not None and (not isinstance(country, str) or len(country) > 8):
        raise GatewayHTTPError(400, "invalid_request", "'proxyCountryCode' must be a short country code")
    return data


def cdp_url(base_url: str, session: BrowserSession) -> str:
    """The capability URL of a local session, on the origin (and prefix) the client used."""
    scheme, _, rest = base_url.partition("://")
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/cdp/{session.id}?token={session.secret}"


@dataclass
class _Create:
    """A create seen with an idempotency key: whose, and its answer once there is one."""

    owner: str
    expires: float
    result: RelayResult | None = None


def _conflict(code: str, message: str) -> RelayResult:
    # the upstream client reads error.message to decide whether to retry with the same key
    return RelayResult.of_json({"success": False, "error": {"message": message, "code": code}, "code": code,
                                "message": message}, 409)


class BrowserUseRelay(Relay):
    """Browser sessions from the Browser Use API or from a local Chromium pool."""

    label = "browser-use"
    category = "browser-use"
    token_sources = ("x-browser-use-api-key", "bearer")

    def __init__(self, gateway: Gateway) -> None:
        cfg = gateway.config.browser_use
        self.pool = BrowserPool(cfg) if cfg.backend == "local" else None
        self.vendor_sessions = JobTable(lambda: gateway.conn, self.label)
        self._creates: OrderedDict[str, _Create] = OrderedDict()
        super().__init__(gateway)

    def operations(self) -> Sequence[Operation]:
        return (Operation("POST", "/browsers", "create", self.create, measure=self._create_units),
                Operation("GET", "/browsers/{id}", "get", self.get, units=0),
                Operation("PATCH", "/browsers/{id}", "stop", self.stop, units=0))

    def match(self, path: str, method: str) -> Operation:
        head, _, session_id = path.rstrip("/").rpartition("/")
        if head == "/browsers" and _SESSION_ID.match(session_id):
            path = "/browsers/{id}"
        return super().match(path, method)

    def backend(self, operation: str) -> str:
        return "local" if self.pool is not None else "browser-use"

    async def aclose(self) -> None:
        if self.pool is not None:
            await self.pool.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a local session held here; forward a request for one another process holds (peers)."""
        gw, pool = self.gateway, self.pool

        async def holder() -> str | None:
            head, _, session_id = str(scope["path"]).rstrip("/").rpartition("/")
            if pool is None or head != "/browsers" or not session_id or pool.knows(session_id):
                return None
            principal = await gw.auth.authenticate_async(extract_token(Headers(scope=scope), self.token_sources))
            return await gw.peers.holder("browser", session_id, principal.user.uid)

        await gw.peers.serve(scope, receive, send, super().__call__, find=holder, what="browser session",
                             limit=self.max_request_bytes())

    # -- idempotency ---------------------------------------------------------------------------------
    def _known(self, key: str | None) -> _Create | None:
        now = time.monotonic()
        while self._creates:
            oldest = next(iter(self._creates.values()))
            if oldest.expires > now and len(self._creates) <= IDEMPOTENCY_MAX:
                break
            self._creates.popitem(last=False)
        return self._creates.get(key) if key else None

    def _create_units(self, body: bytes, headers: Headers) -> int:
        """1 per session; 0 for a repeat of a create already seen (it is answered, not created again)."""
        create_options(body)
        return 0 if self._known(headers.get("x-idempotency-key")) is not None else 1

    # -- operations ----------------------------------------------------------------------------------
    async def create(self, call: RelayCall) -> RelayResult:
        options = create_options(call.body)
        owner = call.principal.user.uid
        key = call.headers.get("x-idempotency-key")
        if key is not None and not 1 <= len(key) <= 200:
            raise GatewayHTTPError(400, "invalid_request", "X-Idempotency-Key must be 1 to 200 characters")
        seen = self._known(key)
        if seen is not None:
            if seen.owner != owner:
                return _conflict("idempotency_key_reused", "this idempotency key belongs to another request")
            if seen.result is None:
                return _conflict("create_in_progress", "creating this browser session is already in progress")
            return seen.result
        entry = _Create(owner, time.monotonic() + IDEMPOTENCY_TTL)
        if key is not None:
            self._creates[key] = entry
        try:
            if self.pool is not None:
                result = await self._create_local(call, options)
            else:
                result = await self._create_vendor(call, options, key)
        except BaseException:
            if key is not None:
                self._creates.pop(key, None)
            raise
        entry.result = result
        return result

    async def _create_local(self, call: RelayCall, options: dict[str, Any]) -> RelayResult:
        assert self.pool is not None
        lifetime = min(options.get("timeout", DEFAULT_MINUTES) * 60.0, self.gateway.config.browser_use.max_lifetime)
        session = await self.pool.create(call.principal.user.uid, call.principal.jti, lifetime, call.deadline)
        session.cdp_url = cdp_url(call.base_url, session)
        peers = self.gateway.peers  # the other processes forward this session's requests and WebSocket here
        await peers.hold("browser", session.id, call.principal.user.uid, lifetime + 3600)
        await peers.hold("cdp", session.id, _capability(session.secret), lifetime)
        return RelayResult(201, json.dumps(session.view()).encode(), headers={"x-external-call-id": session.id})

    def _vendor_headers(self) -> dict[str, str]:
        key = self.gateway.config.browser_use.api_key
        headers = {"accept": "application/json"}
        if key:
            headers["x-browser-use-api-key"] = key
        return headers

    async def _vendor(self, call: RelayCall, method: str, path: str, *, body: Any = None,
                      headers: dict[str, str] | None = None) -> tuple[int, bytes, Any, dict[str, str]]:
        cfg = self.gateway.config.browser_use
        resp = await vendor_request(self.gateway.vendor_client, method, cfg.url + path, vendor="browser-use",
                                    limits=self.gateway.config.limits, deadline=call.deadline, json_body=body,
                                    headers={**self._vendor_headers(), **(headers or {})})
        raise_for_vendor(resp, "browser-use", (cfg.api_key,))
        data = resp.json("browser-use") if resp.body.strip() else None
        call_id = resp.headers.get("x-external-call-id")
        extra = {"x-external-call-id": call_id} if call_id else {}
        return resp.status, resp.body, data, extra

    async def _create_vendor(self, call: RelayCall, options: dict[str, Any], key: str | None) -> RelayResult:
        cap = max(1, int(self.gateway.config.browser_use.max_lifetime // 60))
        body = {name: options[name] for name in VENDOR_FIELDS if name in options}
        body["timeout"] = min(options.get("timeout", DEFAULT_MINUTES), cap)
        # the vendor sees one idempotency key per (user, key): two users' keys can never meet there
        seed = f"{call.principal.user.uid}\0{key}" if key else secrets.token_hex(16)
        idem = "browser-use-session-create:" + hashlib.sha256(seed.encode()).hexdigest()[:32]
        status, raw, data, extra = await self._vendor(call, "POST", "/browsers", body=body,
                                                      headers={"x-idempotency-key": idem})
        session_id = data.get("id") if isinstance(data, dict) else None
        if not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
            raise GatewayHTTPError(502, "vendor_bad_response", "browser-use answered without a session id")
        if not await self.vendor_sessions.remember(session_id, call.principal.user.uid, {"kind": "vendor"}):
            raise GatewayHTTPError(502, "vendor_bad_response", "browser-use answered with a session id in use")
        return RelayResult(status, raw, headers=extra)

    def _session_id(self, call: RelayCall) -> str:
        return call.path.rstrip("/").rpartition("/")[2]

    def _unknown(self, session_id: str) -> GatewayHTTPError:
        return GatewayHTTPError(404, "unknown_session", f"no browser session {session_id} for this token")

    async def get(self, call: RelayCall) -> RelayResult:
        session_id = self._session_id(call)
        owner = call.principal.user.uid
        if self.pool is not None:
            view = self.pool.get(session_id, owner)
            if view is None:
                raise self._unknown(session_id)
            return RelayResult.of_json(view)
        if await self.vendor_sessions.get(session_id, owner) is None:
            raise self._unknown(session_id)
        status, raw, _data, extra = await self._vendor(call, "GET", f"/browsers/{session_id}")
        return RelayResult(status, raw, headers=extra)

    async def stop(self, call: RelayCall) -> RelayResult:
        session_id = self._session_id(call)
        owner = call.principal.user.uid
        if call.json().get("action") != "stop":
            raise GatewayHTTPError(400, "invalid_request", "the only action is {\"action\": \"stop\"}")
        if self.pool is not None:
            view = await self.pool.release(session_id, owner)
            if view is None:
                raise self._unknown(session_id)
            return RelayResult.of_json(view)
        if await self.vendor_sessions.get(session_id, owner) is None:
            raise self._unknown(session_id)
        status, raw, _data, extra = await self._vendor(call, "PATCH", f"/browsers/{session_id}",
                                                       body={"action": "stop"})
        return RelayResult(status, raw, headers=extra)

    # -- the CDP WebSocket (local backend) -----------------------------------------------------------
    async def websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``/cdp/<session id>?token=<secret>``: relay to the session's Chromium, or deny with JSON."""
        ws = WebSocket(scope, receive, send)
        try:
            peer = await self._cdp_holder(scope)
            if peer is not None:
                await self.gateway.peers.forward_websocket(peer, scope, receive, send, "browser session")
                return
            session = self._cdp_session(scope)
        except (GatewayHTTPError, StorageError) as exc:
            await deny(ws, scope, refusal(exc))
            return
        session.connections += 1  # counted before any await: concurrent connects cannot all pass the check
        try:
            try:
                client = await open_client(session)
            except Exception:  # the pipe is closed or Chromium does not answer: the browser is gone
                await deny(ws, scope, GatewayHTTPError(502, "browser_unavailable",
                                                        "the browser of this session does not answer"))
                return
            await relay_cdp(ws, client, session)
        finally:
            session.connections -= 1

    async def _cdp_holder(self, scope: Scope) -> str | None:
        """The other process holding the session this CDP address names; None to answer here. A forwarded
        connection is checked (403 ``peer_refused`` unless a process of this gateway signed it) and never
        forwarded again."""
        gw = self.gateway
        signed = Headers(scope=scope).get(PEER_HEADER)
        if signed is not None:
            gw.peers.check(signed, "GET", target_of(scope))
            return None
        parts = str(scope["path"]).split("/")
        secret = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[-1]
        if self.pool is None or len(parts) != 3 or parts[1] != "cdp" or not secret \
                or self.pool.connectable(parts[2], secret) is not None:
            return None
        return await gw.peers.holder("cdp", parts[2], _capability(secret))

    def _cdp_session(self, scope: Scope) -> BrowserSession:
        if self.pool is None:
            raise GatewayHTTPError(404, "not_found", "this gateway's browsers are the vendor's: use the cdpUrl it gave")
        parts = str(scope["path"]).split("/")
        raw_query = scope.get("query_string", b"").decode("latin-1")
        secret = parse_qs(raw_query).get("token", [""])[-1]
        session = None
        if len(parts) == 3 and parts[0] == "" and parts[1] == "cdp" and secret:
            session = self.pool.connectable(parts[2], secret)
        if session is None:
            raise GatewayHTTPError(404, "unknown_session", "no browser session answers to this address")
        self._still_allowed(session)
        if session.connections >= MAX_CONNECTIONS:
            raise GatewayHTTPError(429, "too_many_connections",
                                   f"a browser session takes at most {MAX_CONNECTIONS} connections at once",
                                   headers={"retry-after": "5"}, extra={"retry_after": 5})
        return session

    def _still_allowed(self, session: BrowserSession) -> None:
        """The token that created the session is still valid and its owner may still use browsers."""
        accounts = self.gateway.accounts
        state = accounts.token_state(session.jti)
        if state is None or state[0]:
            raise GatewayHTTPError(403, "token_revoked", "the token that created this session has been revoked")
        user = state[1]
        if user.disabled:
            raise GatewayHTTPError(403, "account_disabled", "this account is disabled; ask the gateway operator")
        if not user.plan_active(self.gateway.clock()) or not accounts.plan_of(user).covers(self.category):
            raise GatewayHTTPError(403, "not_entitled", "this account may no longer use browsers")


def _capability(secret: str) -> str:
    """What a CDP address's secret is recorded as (the other processes find the holder by it)."""
    return "cdp:" + hashlib.sha256(secret.encode()).hexdigest()


def openapi_paths(errors: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """The relay's endpoints under ``/relay/browser-use`` for the OpenAPI document."""
    text, stamp = {"type": "string"}, {"type": ["string", "null"]}
    session = {"type": "object", "required": ["id"], "properties": {
        "id": text, "status": {"type": "string"}, "cdpUrl": stamp, "liveUrl": stamp, "startedAt": stamp,
        "timeoutAt": stamp, "finishedAt": stamp}}
    key = {"name": "X-Browser-Use-API-Key", "in": "header", "schema": text,
           "description": "the gateway token (the upstream client's header; Authorization: Bearer works too)"}
    sid = {"name": "id", "in": "path", "required": True, "schema": {"type": "string", "pattern": _SESSION_ID.pattern}}
    common: dict[str, Any] = {"security": [{"gatewayToken": []}]}
    pixels = {"type": "integer", "minimum": 100, "maximum": 6144}
    create_body = {"type": "object", "properties": {
        "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_MINUTES},
        "proxyCountryCode": {**text, "maxLength": 8}, "browserScreenWidth": pixels,
        "browserScreenHeight": pixels, "allowResizing": {"type": "boolean"}}}

    def ok(status: str, description: str = "The browser session") -> dict[str, Any]:
        return {status: {"description": description, "content": {"application/json": {"schema": session}}}}

    return {
        "/relay/browser-use/browsers": {"post": {
            **common, "summary": "Create a browser session (also on browser-use-gateway.<domain>); 1 unit",
            "parameters": [key, {"name": "X-Idempotency-Key", "in": "header", "schema": {**text, "maxLength": 200}}],
            "requestBody": {"required": False, "content": {"application/json": {"schema": create_body}}},
            "responses": {**ok("201"), **errors(400, 401, 402, 403, 409, 413, 429, 502, 503, 504)}}},
        "/relay/browser-use/browsers/{id}": {
            "get": {**common, "summary": "A browser session this token's user created", "parameters": [key, sid],
                    "responses": {**ok("200"), **errors(401, 402, 403, 404, 429, 502, 503, 504)}},
            "patch": {**common, "summary": "Stop a browser session", "parameters": [key, sid],
                      "requestBody": {"required": True, "content": {"application/json": {"schema": {
                          "type": "object", "required": ["action"], "properties": {"action": {"enum": ["stop"]}}}}}},
                      "responses": {**ok("200"), **errors(400, 401, 402, 403, 404, 413, 429, 502, 503, 504)}}},
        "/relay/browser-use/cdp/{id}": {"get": {
            "summary": "A local session's Chrome DevTools Protocol WebSocket (the cdpUrl of the local backend)",
            "description": "Open with a WebSocket upgrade; the capability is the token query parameter. "
                           "Plain HTTP requests are answered 404.",
            "parameters": [sid, {"name": "token", "in": "query", "required": True, "schema": text}],
            "responses": {"101": {"description": "Switching Protocols: CDP messages both ways"},
                          **errors(401, 403, 404, 429, 502)}}},
    }


__all__ = ["BrowserUseRelay", "cdp_url", "create_options", "openapi_paths"]
