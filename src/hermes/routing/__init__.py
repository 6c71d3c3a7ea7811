"""Tool Gateway client side: which backend each tool category uses, where it calls, and who may pay.

* :mod:`~hermes.routing.categories` — the categories, their selection keys and vendors, as data;
* :mod:`~hermes.routing.selection` — :func:`resolve_route`, the pure selection function (GW-2…GW-6);
* :mod:`~hermes.routing.entitlement` — :func:`check_entitlement`, the GW-10 check for gateway routes;
* :mod:`~hermes.routing.endpoints` — gateway origins and :func:`token_allowed_for` (GW-14);
* :mod:`~hermes.routing.credentials` — portal tokens and JWT claims (read-only view of auth.json).

Typical use by a tool at execution time::

    route = resolve_route("image_gen", settings.config.data, settings.env.as_dict(), credentials).require()
    check_entitlement(route, credentials)      # only does something for gateway routes
    client = FalClient(base_url=route.origin, ...)
"""

from __future__ import annotations

from hermes.routing.categories import CATEGORIES, GATEWAY_VALUE, ROUTE_NAMES, Category, Vendor, selection_values
from hermes.routing.credentials import Claims, Credentials, Entitlement, decode_jwt_payload, load_credentials
from hermes.routing.endpoints import (
    connector_origin,
    gateway_origin,
    pin_env_name,
    shared_origin,
    token_allowed_for,
)
from hermes.routing.entitlement import check_entitlement, entitlement_for, gateway_token
from hermes.routing.selection import Route, resolve_all, resolve_route, selection_state

__all__ = [
    "CATEGORIES",
    "GATEWAY_VALUE",
    "ROUTE_NAMES",
    "Category",
    "Claims",
    "Credentials",
    "Entitlement",
    "Route",
    "Vendor",
    "check_entitlement",
    "connector_origin",
    "decode_jwt_payload",
    "entitlement_for",
    "gateway_origin",
    "gateway_token",
    "load_credentials",
    "pin_env_name",
    "resolve_all",
    "resolve_route",
    "selection_state",
    "selection_values",
    "shared_origin",
    "token_allowed_for",
]
