"""The connector gateway client: the user's accounts per app, naming, retiring and deleting (GW-12, GW-14).

The origin is ``CONNECTOR_GATEWAY_URL`` (exact, a path prefix kept) or ``connector-gateway.<domain>``
(:func:`hermes.routing.connector_origin`). The user's token — ``TOOL_GATEWAY_USER_TOKEN`` or the portal
login, refreshed first when about to expire — is attached only when
:func:`hermes.routing.token_allowed_for` accepts the URL; redirects are never followed, and no message
or log line carries the token. Connector accounts need the ``managed_tools`` entitlement: a login whose
claims lack it is refused here, before anything is sent.

Renaming needs a portal that supports it: when the list answer does not advertise
``capabilities.rename`` (or the PATCH endpoint is missing), :meth:`ConnectorClient.rename` raises
:class:`ConnectorError` with :data:`~hermes.connectors.naming.RENAME_UNSUPPORTED`.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from hermes.connectors.accounts import Account, ConnectorError, parse_accounts
from hermes.connectors.naming import RENAME_UNSUPPORTED, name_problem, valid_app

if TYPE_CHECKING:
    import httpx

    from hermes.config.settings import Settings

log = logging.getLogger("hermes.connectors")

DEFAULT_TIMEOUT = 30.0
#: how long a client waits for an action's answer: the gateway's 5-minute deadline and a margin
CALL_WAIT = 320.0
USER_AGENT = "hermes-agent (+connectors)"


@dataclass(frozen=True)
class AccountList:
    """A list answer: the accounts and what this portal can do with them."""

    accounts: list[Account]
    capabilities: Mapping[str, bool] = field(default_factory=dict)

    @property
    def can_rename(self) -> bool:
        return self.capabilities.get("rename") is True


def _check_app(app: str) -> str:
    if not valid_app(app):
        raise ConnectorError(f"{app!r} is not a connector id (a-z, 0-9, - and _, e.g. gmail)")
    return app


class ConnectorClient:
    """Synchronous client of ``/v1/connectors/*`` for one user token."""

    def __init__(self, origin: str, token: str, env: Mapping[str, str], *, timeout: float = DEFAULT_TIMEOUT,
                 transport: httpx.BaseTransport | None = None, advertised: Mapping[str, str] | None = None) -> None:
        self.origin = origin.rstrip("/")
        self._token = token
        self._env = dict(env)
        self._advertised = dict(advertised or {})  # the origins the portal login advertised (trusted too)
        self.timeout = timeout
        self._transport = transport
        self._http: httpx.Client | None = None

    def __repr__(self) -> str:
        return f"ConnectorClient(origin={self.origin!r})"

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> ConnectorClient:
        """The client for the user of ``settings``: origin, token and the entitlement checked."""
        from hermes.routing.endpoints import connector_origin
        from hermes.routing.portal_auth import fresh_credentials

        env = settings.env.as_dict()
        credentials = fresh_credentials(settings.paths.auth, env)
        origin = connector_origin(env, credentials.gateway_origins)
        token = credentials.token
        if not token:
            raise ConnectorError("Connector accounts need a Nous Portal login: run 'hermes portal login' "
                                 "(or set TOOL_GATEWAY_USER_TOKEN for a self-hosted gateway).")
        if credentials.claims is not None and not credentials.managed_tools:
            raise ConnectorError("Your Nous Portal account does not include managed connectors (the login has no "
                                 f"managed_tools entitlement). See {credentials.portal_base_url}.")
        return cls(origin, token, env, advertised=credentials.gateway_origins, **kwargs)

    # -- HTTP ----------------------------------------------------------------------------------------
    def _client(self) -> httpx.Client:
        import httpx

        from hermes.routing.endpoints import parse_origin

        if self._http is None:
            target = parse_origin(self.origin)
            loopback = target is not None and target.host in ("127.0.0.1", "::1", "localhost")
            self._http = httpx.Client(timeout=self.timeout, follow_redirects=False, trust_env=not loopback,
                                      headers={"user-agent": USER_AGENT}, transport=self._transport)
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> ConnectorClient:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None, *,
                timeout: float | None = None) -> dict[str, Any]:
        """One call; the JSON object answered, or ConnectorError with the gateway's words."""
        import httpx

        from hermes.routing.endpoints import token_allowed_for

        url = self.origin + path
        if not token_allowed_for(url, self._env, advertised=self._advertised):
            raise ConnectorError(f"the connector gateway origin {self.origin} is not a trusted gateway host, so "
                                 "your token was not sent. Check CONNECTOR_GATEWAY_URL in ~/.hermes/.env.")
        try:
            resp = self._client().request(method, url, json=body,
                                          headers={"authorization": f"Bearer {self._token}"},
                                          timeout=timeout if timeout is not None else self.timeout)
        except httpx.HTTPError as exc:
            raise ConnectorError(f"cannot reach the connector gateway at {self.origin}: "
                                 f"{type(exc).__name__}") from None
        try:
            data = resp.json()
        except ValueError:
            data = None
        if resp.is_success and isinstance(data, dict):
            return data
        message = data.get("error") if isinstance(data, dict) else None
        code = data.get("code") if isinstance(data, dict) else None
        code = code if isinstance(code, str) else ""
        if not isinstance(message, str) or not message:
            message = (f"unexpected answer (HTTP {resp.status_code})" if resp.is_success
                       else f"HTTP {resp.status_code} without an error message")
        log.debug("connector gateway %s %s -> %s %s", method, path, resp.status_code, code)
        if resp.status_code == 401:
            message += "; run 'hermes portal login'"
        raise ConnectorError(f"connector gateway: {message}", code=code, status=resp.status_code)

    # -- operations ----------------------------------------------------------------------------------
    def list(self, app: str | None = None) -> AccountList:
        """Every account (or one app's), retired ones included, with the portal's capabilities."""
        path = "/v1/connectors/accounts" if app is None else f"/v1/connectors/{quote(_check_app(app))}/accounts"
        data = self.request("GET", path)
        caps = data.get("capabilities")
        capabilities = {k: v for k, v in caps.items() if isinstance(v, bool)} if isinstance(caps, dict) else {}
        return AccountList(parse_accounts(data.get("accounts")), capabilities)

    def _account_path(self, account: Account) -> str:
        return f"/v1/connectors/{quote(_check_app(account.app))}/accounts/{quote(account.id, safe='')}"

    def rename(self, account: Account, name: str, *, capabilities: Mapping[str, bool] | None = None) -> Account:
        """Give ``account`` a (new) name. ``capabilities`` from a fresh list answer; RENAME_UNSUPPORTED when
        the portal does not advertise renaming or lacks the endpoint."""
        problem = name_problem(name)
        if problem is not None:
            raise ConnectorError(problem, code="invalid_name")
        caps = capabilities if capabilities is not None else self.list(account.app).capabilities
        if caps.get("rename") is not True:
            raise ConnectorError(RENAME_UNSUPPORTED, code="rename_not_supported")
        try:
            data = self.request("PATCH", self._account_path(account), {"name": name})
        except ConnectorError as exc:
            if exc.code == "rename_not_supported" or exc.status in (405, 501) or (
                    exc.status == 404 and exc.code == "not_found"):
                raise ConnectorError(RENAME_UNSUPPORTED, code="rename_not_supported") from None
            raise
        return self._one(data, "account")

    def retire(self, account: Account) -> Account:
        return self._one(self.request("POST", self._account_path(account) + "/retire"), "account")

    def delete(self, account: Account) -> Account:
        """Delete one account for good — for the user's own command only, never for a tool."""
        return self._one(self.request("DELETE", self._account_path(account)), "deleted")

    # -- actions (the gateway runs them; ``connections`` calls them) ------------------------------------
    def apps(self) -> builtins.list[dict[str, Any]]:
        """The apps whose actions the gateway runs: ``{"app", "app_title", "actions"}`` each."""
        apps = self.request("GET", "/v1/connectors/apps").get("apps")
        return [a for a in apps if isinstance(a, dict)] if isinstance(apps, list) else []

    def actions(self, app: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/connectors/{quote(_check_app(app))}/actions")

    def action(self, app: str, action: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/connectors/{quote(_check_app(app))}/actions/{quote(action, safe='')}")

    def call(self, app: str, action: str, account: Account, arguments: Mapping[str, Any], *,
             call_id: str | None = None) -> dict[str, Any]:
        """Run one action for ``account``; the gateway holds the deadline (``CALL_WAIT`` is only how long
        this client waits for its answer)."""
        body: dict[str, Any] = {"account": account.id, "arguments": dict(arguments)}
        if call_id is not None:
            body["call_id"] = call_id
        return self.request("POST", f"/v1/connectors/{quote(_check_app(app))}/actions/{quote(action, safe='')}",
                            body, timeout=CALL_WAIT)

    # -- connecting (the gateway runs the app's OAuth flow; the person's browser signs in) ---------------
    def connect(self, app: str, *, name: str | None = None, replaces: str | None = None) -> dict[str, Any]:
        """Start connecting an account: ``{"connect_id", "url", "expires_at"}``; open ``url`` in a browser."""
        body = {k: v for k, v in (("name", name), ("replaces", replaces)) if v is not None}
        return self.request("POST", f"/v1/connectors/{quote(_check_app(app))}/connect", body)

    def connect_status(self, connect_id: str) -> dict[str, Any]:
        """``{"status": "pending" | "awaiting_confirmation" | "connected" | "failed", "account"?, "error"?}`` of a
        flow this user started."""
        return self.request("GET", f"/v1/connectors/connect/{quote(connect_id, safe='')}")

    def connect_confirm(self, connect_id: str, code: str) -> dict[str, Any]:
        """Finish a flow with the code its browser page showed; the flow's status (``connected``, the account).
        A wrong code: ConnectorError ``wrong_code`` (five tries in all)."""
        return self.request("POST", f"/v1/connectors/connect/{quote(connect_id, safe='')}/confirm", {"code": code})

    @staticmethod
    def _one(data: Mapping[str, Any], key: str) -> Account:
        item = data.get(key)
        if not isinstance(item, Mapping):
            raise ConnectorError("the connector gateway sent an unexpected answer")
        return Account.from_json(item)
