"""May this gateway route run now? The GW-10 check, kept apart from route selection.

:func:`~hermes.routing.selection.resolve_route` answers *where* a category goes; it ignores whether the
account may use the gateway, because a saved ``nous`` selection must stay the route even while logged
out or after the subscription lapsed (GW-3: no silent fall to another backend). This module answers
*whether it may run*:

* :func:`entitlement_for` — the :class:`~hermes.routing.credentials.Entitlement` of a route (None for
  routes that do not use the gateway); never raises, for ``hermes portal info``;
* :func:`check_entitlement` — the same, raising :class:`~hermes.errors.GatewayError` with a message that
  points to the portal (GW-10) when the route cannot run. Tools call it right before a gateway call,
  after the login code has had its chance to refresh the token.

Image models: Krea native models and the portal's own image models need a paid plan; the free tool
tier covers FAL models only (GW-11).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from hermes.errors import GatewayError
from hermes.routing.categories import CATEGORIES
from hermes.routing.credentials import Credentials, Entitlement
from hermes.routing.selection import Route

#: Relay labels of image routes that a free tool tier does not cover.
PAID_ONLY_LABELS = frozenset({"krea", "tool"})


def entitlement_for(route: Route, credentials: Credentials, now: float | None = None) -> Entitlement | None:
    """The entitlement a gateway route depends on at ``now`` (default: the current time); None otherwise."""
    if route.kind != "gateway":
        return None
    moment = time.time() if now is None else now
    coverage_key = CATEGORIES[route.category].coverage_key
    entitlement = credentials.entitlement(coverage_key, moment)
    if entitlement.status == "free_tier" and route.gateway_label in PAID_ONLY_LABELS:
        return Entitlement(coverage_key, "not_covered")
    if entitlement.entitled and not offered(route, credentials):
        return Entitlement(coverage_key, "not_offered")
    return entitlement


def offered(route: Route, credentials: Credentials) -> bool:
    """False only when the route calls the gateway the portal login advertised and that gateway said it does
    not serve this route (its operator left the relay off); any other origin is not judged here."""
    gateway, label = credentials.gateway, route.gateway_label
    if gateway is None or label is None or route.origin != gateway.origins.get(label):
        return True
    return gateway.offers_route(label, route.category, route.function)


def check_entitlement(route: Route, credentials: Credentials, now: float | None = None) -> Entitlement | None:
    """:func:`entitlement_for`, raising GatewayError (GW-10 wording) when a gateway route may not run.

    The message names the category, says why, and offers both ways out: the portal (log in, renew,
    upgrade) and ``hermes tools`` to switch the category to a direct key. It never contains a token.
    """
    entitlement = entitlement_for(route, credentials, now)
    if entitlement is None or entitlement.entitled:
        return entitlement
    raise GatewayError(gateway_error_text(route, entitlement, credentials))


def gateway_error_text(route: Route, entitlement: Entitlement, credentials: Credentials) -> str:
    """The GW-10 message for a gateway route whose entitlement is missing."""
    subject = route.name
    manage = f"{credentials.portal_base_url}/manage-subscription"
    switch = f"or run 'hermes tools' to switch {subject} to your own key."
    lead = f"{subject} uses the Nous Tool Gateway, but"
    status = entitlement.status
    if status == "not_logged_in":
        return f"{lead} you are not logged in to Nous Portal. Run 'hermes portal login', {switch}"
    if status == "unknown":
        return f"{lead} your Nous Portal token carries no readable entitlement. Run 'hermes portal login', {switch}"
    if status == "expired":
        return f"{lead} your Nous Portal login has expired. Run 'hermes portal login' to renew it, {switch}"
    if status == "not_covered" and route.gateway_label in PAID_ONLY_LABELS and credentials.free_tier:
        return (
            f"{subject} uses a Krea or Nous Portal image model, which needs a paid Nous subscription; the free "
            f"tool tier covers FAL models only. Upgrade at {manage}, pick a FAL model in 'hermes tools', {switch}"
        )
    if status == "not_covered":
        return f"{lead} your free tool tier does not cover it. Upgrade at {manage}, {switch}"
    if status == "not_offered":
        return (f"{subject} uses the Tool Gateway at {route.origin}, but that gateway does not offer it (its "
                f"operator has not set up the {route.gateway_label} relay for it). Ask the operator, {switch}")
    return (
        f"{lead} your Nous Portal account has no active subscription with tool access (it may have expired). "
        f"Renew it at {manage}, {switch}"
    )


def gateway_token(route: Route, credentials: Credentials, env: Mapping[str, str]) -> tuple[str, str]:
    """``(origin, user token)`` of a gateway route, after every check a tool must make before sending it.

    Raises :class:`GatewayError` when the plan does not cover the route (GW-10), when no token is
    available, or when the route's origin is not a configured gateway host (the token never goes there).
    """
    from hermes.routing.endpoints import token_allowed_for

    check_entitlement(route, credentials)
    token = credentials.token
    if not token or not route.origin:
        raise GatewayError(f"{route.name} uses the Nous Tool Gateway, but no portal token is available. "
                           "Run 'hermes portal login', or run 'hermes tools' to switch to your own key.")
    if not token_allowed_for(route.origin, env, advertised=credentials.gateway_origins):
        raise GatewayError(f"{route.name}: the gateway origin {route.origin} is not a trusted gateway host, "
                           "so your portal token was not sent. Check the *_GATEWAY_URL settings in "
                           "~/.hermes/.env.")
    return route.origin, token
