"""The gateway's own JSON endpoints: health, readiness, OpenAPI, and the usage views (requirement GW-15).

* ``GET /healthz`` — the process answers; ``GET /readyz`` — the database (and Redis, when configured)
  answers (503 otherwise) and which relays and backends are configured;
* ``GET /openapi.json`` — the schema of the portal, usage, admin and relay endpoints;
* ``GET /api/usage`` — the caller's own usage (gateway token): per category, backend and operation
  (calls, successes, units, cost, mean latency), per day, and this month's allowances. There is no
  parameter naming a user: nobody can ask for someone else's usage here;
* ``GET /api/admin/usage`` — everyone's usage, or one user's with ``?user=NAME``; needs
  ``Authorization: Bearer <admin token>``.

The window is ``?period=YYYY-MM`` (a calendar month, UTC; default the current one) or ``?days=N``.
"""

from __future__ import annotations

import calendar
import hmac
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hermes.toolgateway.errors import GatewayHTTPError, json_response, unauthorized
from hermes.toolgateway.portal.auth import extract_token
from hermes.toolgateway.storage.metering import month_period, next_period_start

if TYPE_CHECKING:
    from hermes.toolgateway.relays.base import Relay
    from hermes.toolgateway.services import Gateway

_PERIOD = re.compile(r"^(\d{4})-(\d{2})$")


def usage_window(request: Request, now: float) -> tuple[float, float, str]:
    """``(since, until, label)`` from ``?period=`` or ``?days=`` (400 when malformed)."""
    days = request.query_params.get("days")
    if days is not None:
        if not days.isdigit() or not 1 <= int(days) <= 366:
            raise GatewayHTTPError(400, "invalid_request", "days must be a whole number from 1 to 366")
        return now - int(days) * 86400, now + 1, f"last {int(days)} days"
    period = request.query_params.get("period") or month_period(now)
    match = _PERIOD.match(period)
    if not match or not 1 <= int(match.group(2)) <= 12:
        raise GatewayHTTPError(400, "invalid_request", "period must look like 2025-01")
    start = float(calendar.timegm((int(match.group(1)), int(match.group(2)), 1, 0, 0, 0, 0, 0, 0)))
    return start, next_period_start(start), period


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"calls": sum(r["calls"] for r in rows), "units": sum(r["units"] for r in rows),
            "cost": round(sum(r["cost"] for r in rows), 6)}


def require_admin(gw: Gateway, request: Request) -> None:
    """401 unless the request carries the admin token."""
    given = extract_token(request.headers) or ""
    if not given or not hmac.compare_digest(given.encode(), gw.admin_token.encode()):
        raise unauthorized("admin_required", "this endpoint needs the gateway's admin token")
    request.scope.setdefault("state", {})["gw_user"] = "admin"


def routes(gw: Gateway, relays: Mapping[str, Relay]) -> list[Route]:
    """Health, OpenAPI and usage routes bound to ``gw``; ``/readyz`` describes ``relays`` (the app's table)."""

    async def healthz(request: Request) -> Response:
        return json_response({"status": "ok"})

    async def readyz(request: Request) -> Response:
        problem = gw.unready_reason()
        if problem is not None:
            return json_response({"status": "unavailable", "error": problem}, 503)
        return json_response({"status": "ready", "relays": [r.describe() for r in relays.values()]})

    async def openapi(request: Request) -> Response:
        from hermes.toolgateway.openapi import schema

        return json_response(schema(gw.config))

    async def usage(request: Request) -> Response:
        principal = gw.auth.authenticate(extract_token(request.headers))
        user = principal.user
        request.scope.setdefault("state", {})["gw_user"] = user.uid
        now = gw.clock()
        since, until, label = usage_window(request, now)
        await gw.meter.flush()  # this process's journalled usage rows first
        rows = gw.meter.summary(user_id=user.id, since=since, until=until)
        for row in rows:
            row.pop("user", None)
        plan = gw.accounts.plan_of(user)
        return json_response({
            "user": {"id": user.uid, "name": user.name, "plan": user.plan},
            "window": {"label": label, "from": _iso(since), "to": _iso(min(until, now))},
            "totals": _totals(rows),
            "by_tool": rows,
            "daily": gw.meter.daily(user_id=user.id, since=since, until=until),
            "allowances": gw.meter.allowances(user.id, dict(plan.monthly), now),
        })

    async def admin_usage(request: Request) -> Response:
        require_admin(gw, request)
        now = gw.clock()
        since, until, label = usage_window(request, now)
        name = request.query_params.get("user")
        user_id = None
        if name:
            from hermes.toolgateway.portal.accounts import AccountError

            try:
                user_id = gw.accounts.get_user(name).id
            except AccountError as exc:
                raise GatewayHTTPError(404, "unknown_user", str(exc)) from None
        await gw.meter.flush()
        rows = gw.meter.summary(user_id=user_id, since=since, until=until)
        per_user: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            per_user.setdefault(row["user"], []).append(row)
        return json_response({
            "window": {"label": label, "from": _iso(since), "to": _iso(min(until, now))},
            "totals": _totals(rows),
            "users": [{"user": u, "totals": _totals(r), "by_tool": r} for u, r in per_user.items()],
            "daily": gw.meter.daily(user_id=user_id, since=since, until=until),
        })

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/api/usage", usage, methods=["GET"]),
        Route("/api/admin/usage", admin_usage, methods=["GET"]),
    ]
