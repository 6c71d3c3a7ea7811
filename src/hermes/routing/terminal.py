"""The terminal's execution backend as the gateway status sees it, and the ``modal`` route's access.

``terminal.backend: modal`` runs the agent's commands in a sandbox behind the Tool Gateway's ``modal``
relay. It follows the rules of every gateway route:

* the origin is :func:`~hermes.routing.endpoints.gateway_origin` of the label ``modal``
  (``MODAL_GATEWAY_URL``, the origin the portal login advertised, or ``modal-gateway.<domain>``);
* the saved choice wins (GW-3): without a login or an entitlement the terminal fails with the GW-10
  message; it never falls back to running commands on this machine;
* the entitlement is the account's for coverage key ``modal`` (a paid plan, or a free tier covering it),
  and a gateway whose login said it does not offer the relay is "not offered";
* the user's token only goes to :func:`~hermes.routing.endpoints.token_allowed_for` origins.

:func:`terminal_route` is pure (no network), for ``hermes portal info`` and ``hermes status --full``;
:func:`modal_access` is what the backend asks right before it calls the relay.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes.errors import ConfigError, GatewayError
from hermes.routing.credentials import Credentials
from hermes.routing.endpoints import gateway_origin, token_allowed_for
from hermes.routing.selection import gateway_display

MODAL_LABEL = "modal"
COVERAGE_KEY = "modal"
SELECTION_KEY = "terminal.backend"
DISPLAY = "Terminal"


@dataclass(frozen=True)
class TerminalRoute:
    """Where the terminal's commands run, and whether they can run there now."""

    backend: str
    message: str
    ready: bool
    origin: str | None = None
    entitlement: str | None = None
    missing: str | None = None
    selected_by: str | None = SELECTION_KEY


def chosen_backend(config: Mapping[str, Any]) -> str:
    terminal = config.get("terminal") if isinstance(config, Mapping) else None
    value = terminal.get("backend") if isinstance(terminal, Mapping) else None
    return str(value).strip().lower() if value not in (None, "") else "local"


def _problem(status: str, origin: str, credentials: Credentials) -> str:
    lead = "terminal.backend is modal, which runs commands through the Nous Tool Gateway, but"
    switch = "or run 'hermes setup terminal' to choose another backend."
    if status == "not_logged_in":
        return f"{lead} you are not logged in to Nous Portal. Run 'hermes portal login', {switch}"
    if status == "expired":
        return f"{lead} your Nous Portal login has expired. Run 'hermes portal login' to renew it, {switch}"
    if status == "unknown":
        return f"{lead} your Nous Portal token carries no readable entitlement. Run 'hermes portal login', {switch}"
    if status == "not_offered":
        return f"{lead} the gateway at {origin} does not offer the modal relay. Ask its operator, {switch}"
    manage = f"{credentials.portal_base_url}/manage-subscription"
    if status == "not_covered":
        return f"{lead} your free tool tier does not cover it. Upgrade at {manage}, {switch}"
    return f"{lead} your account has no active subscription with tool access. Renew it at {manage}, {switch}"


def _status(origin: str, credentials: Credentials, now: float) -> str:
    entitlement = credentials.entitlement(COVERAGE_KEY, now)
    gateway = credentials.gateway
    if entitlement.entitled and gateway is not None and gateway.origins.get(MODAL_LABEL) == origin \
            and not gateway.offers_route(MODAL_LABEL, "terminal", "terminal"):
        return "not_offered"
    return entitlement.status


def terminal_route(config: Mapping[str, Any], env: Mapping[str, str], credentials: Credentials,
                   now: float | None = None) -> TerminalRoute:
    """The terminal's route (pure: no network, no refresh)."""
    backend = chosen_backend(config)
    if backend != "modal":
        where = "this machine" if backend == "local" else f"the {backend} backend"
        return TerminalRoute(backend, f"commands run on {where}", True,
                             selected_by=None if backend == "local" else SELECTION_KEY)
    try:
        origin = gateway_origin(MODAL_LABEL, env, credentials.gateway_origins)
    except ConfigError as exc:
        return TerminalRoute(backend, str(exc), False, missing=str(exc))
    status = _status(origin, credentials, time.time() if now is None else now)
    if status in ("paid", "free_tier"):
        return TerminalRoute(backend, f"Modal sandbox via {gateway_display(origin)}", True, origin, status)
    problem = _problem(status, origin, credentials)
    return TerminalRoute(backend, f"Modal sandbox via {gateway_display(origin)} — {status.replace('_', ' ')}",
                         False, origin, status, problem)


def modal_access(config: Mapping[str, Any], env: Mapping[str, str], credentials: Credentials) -> tuple[str, str]:
    """``(origin, token)`` for the modal relay after every check (GatewayError saying what is missing)."""
    route = terminal_route({"terminal": {"backend": "modal"}}, env, credentials)
    if not route.ready or route.origin is None:
        raise GatewayError(route.missing or route.message)
    token = credentials.token
    if not token:
        raise GatewayError(_problem("not_logged_in", route.origin, credentials))
    if not token_allowed_for(route.origin, env, advertised=credentials.gateway_origins):
        raise GatewayError(f"terminal.backend modal: the gateway origin {route.origin} is not a trusted gateway "
                           "host, so your portal token was not sent. Check MODAL_GATEWAY_URL in ~/.hermes/.env.")
    return route.origin, token
