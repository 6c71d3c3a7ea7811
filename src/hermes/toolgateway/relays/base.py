"""The relay framework: one pipeline around every vendor operation.

A :class:`Relay` mirrors one vendor API under a label (``firecrawl`` → ``firecrawl-gateway.<domain>``
and ``/relay/firecrawl``). It lists its :class:`Operation` s (method + exact path → handler) and names
the backend serving each. :meth:`Relay.__call__` is the ASGI app the host/prefix router hands requests
to, with the scope's ``path`` already relative to the relay. Every request goes through, in order:

1. **authenticate** — token from the relay's ``token_sources``; signature, expiry, revocation, user
   (:class:`~hermes.toolgateway.portal.auth.Authenticator`; with Redis the rate-limit token is taken in
   the same round trip that reads the revocation version, and is refused with 429 only after steps 2-3);
2. **route** — unknown path 404, wrong method 405;
3. **authorize** — scope, plan expiry (402), category coverage (403);
4. **rate limit** — token bucket keyed on ``sub:jti`` (429 + ``Retry-After``);
5. **read the body** — refused past ``limits.max_request_bytes`` (413);
6. **reserve quota** — atomically, before the vendor is called (429 + ``Retry-After``);
7. **call the handler** within ``limits.vendor_deadline``;
8. **meter** — refund the units if the call failed, record user, category, backend, operation, units,
   cost, status and latency.

Handlers return a :class:`RelayResult` or raise :class:`~hermes.toolgateway.errors.GatewayHTTPError`.
"""

from __future__ import annotations

import json
import logging
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from hermes.toolgateway.errors import GatewayHTTPError, json_object, json_response, refusal, too_many
from hermes.toolgateway.portal.auth import Principal, extract_token
from hermes.toolgateway.storage.base import StorageError
from hermes.toolgateway.storage.metering import QuotaExceeded, Reservation

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway

log = logging.getLogger("hermes.toolgateway")


@dataclass(frozen=True)
class RelayResult:
    """What a handler answers: status, body bytes, content type, extra headers."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of_json(cls, data: Any, status: int = 200) -> RelayResult:
        return cls(status, json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))

    def prepared(self) -> PreparedAnswer:
        """The head and body Starlette's ``Response`` would send (a ``Content-Length`` unless the status has no
        body, the content type with ``charset=utf-8`` for ``text/*``), without building one. A header that cannot
        be sent (not Latin-1: a vendor's value passed on) raises ``UnicodeEncodeError`` here, inside the
        metering, so the call is refunded and answered as a 500 like any other failure."""
        raw = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in self.headers.items()]
        given = {name for name, _ in raw} if raw else ()
        if b"content-length" not in given and not (self.status < 200 or self.status in (204, 304)):
            raw.append((b"content-length", str(len(self.body)).encode("latin-1")))
        if b"content-type" not in given:
            media = self.content_type
            if media.startswith("text/") and "charset=" not in media.lower():
                media += "; charset=utf-8"
            raw.append((b"content-type", media.encode("latin-1")))
        return PreparedAnswer(self.status, raw, self.body)


@dataclass(frozen=True)
class PreparedAnswer:
    """A relay's answer with its head encoded: sent as two ASGI messages."""

    status: int
    head: list[tuple[bytes, bytes]]
    body: bytes

    async def send(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status, "headers": self.head})
        await send({"type": "http.response.body", "body": self.body})


@dataclass
class RelayCall:
    """One authorized request as a handler sees it."""

    gateway: Gateway
    operation: Operation
    principal: Principal
    headers: Headers
    query: str
    body: bytes
    deadline: float
    path: str = ""
    method: str = ""
    #: the ASGI scope and relay label :attr:`base_url` is worked out from (only by the handlers that need it)
    scope: Scope = field(default_factory=dict)
    label: str = ""

    @cached_property
    def base_url(self) -> str:
        """This relay's absolute URL for the URLs a handler hands out (:func:`relay_base_url`)."""
        config = self.gateway.config
        return relay_base_url(self.scope, self.label, config.public_url, config.base_url())

    def json(self) -> dict[str, Any]:
        """The body as a JSON object, or 400 ``invalid_json``."""
        data = json_object(self.body)
        return data


class RequestHeaders(Headers):
    """Starlette's read-only request headers with a quicker :meth:`get` (the relay pipeline and handlers ask for
    a handful of headers each request; ``Mapping.get`` goes through ``__getitem__`` and a ``KeyError``)."""

    def get(self, key: str, default: Any = None) -> Any:
        wanted = _HEADER_KEYS.get(key)
        if wanted is None:
            wanted = key.lower().encode("latin-1")
            if len(_HEADER_KEYS) < 256:
                _HEADER_KEYS[key] = wanted
        for name, value in self.raw:
            if name == wanted:
                return value.decode("latin-1")
        return default


#: header names as the raw request headers spell them (lower-case bytes), by the names code asks for
_HEADER_KEYS: dict[str, bytes] = {}

Handler = Callable[[RelayCall], Awaitable[RelayResult]]
#: Units of one request, from its body and headers (e.g. characters of a speech input); may raise 400.
Measure = Callable[[bytes, Headers], int]


@dataclass(frozen=True)
class Operation:
    """``method path`` of the vendor API, the operation's metering name, its handler and units."""

    method: str
    path: str
    name: str
    handler: Handler
    units: int = 1
    measure: Measure | None = None
    #: the plan category authorised and metered for this operation (None: the relay's ``category``)
    category: str | None = None

    def units_for(self, body: bytes, headers: Headers) -> int:
        """``measure(body, headers)`` when the operation has one, else the fixed ``units``."""
        return self.measure(body, headers) if self.measure is not None else self.units


#: a Host header that is a plain ``name[:port]`` or ``[ipv6][:port]`` (anything else is not used in URLs)
_HOST_SHAPE = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$")


def relay_base_url(scope: Scope, label: str, public_url: str | None, fallback: str) -> str:
    """The absolute URL of this relay in the URLs it hands out (queue status URLs, upload URLs, CDP URLs).

    With ``public_url`` configured: ``public_url`` + the relay's pinned prefix (``/relay/<label>``), which
    reaches the relay on any host — never the request's ``Host`` header, which a client can forge.
    Without it: the scheme and ``Host`` the client used (and any ``/relay/x`` prefix), when the header is
    a plain host name; a malformed one is replaced by ``fallback`` (the configured ``host:port``).
    """
    root = str(scope.get("root_path", ""))
    if public_url:
        return public_url.rstrip("/") + (root or f"/relay/{label}")
    host = Headers(scope=scope).get("host") or ""
    if not _HOST_SHAPE.match(host):
        return fallback.rstrip("/") + root
    return f"{scope.get('scheme', 'http')}://{host}{root}"


class Relay(ABC):
    """Base class: subclasses set ``label``, ``category``, maybe ``token_sources``, and build operations."""

    label: str = ""
    category: str = ""
    token_sources: tuple[str, ...] = ("bearer",)

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._routes: dict[str, dict[str, Operation]] = {}
        for op in self.operations():
            self._routes.setdefault(op.path, {})[op.method] = op

    @abstractmethod
    def operations(self) -> Sequence[Operation]:
        """The vendor endpoints this relay serves."""

    @abstractmethod
    def backend(self, operation: str) -> str:
        """The backend (metered as ``vendor``) serving ``operation``."""

    def match(self, path: str, method: str) -> Operation:
        """The operation for ``method path``: 404 ``not_found`` or 405 ``method_not_allowed`` otherwise.

        Exact paths by default; relays with parameterised vendor paths (FAL model paths) override this.
        """
        methods = self._routes.get(path)
        if methods is None:
            raise GatewayHTTPError(404, "not_found", f"the {self.label} relay has no {path} endpoint")
        op = methods.get(method)
        if op is None:
            raise GatewayHTTPError(405, "method_not_allowed", f"use {', '.join(sorted(methods))} on {path}",
                                   headers={"allow": ", ".join(sorted(methods))})
        return op

    def max_request_bytes(self) -> int:
        """The largest request body this relay reads (``limits.max_request_bytes`` unless overridden)."""
        return self.gateway.config.limits.max_request_bytes

    async def aclose(self) -> None:  # noqa: B027 - a hook: most relays hold nothing of their own
        """Release what the relay holds (the shared HTTP client is closed by the gateway)."""

    def describe(self) -> dict[str, Any]:
        """Label, category and per-operation backends (``/readyz`` and the CLI banner)."""
        return {"label": self.label, "category": self.category,
                "operations": {op.name: self.backend(op.name) for ops in self._routes.values() for op in ops.values()}}

    # -- the pipeline --------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            response = await self._handle(scope, receive)
        except (GatewayHTTPError, StorageError) as exc:
            response = refusal(exc).response()
        except Exception:  # relay requests do not pass Starlette's error middleware (app.GatewayApp)
            log.exception("relay %s failed before its handler ran", self.label)
            response = _internal_error()
        if isinstance(response, PreparedAnswer):
            scope.setdefault("state", {})["gw_status"] = response.status  # for the access log (app.RelayRouter)
            await response.send(send)
        else:
            scope.setdefault("state", {})["gw_status"] = response.status_code
            await response(scope, receive, send)

    async def _handle(self, scope: Scope, receive: Receive) -> Response | PreparedAnswer:
        gw = self.gateway
        headers = RequestHeaders(scope=scope)
        token = extract_token(headers, self.token_sources)
        if gw.shared_revocation:  # Redis: the rate-limit token (leased, or one round trip) and the revocation version
            wait, version = await gw.limiter.acquire_and_version(gw.auth.rate_key_of(token))
            principal = await gw.auth.authenticate_async(token, version)
        else:
            principal = await gw.auth.authenticate_async(token)
            wait = -1.0
        scope.setdefault("state", {})["gw_user"] = principal.user.uid
        op = self.match(scope["path"], scope["method"])
        gw.auth.authorize(principal, op.category or self.category)
        if wait < 0:
            wait = gw.limiter.acquire(principal.rate_key)
        if wait > 0:
            raise too_many("rate_limited", "too many requests with this token; slow down",
                           gw.limiter.retry_after(wait))
        body = await read_body(scope, receive, headers, self.max_request_bytes())
        return await self._metered(op, principal, scope, headers, body)

    async def _metered(self, op: Operation, principal: Principal, scope: Scope, headers: Headers,
                       body: bytes) -> Response | PreparedAnswer:
        gw = self.gateway
        now = gw.clock()
        backend = self.backend(op.name)
        category = op.category or self.category
        limit = principal.plan.monthly.get(category)
        started = time.perf_counter()
        reservation: Reservation | None = None
        wanted = 0
        try:
            wanted = op.units_for(body, headers)
            reservation = await gw.meter.reserve_async(principal.user.id, category, wanted, limit, now)
            call = RelayCall(gw, op, principal, headers, scope.get("query_string", b"").decode("latin-1"), body,
                             time.monotonic() + gw.config.limits.vendor_deadline, scope["path"], scope["method"],
                             scope, self.label)
            result = await op.handler(call)
            response: Response | PreparedAnswer = result.prepared()
            status = result.status
        except QuotaExceeded as exc:
            err = too_many("quota_exceeded", f"{exc}; it resets at the start of next month (UTC)", exc.retry_after,
                           category=exc.category, limit=exc.limit, used=exc.used, portal_url=gw.config.base_url())
            response, status = err.response(), err.status
        except (GatewayHTTPError, StorageError) as exc:
            err = refusal(exc)
            response, status = err.response(), err.status
        except Exception:
            log.exception("relay %s operation %s failed", self.label, op.name)
            response, status = _internal_error(), 500
        latency_ms = (time.perf_counter() - started) * 1000
        units = wanted if status < 400 else 0
        if reservation is not None and status >= 400:
            await gw.meter.refund_async(reservation)
        cost = units * gw.config.unit_cost(category, op.name, backend)
        gw.meter.record(user_id=principal.user.id, jti=principal.jti, category=category, vendor=backend,
                        operation=op.name, units=units, cost=cost, status=status, latency_ms=latency_ms, now=now)
        return response


def _internal_error() -> Response:
    return json_response({"success": False, "error": "the gateway failed on this request", "code": "internal_error"},
                         500)


async def read_body(scope: Scope, receive: Receive, headers: Headers, limit: int) -> bytes:
    """The whole request body, or 413 ``request_too_large`` past ``limit`` bytes."""
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise GatewayHTTPError(413, "request_too_large", f"the request body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise GatewayHTTPError(400, "client_disconnected", "the client went away")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise GatewayHTTPError(413, "request_too_large", f"the request body is larger than {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
