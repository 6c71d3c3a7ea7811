"""The connector API under the ``connector`` label (requirement GW-12, GW-14; issue 7): accounts per app.

Reached like a relay — ``Host: connector-gateway.<domain>`` or the pinned prefix ``/relay/connector`` —
with the user's gateway token (``Authorization: Bearer``)::

    GET    /v1/connectors/accounts                     every account of the caller, all apps
    GET    /v1/connectors/{app}/accounts               the caller's accounts of one app
    GET    /v1/connectors/{app}/accounts/{id}          one account
    PATCH  /v1/connectors/{app}/accounts/{id}          {"name": "work"} — name or rename (naming rule)
    POST   /v1/connectors/{app}/accounts/{id}/retire   keep it listed, stop using it
    DELETE /v1/connectors/{app}/accounts/{id}          delete it (the user's own command only)

Lists carry ``capabilities`` (``rename``: whether this gateway lets users set names; off with
``[connectors] rename = false``, then PATCH answers 501 ``rename_not_supported``). Every request is
authenticated as on the relays, needs the ``tool:invoke`` scope, a plan that has not expired (402) and
grants managed connectors (``managed_tools``; 403 ``not_entitled`` otherwise), and passes the rate limit.
A caller only ever sees their own accounts: another user's account id answers 404 ``unknown_account``.

    GET    /v1/connectors/apps                         the apps whose actions this gateway runs
    GET    /v1/connectors/{app}/actions[/{action}]     an app's actions; one with its input schema
    POST   /v1/connectors/{app}/actions/{action}       run one for one of the caller's accounts

The actions are described by OpenAPI documents in the gateway config, or listed by an MCP server the
gateway runs for the app, and run by :mod:`.connector_actions` (metered, with the gateway-held 5-minute
deadline). Accounts are connected by their holders through the app's OAuth2 provider
(:mod:`.connector_connect`: ``POST /v1/connectors/{app}/connect``, then the browser's
``/v1/connectors/oauth/start`` and ``/callback``, then the client's ``…/connect/{id}/confirm`` with the code
the browser showed), or recorded by the operator with a token
(``hermes toolgateway connectors add … --token-env``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Receive, Scope

from hermes.connectors.naming import APP_PATTERN, NAME_PATTERN, app_title
from hermes.toolgateway.errors import GatewayHTTPError, json_object, json_response, too_many
from hermes.toolgateway.portal.auth import Principal, extract_token
from hermes.toolgateway.relays.base import Operation, Relay, read_body
from hermes.toolgateway.storage.connector_store import ConnectorStore, ConnectorStoreError, check_app

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway

LABEL = "connector"
PREFIX = "/v1/connectors"
MAX_BODY = 16 * 1024
_ACCOUNT_ID = re.compile(r"^ca_[0-9a-f]{16}$")
_STATUS = {"invalid_app": 400, "invalid_name": 400, "unknown_account": 404, "name_taken": 409,
           "account_retired": 409}
#: (method, path pattern) of every endpoint, for 404/405 answers and /readyz.
ENDPOINTS: tuple[tuple[str, str], ...] = (
    ("GET", "/v1/connectors/accounts"),
    ("GET", "/v1/connectors/{app}/accounts"),
    ("GET", "/v1/connectors/{app}/accounts/{id}"),
    ("PATCH", "/v1/connectors/{app}/accounts/{id}"),
    ("DELETE", "/v1/connectors/{app}/accounts/{id}"),
    ("POST", "/v1/connectors/{app}/accounts/{id}/retire"),
    ("GET", "/v1/connectors/apps"),
    ("GET", "/v1/connectors/{app}/actions"),
    ("GET", "/v1/connectors/{app}/actions/{action}"),
    ("POST", "/v1/connectors/{app}/actions/{action}"),
    ("POST", "/v1/connectors/{app}/connect"),
    ("GET", "/v1/connectors/connect/{connect_id}"),
    ("POST", "/v1/connectors/connect/{connect_id}/confirm"),
    ("GET", "/v1/connectors/oauth/start"),
    ("POST", "/v1/connectors/oauth/start"),
    ("GET", "/v1/connectors/oauth/callback"),
)
#: the browser's half of the connect flow: no gateway token (the flow's state and cookie bind it)
_BROWSER_KINDS = {"oauth_start", "oauth_callback"}
_ACTION_KINDS = ("apps", "actions", "action")


def _store_error(exc: ConnectorStoreError) -> GatewayHTTPError:
    return GatewayHTTPError(_STATUS.get(exc.code, 400), exc.code, exc.message)


def _route(path: str) -> tuple[str, tuple[str, ...], str | None, str | None]:
    """``(kind, allowed methods, app, account id)`` for a path; 404 when it is not an endpoint."""
    parts = path.rstrip("/").split("/")[1:] if path != "/" else []
    if parts[:2] == ["v1", "connectors"]:
        rest = parts[2:]
        if rest == ["accounts"]:
            return "all", ("GET",), None, None
        if rest == ["apps"]:
            return "apps", ("GET",), None, None
        if rest == ["oauth", "start"]:
            return "oauth_start", ("GET", "POST"), None, None
        if rest == ["oauth", "callback"]:
            return "oauth_callback", ("GET",), None, None
        if len(rest) == 2 and rest[0] == "connect" and rest[1].startswith("cn_"):
            return "connect_status", ("GET",), None, rest[1]
        if len(rest) == 3 and rest[0] == "connect" and rest[1].startswith("cn_") and rest[2] == "confirm":
            return "connect_confirm", ("POST",), None, rest[1]
        if len(rest) == 2 and rest[1] == "connect":
            return "connect", ("POST",), rest[0], None
        if len(rest) == 2 and rest[1] == "actions":
            return "actions", ("GET",), rest[0], None
        if len(rest) == 3 and rest[1] == "actions":
            return "action", ("GET", "POST"), rest[0], rest[2]
        if len(rest) == 2 and rest[1] == "accounts":
            return "app", ("GET",), rest[0], None
        if len(rest) == 3 and rest[1] == "accounts":
            return "account", ("DELETE", "GET", "PATCH"), rest[0], rest[2]
        if len(rest) == 4 and rest[1] == "accounts" and rest[3] == "retire":
            return "retire", ("POST",), rest[0], rest[2]
    raise GatewayHTTPError(404, "not_found", f"the connector API has no {path} endpoint")


class ConnectorAPI(Relay):
    """The ``connector`` label: account management (no metering — it is not a tool call)."""

    label = LABEL
    category = "connectors"

    def __init__(self, gateway: Gateway) -> None:
        super().__init__(gateway)
        from hermes.toolgateway.connector_apps import load_app
        from hermes.toolgateway.relays.connector_actions import ConnectorActions
        from hermes.toolgateway.relays.connector_connect import ConnectFlow

        apps = {name: load_app(cfg) for name, cfg in gateway.config.connector_apps.items()}
        self.actions = ConnectorActions(gateway, apps)
        self.connect = ConnectFlow(gateway, apps)
        self.actions.mcp.start()  # the MCP apps' servers (built in the lifespan: the loop is running)

    async def aclose(self) -> None:
        await self.actions.mcp.aclose()

    def operations(self) -> Sequence[Operation]:
        return ()  # routed by :func:`_route`: the paths carry parameters

    def backend(self, operation: str) -> str:
        return "gateway"

    def describe(self) -> dict[str, Any]:
        return {"label": self.label, "category": self.category,
                "operations": {f"{m} {p}": "gateway" for m, p in ENDPOINTS},
                "capabilities": self.capabilities()}

    def capabilities(self) -> dict[str, bool]:
        return {"rename": self.gateway.config.connector_rename, "retire": True, "delete": True}

    @property
    def store(self) -> ConnectorStore:
        return ConnectorStore(self.gateway.conn, self.gateway.clock)

    # -- the pipeline --------------------------------------------------------------------------------
    def authorize(self, principal: Principal) -> None:
        """Scope, plan expiry (402) and the managed-connector entitlement (403)."""
        gw = self.gateway
        if "tool:invoke" not in principal.scopes:
            raise GatewayHTTPError(403, "insufficient_scope", "this token lacks the tool:invoke scope")
        portal = gw.config.base_url()
        if not principal.user.plan_active(gw.clock()):
            raise GatewayHTTPError(402, "subscription_expired",
                                   f"your {principal.plan.name} plan has expired; renew it at {portal}",
                                   extra={"portal_url": portal})
        if not principal.plan.managed_tools:
            raise GatewayHTTPError(403, "not_entitled",
                                   f"the {principal.plan.name} plan does not include managed connectors; see {portal}",
                                   extra={"portal_url": portal})

    async def _handle(self, scope: Scope, receive: Receive) -> Response:
        gw = self.gateway
        headers = Headers(scope=scope)
        kind, methods, app, account_id = _route(scope["path"])
        method = scope["method"]
        if method not in methods:
            raise GatewayHTTPError(405, "method_not_allowed", f"use {', '.join(methods)} on {scope['path']}",
                                   headers={"allow": ", ".join(methods)})
        if kind in _BROWSER_KINDS:
            return await (self.connect.start(scope, receive) if kind == "oauth_start"
                          else self.connect.callback(scope))
        principal = gw.auth.authenticate(extract_token(headers, self.token_sources))
        scope.setdefault("state", {})["gw_user"] = principal.user.uid
        self.authorize(principal)
        wait = gw.limiter.acquire(principal.rate_key)
        if wait > 0:
            raise too_many("rate_limited", "too many requests with this token; slow down",
                           gw.limiter.retry_after(wait))
        body = await read_body(scope, receive, headers, MAX_BODY if kind not in _ACTION_KINDS else
                               self.max_request_bytes())
        try:
            for name in [str(app)] if app is not None else list(self.actions.mcp.connections):
                if kind in _ACTION_KINDS:  # an MCP app's actions are its server's first tool listing
                    with contextlib.suppress(GatewayHTTPError) if app is None else contextlib.nullcontext():
                        await self.actions.mcp.ready(name)
            if kind == "apps":
                return self.actions.listing()
            if kind == "connect":
                return await self.connect.begin(principal, self.store, str(app), body)
            if kind == "connect_status":
                return await self.connect.status(principal, str(account_id))
            if kind == "connect_confirm":
                return await self.connect.confirm(principal, str(account_id), body)
            if kind == "actions":
                return self.actions.actions(str(app))
            if kind == "action" and method == "GET":
                return self.actions.describe(str(app), str(account_id))
            if kind == "action":
                return await self.actions.call(principal, self.store, str(app), str(account_id), body)
            return self._answer(kind, method, principal.user.id, app, account_id, body)
        except ConnectorStoreError as exc:
            raise _store_error(exc) from None

    def _answer(self, kind: str, method: str, user_id: int, app: str | None, account_id: str | None,
                body: bytes) -> Response:
        store = self.store
        if kind == "all":
            accounts = store.accounts(user_id)
            return json_response({"capabilities": self.capabilities(), "accounts": [a.as_json() for a in accounts]})
        assert app is not None
        check_app(app)
        if kind == "app":
            accounts = store.accounts(user_id, app)
            return json_response({"app": app, "app_title": app_title(app), "capabilities": self.capabilities(),
                                  "accounts": [a.as_json() for a in accounts]})
        assert account_id is not None
        account = store.get(user_id, account_id) if _ACCOUNT_ID.match(account_id) else None
        if account is None or account.app != app:
            raise GatewayHTTPError(404, "unknown_account", f"you have no {app} account with that id")
        if kind == "retire":
            return json_response({"account": store.retire(user_id, account.id).as_json()})
        if method == "GET":
            return json_response({"account": account.as_json()})
        if method == "DELETE":
            return json_response({"deleted": store.delete(user_id, account.id).as_json()})
        return self._patch(store, user_id, account.id, body)

    def _patch(self, store: ConnectorStore, user_id: int, account_id: str, body: bytes) -> Response:
        data = json_object(body)
        unknown = sorted(set(data) - {"name"})
        if unknown:
            raise GatewayHTTPError(400, "invalid_request", f"unknown field(s): {', '.join(unknown)}; only name")
        if "name" not in data:
            raise GatewayHTTPError(400, "invalid_request", "send {\"name\": \"...\"}")
        if not self.gateway.config.connector_rename:
            raise GatewayHTTPError(501, "rename_not_supported",
                                   "this gateway does not let users name or rename connector accounts")
        return json_response({"account": store.rename(user_id, account_id, data["name"]).as_json()})


def openapi_paths(errors: Callable[..., dict[str, Any]], prefix: str = "/relay/connector") -> dict[str, Any]:
    """The OpenAPI path items of this API under its pinned ``prefix`` (``errors(*statuses)`` from openapi)."""
    text = {"type": "string"}
    account = {"type": "object", "required": ["id", "app", "name", "display_name", "status"], "properties": {
        "id": text, "app": text, "app_title": text, "name": {"type": ["string", "null"]}, "display_name": text,
        "label": text, "status": {"type": "string", "enum": ["active", "retired"]},
        "created_at": text, "retired_at": {"type": ["string", "null"]}, "replaced_by": {"type": ["string", "null"]}}}
    listing = {"type": "object", "required": ["capabilities", "accounts"], "properties": {
        "app": text, "app_title": text, "accounts": {"type": "array", "items": account},
        "capabilities": {"type": "object", "properties": {
            "rename": {"type": "boolean"}, "retire": {"type": "boolean"}, "delete": {"type": "boolean"}}}}}

    def ok(schema: dict[str, Any]) -> dict[str, Any]:
        return {"description": "OK", "content": {"application/json": {"schema": schema}}}

    def op(summary: str, answer: dict[str, Any], *statuses: int, **extra: Any) -> dict[str, Any]:
        return {"summary": f"{summary} (also on connector-gateway.<domain> without the prefix)",
                "security": [{"gatewayToken": []}], "responses": {"200": ok(answer), **errors(401, 402, 403, 429,
                                                                                          *statuses)}, **extra}

    one = {"type": "object", "properties": {"account": account}}
    params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string", "pattern": pattern}}
              for name, pattern in (("app", APP_PATTERN), ("id", _ACCOUNT_ID.pattern))]
    patch_body = {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "required": ["name"], "additionalProperties": False,
        "properties": {"name": {"type": "string", "pattern": NAME_PATTERN}}}}}}
    base = f"{prefix}{PREFIX}"
    flow = {"type": "object", "required": ["connect_id", "status"], "properties": {
        "connect_id": text, "app": text, "account": account, "error": text,
        "status": {"type": "string", "enum": ["pending", "awaiting_confirmation", "connected", "failed"]}}}
    flow_id = [{"name": "connect_id", "in": "path", "required": True,
                "schema": {"type": "string", "pattern": "^cn_[0-9a-f]{24}$"}}]
    return {
        f"{base}/accounts": {"get": op("The caller's connector accounts, every app", listing)},
        f"{base}/{{app}}/accounts": {"get": op("The caller's accounts of one app", listing, 400,
                                               parameters=params[:1])},
        f"{base}/{{app}}/accounts/{{id}}": {
            "parameters": params,
            "get": op("One account", one, 400, 404),
            "patch": op("Name or rename an account (naming rule; 501 when renaming is off)", one, 400, 404, 409,
                        413, 501, requestBody=patch_body),
            "delete": op("Delete an account (the user's own command only)",
                         {"type": "object", "properties": {"deleted": account}}, 400, 404),
        },
        f"{base}/{{app}}/accounts/{{id}}/retire": {
            "parameters": params, "post": op("Retire an account (kept, listed, no longer used)", one, 400, 404)},
        f"{base}/{{app}}/connect": {"post": op(
            "Start connecting an account at the app's OAuth provider: open the answered url in the browser",
            {"type": "object", "required": ["connect_id", "url", "expires_at"], "properties": {
                "connect_id": text, "app": text, "app_title": text, "url": text, "expires_at": text}},
            400, 404, 409, 413, parameters=params[:1], requestBody={"content": {"application/json": {"schema": {
                "type": "object", "additionalProperties": False, "properties": {
                    "name": {"type": "string", "pattern": NAME_PATTERN}, "replaces": text}}}}})},
        f"{base}/connect/{{connect_id}}": {"get": op(
            "How a connect flow of yours stands: pending, awaiting_confirmation (the browser shows a code), "
            "connected (with the account) or failed (with why)", flow, 404, parameters=flow_id)},
        f"{base}/connect/{{connect_id}}/confirm": {"post": op(
            "Finish a connect flow of yours with the code its browser page showed (five tries; the account is "
            "stored only now)", flow, 400, 404, 409, 410, 413, parameters=flow_id,
            requestBody={"content": {"application/json": {"schema": {
                "type": "object", "required": ["code"], "additionalProperties": False,
                "properties": {"code": text}}}}})},
    }
