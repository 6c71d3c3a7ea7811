"""Errors the gateway answers with, and their one JSON shape.

Every refusal and failure is a JSON object with a human ``error`` string at the top level plus a
machine ``code`` — the shape every client reads: the Firecrawl SDK and the upstream modal client take
``error`` (or ``message``/``code``), the upstream account check treats a string ``error`` as failure.
Firecrawl-shaped relays add ``"success": false``. Examples::

    401 {"success": false, "error": "the token has expired", "code": "token_expired", ...}
    402 {"success": false, "error": "...", "code": "subscription_expired", "portal_url": "http://..."}
    429 {"success": false, "error": "...", "code": "quota_exceeded", "retry_after": 3600}  + Retry-After

Status codes: 400 bad request, 401 no/invalid/expired/revoked token, 402 plan expired, 403 disabled
account / category not covered / missing scope / URL not allowed, 404 unknown relay or path, 413 request
too large, 429 quota or rate limit (with ``Retry-After``), 502 vendor failed, 503 backend not
configured, 504 vendor timed out.

The storage layer's errors carry no status (:mod:`hermes.toolgateway.storage.base`): :func:`refusal` is
where they become answers — 503 ``storage_unavailable``/``rate_limiter_unavailable`` with
``Retry-After: 1`` for a database or Redis that does not answer, 400 ``invalid_request`` for a value the
database cannot store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson
from starlette.responses import Response

from hermes.toolgateway.storage.base import StorageError, StorageUnavailable


class GatewayHTTPError(Exception):
    """An answer other than success; raised anywhere in a request, turned into JSON at one place."""

    def __init__(self, status: int, code: str, message: str, *, headers: Mapping[str, str] | None = None,
                 extra: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})

    def body(self) -> dict[str, Any]:
        return {"success": False, "error": self.message, "code": self.code, "message": self.message, **self.extra}

    def response(self) -> Response:
        return json_response(self.body(), self.status, self.headers)


def refusal(exc: GatewayHTTPError | StorageError) -> GatewayHTTPError:
    """The answer ``exc`` becomes: itself, or for a storage error 503 (does not answer) or 400 (bad value)."""
    if isinstance(exc, GatewayHTTPError):
        return exc
    if isinstance(exc, StorageUnavailable):
        return GatewayHTTPError(503, exc.code, exc.public, headers={"retry-after": "1"})
    return GatewayHTTPError(400, exc.code, exc.public)


def loads_body(body: bytes) -> Any:
    """``json.loads(body)``, read by orjson (several times faster) and by json only when orjson refuses it:
    what json also takes (a byte-order mark, UTF-16 or UTF-32, ``NaN``, a lone surrogate) reads as before,
    and what json refuses raises json's error. (orjson reads an integer beyond 64 bits as a float.)"""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body)


def json_object(body: bytes) -> dict[str, Any]:
    """A request body as a JSON object (empty body: ``{}``), or 400 ``invalid_json``."""
    try:
        data = loads_body(body or b"{}")
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise GatewayHTTPError(400, "invalid_json", "the request body is not valid JSON") from None
    if not isinstance(data, dict):
        raise GatewayHTTPError(400, "invalid_json", "the request body must be a JSON object")
    return data


def json_response(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """A compact JSON response (``application/json``), never cached."""
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    hdrs = {"cache-control": "no-store", **(headers or {})}
    return Response(body, status_code=status, headers=hdrs, media_type="application/json")


def unauthorized(code: str, message: str, portal_url: str | None = None) -> GatewayHTTPError:
    """401 with ``WWW-Authenticate: Bearer error="invalid_token"`` (RFC 6750)."""
    extra = {"portal_url": portal_url} if portal_url else None
    return GatewayHTTPError(401, code, message, headers={"www-authenticate": 'Bearer error="invalid_token"'},
                            extra=extra)


def too_many(code: str, message: str, retry_after: int, **extra: Any) -> GatewayHTTPError:
    """429 with ``Retry-After`` in whole seconds."""
    return GatewayHTTPError(429, code, message, headers={"retry-after": str(retry_after)},
                            extra={"retry_after": retry_after, **extra})
