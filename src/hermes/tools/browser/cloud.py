"""Cloud browsers for the browser tools: Browser Use (directly or through the Nous Tool Gateway),
Browserbase and Camofox (GW-2).

The routing function decides at each tab's opening (``browser.cloud_provider``, else the GW-2 order):
a **gateway** route calls the gateway's ``browser-use`` relay with the portal token, a **byok** route
calls the Browser Use API (``https://api.browser-use.com/api/v3``, or ``browser.browser-use.base_url``)
with ``BROWSER_USE_API_KEY``. Both speak the Browser Use v3 shape::

    POST  {base}/browsers  {"timeout": MINUTES}   X-Browser-Use-API-Key: <secret>  → {"id", "cdpUrl", …}
    PATCH {base}/browsers/{id}  {"action": "stop"}

Browserbase (``https://api.browserbase.com/v1``, or ``browser.browserbase.base_url``; ``X-BB-API-Key:
BROWSERBASE_API_KEY``): ``POST {base}/sessions {"projectId"}`` → ``{"id", "connectUrl"}``, released with
``POST {base}/sessions/{id} {"projectId", "status": "REQUEST_RELEASE"}``.

The tab then drives ``cdpUrl`` / ``connectUrl`` with Playwright's ``connect_over_cdp`` (one cloud browser per task) and
stops the session when the task ends. Camofox (``CAMOFOX_URL``: a Firefox with its own REST API, not CDP)
is driven over that API by :mod:`.camofox`, with ``CAMOFOX_ACCESS_KEY`` (else ``CAMOFOX_API_KEY``) as its
bearer token when set. The secret never leaves :class:`CloudAccess` except in the
request header to the origin the routing function vetted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.tools.toolsets import Surface

BROWSER_USE_API = "/api/v3"
SESSION_MINUTES = 15  # the Browser Use default; free accounts may not ask for more
BROWSERBASE_API = "/v1"
DRIVEN = frozenset({"browser-use", "browserbase", "camofox"})
CAMOFOX_KEYS = ("CAMOFOX_ACCESS_KEY", "CAMOFOX_API_KEY")
NOT_DRIVEN = ("browser is configured to use {vendor} (set via hermes tools), but this hermes drives only a local "
              "Chromium, a CDP endpoint (browser.cdp_url) or Browser Use so far. Run 'hermes tools' to change it.")


@dataclass(frozen=True)
class CloudAccess:
    """Where a cloud browser session is created and with which secret (kept out of ``repr``)."""

    vendor: str
    base: str
    via: str
    secret: str = field(repr=False)
    #: Browserbase's project (``BROWSERBASE_PROJECT_ID``)
    project: str | None = None


def cloud_access(settings: Settings, surface: Surface | None = None) -> CloudAccess | None:
    """The cloud browser the routing function gives this session, None for the local Chromium; a
    SelectionError / GatewayError (GW-3 wording) or a ToolError when the choice cannot run."""
    from hermes.tools.routed.context import RoutedContext

    routed = RoutedContext(settings, surface)
    route = routed.route("browser")
    if route.kind == "local" or route.vendor == "local":
        return None
    vendor = route.vendor or "browser-use"
    if route.kind != "gateway" and vendor not in DRIVEN:
        raise ToolError(NOT_DRIVEN.format(vendor=vendor))
    access = routed.access(route)
    if access.gateway:
        return CloudAccess("browser-use", access.origin.rstrip("/"), access.via, access.secret)
    base = access.origin.rstrip("/")
    if vendor == "camofox":
        key = next((value for name in CAMOFOX_KEYS if (value := (routed.env.get(name) or "").strip())), "")
        return CloudAccess("camofox", base, access.via, key)
    suffix = BROWSERBASE_API if vendor == "browserbase" else BROWSER_USE_API
    if routed.get_str(f"browser.{vendor}.base_url") is None and not base.endswith(suffix):
        base += suffix
    project = (routed.env.get("BROWSERBASE_PROJECT_ID") or "").strip() or None
    return CloudAccess(vendor, base, access.via, access.secret, project if vendor == "browserbase" else None)


async def create_session(access: CloudAccess, timeout: float) -> tuple[str, str]:
    """A new cloud browser: (session id, CDP WebSocket URL)."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=timeout, trust_env=False) as http:
            if access.vendor == "browserbase":
                reply = await http.post(f"{access.base}/sessions", json={"projectId": access.project},
                                        headers=_headers(access))
            else:
                reply = await http.post(f"{access.base}/browsers", json={"timeout": SESSION_MINUTES},
                                        headers=_headers(access))
    except httpx.HTTPError as exc:
        raise ToolError(f"the cloud browser ({access.via}) did not answer: {type(exc).__name__}") from None
    body = _json(reply)
    if reply.status_code >= 400:
        raise ToolError(f"the cloud browser ({access.via}) refused a new session: HTTP {reply.status_code} "
                        f"{_message(body)}".rstrip())
    ident, url = body.get("id"), body.get("connectUrl" if access.vendor == "browserbase" else "cdpUrl")
    if not isinstance(ident, str) or not isinstance(url, str) or not url.startswith(("ws://", "wss://", "http")):
        raise ToolError(f"the cloud browser ({access.via}) answered a session without an id and a cdpUrl")
    return ident, url


async def stop_session(access: CloudAccess, ident: str) -> None:
    """Stop a cloud browser session (failures are left to the vendor's own timeout)."""
    import contextlib

    import httpx

    with contextlib.suppress(httpx.HTTPError):
        async with httpx.AsyncClient(timeout=15, trust_env=False) as http:
            if access.vendor == "browserbase":  # a session ends when its release is requested
                release = {"projectId": access.project, "status": "REQUEST_RELEASE"}
                await http.post(f"{access.base}/sessions/{ident}", json=release, headers=_headers(access))
            else:
                await http.patch(f"{access.base}/browsers/{ident}", json={"action": "stop"}, headers=_headers(access))


def _headers(access: CloudAccess) -> dict[str, str]:
    name = "X-BB-API-Key" if access.vendor == "browserbase" else "X-Browser-Use-API-Key"
    return {name: access.secret, "Content-Type": "application/json"}


def _json(reply: Any) -> dict[str, Any]:
    try:
        body = reply.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _message(body: dict[str, Any]) -> str:
    error = body.get("error")
    if isinstance(error, dict):
        return str(error.get("message", ""))[:300]
    return str(error or body.get("detail") or "")[:300]
