"""Connector actions run by the gateway (issue 16, T-CONN): an app's operations, called for one account.

Part of the ``connector`` label (:mod:`.connectors` routes here)::

    GET  /v1/connectors/apps                          the apps this gateway runs, with their action counts
    GET  /v1/connectors/{app}/actions                 the app's actions, one line each
    GET  /v1/connectors/{app}/actions/{action}        one action with its input schema
    POST /v1/connectors/{app}/actions/{action}        {"account": "ca_…", "arguments": {…}, "call_id": "…"}

The apps are OpenAPI documents named in the gateway config (:mod:`hermes.toolgateway.connector_apps`).
A call sends the operation to the app with the account's stored provider token (unsealed only here,
never returned), and answers ``{"result": …, "account": …, "deadline_at": …}``.

**The deadline is the gateway's.** Each call has five minutes from the moment the gateway first sees
its ``call_id``; the start is stored with the call (``relay_jobs``, namespace ``connector-calls``), so a
client that restarts and asks again with the same id joins the call still running, or gets its stored
answer (``"replayed": true``), and never gets a new five minutes; past the deadline the answer is 504
``deadline_exceeded``. A ``call_id`` reused for different arguments is refused (409). Calls are metered
(category ``connectors``, operation ``<app>.<action>``) and pass the relay rate limit.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from hermes.toolgateway.errors import GatewayHTTPError, json_object, json_response, too_many
from hermes.toolgateway.storage.jobs import JobTable
from hermes.toolgateway.storage.metering import QuotaExceeded

if TYPE_CHECKING:
    from hermes.toolgateway.connector_apps import Action, App
    from hermes.toolgateway.portal.auth import Principal
    from hermes.toolgateway.services import Gateway
    from hermes.toolgateway.storage.connector_store import ConnectorAccount, ConnectorStore

#: every connector call's deadline, from its first request (T-CONN: five minutes, fixed by the backend)
CALL_DEADLINE = 300.0
#: how long a call's start and answer are kept (a retry within it joins the call or gets its answer)
CALL_KEPT = 3 * CALL_DEADLINE
CATEGORY = "connectors"
NAMESPACE = "connector-calls"
MAX_STORED_RESULT = 512 * 1024
_CALL_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:")


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@dataclass(frozen=True)
class CallRequest:
    app: App
    action: Action
    account: ConnectorAccount
    arguments: dict[str, Any]
    call_id: str

    @property
    def fingerprint(self) -> str:
        text = json.dumps([self.app.config.app, self.action.name, self.account.id, self.arguments],
                          sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _check_arguments(action: Action, arguments: Any) -> dict[str, Any]:
    """The gateway's own check (the client validates the full schema first): an object, known names only,
    the required ones present."""
    if not isinstance(arguments, dict):
        raise GatewayHTTPError(400, "invalid_arguments", "arguments must be a JSON object")
    props = action.input_schema.get("properties") or {}
    unknown = sorted(set(arguments) - set(props))
    if unknown:
        raise GatewayHTTPError(400, "invalid_arguments", f"{action.name} has no argument(s) {', '.join(unknown)}; "
                                                         f"it takes: {', '.join(props) or 'none'}")
    missing = [r for r in action.input_schema.get("required") or () if arguments.get(r) is None]
    if missing:
        raise GatewayHTTPError(400, "invalid_arguments", f"{action.name} needs {', '.join(missing)}")
    empty = [p for p in action.path_params if str(arguments[p]) == ""]
    if empty:  # an empty segment would name another resource (/messages/ is the list)
        raise GatewayHTTPError(400, "invalid_arguments", f"{action.name}: {', '.join(empty)} must not be empty")
    # a dot segment or a backslash: servers that decode the path and then clean it would climb a level
    dots = [p for p in action.path_params if str(arguments[p]) in (".", "..") or "\\" in str(arguments[p])]
    if dots:
        raise GatewayHTTPError(400, "invalid_arguments", f"{action.name}: {', '.join(dots)} cannot be '.', '..' "
                                                         "or hold a backslash (it is one path segment)")
    return arguments


class ConnectorActions:
    """The apps of one gateway and the calls in flight in this process."""

    def __init__(self, gateway: Gateway, apps: Mapping[str, App]) -> None:
        self.gateway = gateway
        self.apps = dict(apps)
        self.calls = JobTable(lambda: gateway.conn, NAMESPACE, ttl=CALL_KEPT, clock=gateway.clock)
        self._inflight: dict[tuple[str, str], asyncio.Task[dict[str, Any]]] = {}
        from hermes.toolgateway.relays.connector_tokens import TokenKeeper

        self.tokens = TokenKeeper(gateway)
        from hermes.toolgateway.relays.connector_mcp import McpApps

        #: the MCP servers of ``[connectors.apps.<app>.mcp]`` apps (their actions fill ``self.apps``)
        self.mcp = McpApps(gateway, self.apps)

    # -- reading -------------------------------------------------------------------------------------
    def app(self, name: str) -> App:
        app = self.apps.get(name)
        if app is None:
            known = ", ".join(sorted(self.apps)) or "none"
            raise GatewayHTTPError(404, "unknown_app", f"this gateway runs no connector app {name!r}; apps: {known}")
        return app

    def action(self, app: App, name: str) -> Action:
        action = app.actions.get(name)
        if action is None:
            import difflib

            close = difflib.get_close_matches(name, list(app.actions), n=3, cutoff=0.5)
            also = f"; did you mean {', '.join(close)}?" if close else ""
            raise GatewayHTTPError(404, "unknown_action", f"{app.title} has no action {name!r}{also}")
        return action

    def listing(self) -> Response:
        return json_response({"apps": [a.describe() for _, a in sorted(self.apps.items())]})

    def actions(self, app_name: str) -> Response:
        app = self.app(app_name)
        return json_response({"app": app.config.app, "app_title": app.title,
                              "actions": [a.summary() for a in app.actions.values()]})

    def describe(self, app_name: str, action_name: str) -> Response:
        app = self.app(app_name)
        action = self.action(app, action_name)
        return json_response({"app": app.config.app, "app_title": app.title, "action": action.name,
                              "description": action.description, "input_schema": action.input_schema})

    # -- calling -------------------------------------------------------------------------------------
    async def call(self, principal: Principal, store: ConnectorStore, app_name: str, action_name: str,
                   body: bytes) -> Response:
        app = self.app(app_name)
        action = self.action(app, action_name)
        data = json_object(body)
        unknown = sorted(set(data) - {"account", "arguments", "call_id"})
        if unknown:
            raise GatewayHTTPError(400, "invalid_request", f"unknown field(s): {', '.join(unknown)}")
        account_id = data.get("account")
        if not isinstance(account_id, str):
            raise GatewayHTTPError(400, "invalid_request", "send the account's id as \"account\"")
        account = next((a for a in store.accounts(principal.user.id, app.config.app) if a.id == account_id), None)
        if account is None:
            raise GatewayHTTPError(404, "unknown_account", f"you have no {app.title} account with that id")
        if not account.active:
            label = account.name or account.display_name
            raise GatewayHTTPError(409, "account_retired",
                                   f"the {app.title} account {label} is retired; use the account that replaced it")
        call_id = data.get("call_id")
        if call_id is None:
            import secrets

            call_id = "cc_" + secrets.token_hex(12)
        if not isinstance(call_id, str) or not 8 <= len(call_id) <= 128 or not set(call_id) <= _CALL_ID_CHARS:
            raise GatewayHTTPError(400, "invalid_request", "call_id must be 8-128 characters of A-Z a-z 0-9 - _ . :")
        request = CallRequest(app, action, account, _check_arguments(action, data.get("arguments") or {}), call_id)
        return json_response(await self._run(principal, store, request))

    async def _run(self, principal: Principal, store: ConnectorStore, req: CallRequest) -> dict[str, Any]:
        gw = self.gateway
        owner = str(principal.user.uid)
        now = gw.clock()
        known = await self.calls.get(req.call_id, owner)
        if known is not None:
            if known.get("fingerprint") != req.fingerprint:
                raise GatewayHTTPError(409, "call_id_reused", "this call_id belongs to another call; send a new one")
            started, deadline = float(known["started"]), float(known["deadline"])
            if known.get("answer"):
                return {**json.loads(known["answer"]), "replayed": True}
        else:
            started, deadline = now, now + CALL_DEADLINE
            if not await self.calls.remember(req.call_id, owner, {"fingerprint": req.fingerprint,
                                                                  "started": repr(started),
                                                                  "deadline": repr(deadline)}):
                raise GatewayHTTPError(409, "call_id_reused", "this call_id belongs to another call; send a new one")
        remaining = deadline - now
        label = f"{req.app.title} action {req.action.name}"
        if remaining <= 0:
            raise GatewayHTTPError(504, "deadline_exceeded",
                                   f"the {label} passed its 5-minute deadline (started {_iso(started)}, "
                                   f"deadline {_iso(deadline)}); a connector call's deadline is never extended")
        key = (owner, req.call_id)
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.ensure_future(self._execute(principal, store, req, started, deadline))
            self._inflight[key] = task
            task.add_done_callback(lambda _t: self._inflight.pop(key, None))
        while True:  # the deadline is read from the gateway's clock (checked at least every second)
            remaining = deadline - gw.clock()
            if remaining <= 0 or task.cancelled():
                task.cancel()
                raise GatewayHTTPError(504, "deadline_exceeded",
                                       f"the {label} did not finish before its 5-minute deadline "
                                       f"({_iso(deadline)}); a connector call's deadline is never extended")
            done, _ = await asyncio.wait({task}, timeout=min(remaining, 1.0))
            if done and not task.cancelled():
                return task.result()

    async def _execute(self, principal: Principal, store: ConnectorStore, req: CallRequest, started: float,
                       deadline: float) -> dict[str, Any]:
        """Meter, send, answer; the answer is stored with the call so that a retry gets it again."""
        gw = self.gateway
        operation = f"{req.app.config.app}.{req.action.name}"
        limit = principal.plan.monthly.get(CATEGORY)
        perf = time.perf_counter()
        status = 500
        reservation = None
        try:
            reservation = await gw.meter.reserve_async(principal.user.id, CATEGORY, 1, limit, gw.clock())
            result, upstream = await self._send(store, req, deadline)
            status = 200
        except QuotaExceeded as exc:
            status = 429
            raise too_many("quota_exceeded", f"{exc}; it resets at the start of next month (UTC)",
                           exc.retry_after) from None
        except GatewayHTTPError as exc:
            status = exc.status
            raise
        finally:
            if reservation is not None and status >= 400:
                await gw.meter.refund_async(reservation)
            gw.meter.record(user_id=principal.user.id, jti=principal.jti, category=CATEGORY, vendor=req.app.config.app,
                            operation=operation, units=1 if status < 400 else 0,
                            cost=gw.config.unit_cost(CATEGORY, operation, req.app.config.app) if status < 400 else 0.0,
                            status=status, latency_ms=(time.perf_counter() - perf) * 1000, now=gw.clock())
        answer = {"app": req.app.config.app, "action": req.action.name, "account": req.account.name,
                  "account_id": req.account.id, "status": upstream, "result": result, "call_id": req.call_id,
                  "started_at": _iso(started), "deadline_at": _iso(deadline)}
        text = json.dumps(answer, separators=(",", ":"), ensure_ascii=False, default=str)
        if len(text) <= MAX_STORED_RESULT:
            await self.calls.remember(req.call_id, str(principal.user.uid), {
                "fingerprint": req.fingerprint, "started": repr(started), "deadline": repr(deadline), "answer": text})
        return answer

    async def _send(self, store: ConnectorStore, req: CallRequest, deadline: float) -> tuple[Any, int]:
        """Send the action with the account's token; an OAuth account's token refused with 401 is refreshed
        once and the action sent again. An MCP app's action is a call of its server's tool."""
        if req.app.config.mcp is not None:
            timeout = min(req.app.config.mcp.timeout, max(0.0, deadline - self.gateway.clock()))
            return await self.mcp.call(req.app, req.action.name, req.arguments, timeout)
        token = await self.tokens.current(store, req.app, req.account)
        status, raw = await self._request(req, token.access_token)
        if status == 401 and req.app.config.oauth is not None and token.refresh_token:
            token = await self.tokens.current(store, req.app, req.account, force=True)
            status, raw = await self._request(req, token.access_token)
        try:
            result: Any = json.loads(raw) if raw else None
        except ValueError:
            result = raw.decode("utf-8", "replace")
        if status >= 400:
            shown = (json.dumps(result, ensure_ascii=False) if not isinstance(result, str) else result)[:300]
            from hermes.redact import redact

            shown = redact(shown, [t for t in (token.access_token, token.refresh_token) if t])
            raise GatewayHTTPError(502, "app_error", f"{req.app.title} answered HTTP {status}: {shown}",
                                   extra={"app_status": status})
        return result, status

    async def _request(self, req: CallRequest, token: str) -> tuple[int, bytes]:
        import httpx

        gw = self.gateway
        method, url, query, body = req.action.request(req.app.base_url, req.arguments)
        cfg = req.app.config
        headers = {cfg.auth_header: f"{cfg.auth_scheme} {token}".strip(), "accept": "application/json"}
        limit = gw.config.limits.max_response_bytes
        try:
            async with gw.http.stream(method, url, params=query, json=body, headers=headers,
                                      timeout=CALL_DEADLINE) as resp:
                chunks: list[bytes] = []
                size = 0
                async for chunk in resp.aiter_bytes():
                    size += len(chunk)
                    if size > limit:
                        raise GatewayHTTPError(502, "app_answer_too_large",
                                               f"{req.app.title} answered more than {limit} bytes")
                    chunks.append(chunk)
        except httpx.HTTPError as exc:
            raise GatewayHTTPError(502, "app_unreachable",
                                   f"cannot reach {req.app.title}: {type(exc).__name__}") from None
        return resp.status_code, b"".join(chunks)
