"""The gateway's ASGI application: :func:`create_app` and the URL layout of one process on one port.

::

    Host: firecrawl-gateway.<domain>[:port]   /v2/search …     → the firecrawl relay (vendor paths as-is)
    any host                                  /relay/firecrawl/v2/search → the same relay (pinned origins)
    any other host (the bare domain, an IP)   /api/oauth/…, /device      → the portal
                                              /api/usage, /api/admin/usage → usage views
    every host                                /healthz, /readyz           → health (never a relay path)
    bare host                                 /openapi.json               → the schema

A client pins a relay with ``FAL_QUEUE_GATEWAY_URL=http://127.0.0.1:8787/relay/fal-queue``: the
upstream client (fal-client, the openai SDK) appends vendor paths directly to the pinned URL, so a
path prefix works as an origin. firecrawl-py 4.x does not: it resolves ``/v2/search`` against the
origin's root (``urljoin``), dropping any prefix, so Firecrawl's ``/v2/…`` paths on the bare host go
to the firecrawl relay and its pin is the bare origin (docs/gateway/compat.md). Absolute URLs a relay hands out
(queue status URLs, upload URLs, CDP URLs) start with ``public_url`` + ``/relay/<label>`` when
``public_url`` is configured, else with the request's own scheme, ``Host`` (when it is a plain host
name) and prefix (:func:`hermes.toolgateway.relays.base.relay_base_url`).
A label without a relay yet answers 404 ``relay_not_available``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from hermes.toolgateway import api
from hermes.toolgateway.accesslog import AccessLogMiddleware, LogSink
from hermes.toolgateway.config import GatewayConfig
from hermes.toolgateway.dashboard import routes as dashboard
from hermes.toolgateway.errors import GatewayHTTPError, json_response, refusal
from hermes.toolgateway.portal import routes as portal
from hermes.toolgateway.relays import KNOWN_LABELS, build_relays
from hermes.toolgateway.relays.base import Relay
from hermes.toolgateway.services import Gateway
from hermes.toolgateway.storage.base import StorageError

RELAY_PREFIX = "/relay/"
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")
_EVERYWHERE = frozenset({"/healthz", "/readyz"})


def relay_label_for_host(host_header: str, domain: str) -> str | None:
    """``firecrawl`` for ``firecrawl-gateway.<domain>[:port]``; None for any other host."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return None
    name, sep, port = host.rpartition(":")
    if sep and port.isdigit():
        host = name
    host = host.rstrip(".")
    suffix = f"-gateway.{domain}"
    if not host.endswith(suffix):
        return None
    label = host[: -len(suffix)]
    return label if _LABEL.match(label) else None


class RelayRouter:
    """Pure ASGI: sends relay hosts and ``/relay/{label}/…`` paths to the relays, the rest on.

    ``relays`` is the app's relay table, by label: filled by the lifespan when the resources are open.
    """

    def __init__(self, app: ASGIApp, relays: Mapping[str, Relay], domain: str, sink: LogSink | None = None) -> None:
        self.app = app  # with the access log around it, when there is one
        self.relays = relays
        self.domain = domain
        self.sink = sink if sink is not None and sink.enabled else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path.startswith(RELAY_PREFIX):
            label, _, rest = path[len(RELAY_PREFIX):].partition("/")
            prefix = RELAY_PREFIX + label
            scope.setdefault("state", {})  # shared with the child: what the relay records there is logged
            child = dict(scope)
            child["path"] = "/" + rest
            child["root_path"] = scope.get("root_path", "") + prefix
            raw = scope.get("raw_path")
            if isinstance(raw, bytes) and raw.startswith(prefix.encode()):
                child["raw_path"] = raw[len(prefix):] or b"/"
            await self._relay(label, child, receive, send, scope)
            return
        if path not in _EVERYWHERE:
            host = ""
            for name, value in scope["headers"]:
                if name == b"host":
                    host = value.decode("latin-1")
                    break
            host_label = relay_label_for_host(host, self.domain) if host else None
            if host_label is not None:
                await self._relay(host_label, scope, receive, send, scope)
                return
            if path.startswith("/v2/"):  # firecrawl-py drops a pinned prefix (see above)
                await self._relay("firecrawl", scope, receive, send, scope)
                return
        await self.app(scope, receive, send)

    async def _relay(self, label: str, scope: Scope, receive: Receive, send: Send, sent: Scope) -> None:
        """``scope`` to the relay of ``label`` (``sent``: the request as the client sent it, for the access log)."""
        relay = self.relays.get(label)
        http = scope["type"] == "http"
        if not http:
            websocket = getattr(relay, "websocket", None)
            if websocket is not None:  # relays that take WebSockets (browser-use's CDP proxy) have a websocket()
                await websocket(scope, receive, send)
                return
        sink = self.sink
        if relay is not None and http:
            if sink is None:
                await relay(scope, receive, send)
            elif type(relay).__call__ is Relay.__call__:  # it records the status it sends: no wrapped send
                await sink.timed(relay, scope, receive, send, sent)
            else:
                await AccessLogMiddleware(relay, sink).logged(scope, receive, send, sent)
            return
        if relay is not None:
            error = GatewayHTTPError(404, "not_found", f"the {label} relay takes no WebSocket connections")
        elif label in KNOWN_LABELS:
            error = GatewayHTTPError(404, "relay_not_available", f"this gateway does not offer the {label} relay yet")
        else:
            error = GatewayHTTPError(404, "unknown_relay", f"there is no relay named {label!r}")
        answer = error.response()
        if sink is not None and http:
            await AccessLogMiddleware(answer, sink).logged(scope, receive, send, sent)
        else:
            await answer(scope, receive, send)


class GatewayApp(Starlette):
    """The portal, API and dashboards on Starlette, behind :attr:`front` — the :class:`RelayRouter` —
    which sees every request first: a relay request goes straight to its relay (its own errors answered
    by the relay, an unexpected one as a JSON 500; the router writes its access line), everything else
    (lifespan included) on to the access log and Starlette's own stack through :meth:`starlette`.
    Starlette's per-request layers (its error middleware and the wrapped ``send``) were a measurable part
    of a relayed call's own cost."""

    front: ASGIApp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.front(scope, receive, send)

    async def starlette(self, scope: Scope, receive: Receive, send: Send) -> None:
        await super().__call__(scope, receive, send)


async def _gateway_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, (GatewayHTTPError, StorageError))
    return refusal(exc).response()


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return json_response({"error": str(exc.detail), "code": code}, exc.status_code, exc.headers)


def create_app(config: GatewayConfig, *, gateway: Gateway | None = None) -> GatewayApp:
    """The ASGI app for ``config``; resources open in its lifespan and close after in-flight requests.

    The lifespan opens the shared resources (:class:`~hermes.toolgateway.services.Gateway`), then builds
    the relay table (:func:`~hermes.toolgateway.relays.build_relays`) the router and ``/readyz`` read
    (``app.state.relays``); on shutdown the relays close first, then the resources.
    """
    gw = gateway or Gateway(config)
    sink = LogSink(config.access_log)
    relays: dict[str, Relay] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        await gw.start()
        try:
            relays.update(build_relays(gw))
            yield {}
        finally:
            try:
                for relay in relays.values():
                    await relay.aclose()
                await gw.close()
            finally:
                sink.close()  # the access lines still waiting are written whatever failed above

    app = GatewayApp(
        routes=[*api.routes(gw, relays), *portal.routes(gw), *dashboard.routes(gw)],
        exception_handlers={GatewayHTTPError: _gateway_error, StorageError: _gateway_error,
                            HTTPException: _http_error},
        lifespan=lifespan,
    )
    app.front = RelayRouter(AccessLogMiddleware(app.starlette, sink=sink), relays, config.domain, sink)
    app.state.gateway = gw
    app.state.relays = relays
    return app
