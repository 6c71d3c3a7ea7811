"""Calling a vendor (or a self-hosted engine) from a relay: retries, deadline, size cap, error mapping.

:func:`vendor_request` makes one logical request on the shared ``httpx.AsyncClient``:

* transport errors, timeouts and answers 408/429/500/502/503/504 are retried with exponential backoff
  and jitter (``limits.backoff_base`` × 2ⁿ, or the vendor's ``Retry-After`` when it fits), at most
  ``limits.vendor_retries`` times and never past the call's deadline;
* the body is read as a stream and refused past ``limits.max_response_bytes``.

:func:`raise_for_vendor` maps a final non-2xx answer to what the *client* should see: the vendor
rejected the request (400/404/422 → same status, the vendor's message), the operator's vendor key was
refused or out of credit (→ 502: not the user's fault, and never a 401 that would make clients drop
their own token), rate limited (→ 429 with ``Retry-After``), timed out (→ 504), failed (→ 502). The
operator's key is scrubbed from every message that is passed on.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from hermes.toolgateway.config import Limits
from hermes.toolgateway.errors import GatewayHTTPError, too_many

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class VendorResponse:
    """A complete vendor answer."""

    status: int
    headers: httpx.Headers
    body: bytes
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self, vendor: str) -> Any:
        """The body as JSON, or a 502 ``vendor_bad_response``."""
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError):
            raise GatewayHTTPError(502, "vendor_bad_response", f"{vendor} answered with something that is not JSON") \
                from None

    def json_object(self, vendor: str) -> dict[str, Any]:
        """The body as a JSON object, or a 502 ``vendor_bad_response``."""
        data = self.json(vendor)
        if not isinstance(data, dict):
            raise GatewayHTTPError(502, "vendor_bad_response",
                                   f"{vendor} answered with something that is not an object")
        return data


def operator_headers(api_key: str | None, scheme: str, client: Mapping[str, str], **extra: str) -> dict[str, str]:
    """Headers for a vendor call: ``extra``, the operator's key as ``<scheme> <key>`` (when there is one) and
    the client's ``x-idempotency-key`` passed on (at most 200 characters; a longer one is dropped)."""
    headers = dict(extra)
    if api_key:
        headers["authorization"] = f"{scheme} {api_key}"
    idem = client.get("x-idempotency-key")
    if idem and len(idem) <= 200:
        headers["x-idempotency-key"] = idem
    return headers


def _retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after", "").strip()
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


async def _once(client: httpx.AsyncClient, method: str, url: str, *, timeout: float, max_bytes: int,
                vendor: str, **kwargs: Any) -> VendorResponse:
    async with client.stream(method, url, timeout=timeout, **kwargs) as response:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise GatewayHTTPError(502, "vendor_response_too_large",
                                   f"{vendor} answered with more than {max_bytes} bytes")
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise GatewayHTTPError(502, "vendor_response_too_large",
                                       f"{vendor} answered with more than {max_bytes} bytes")
            chunks.append(chunk)
        return VendorResponse(response.status_code, response.headers, b"".join(chunks))


async def vendor_request(client: httpx.AsyncClient, method: str, url: str, *, vendor: str, limits: Limits,
                         deadline: float, json_body: Any = None, params: Mapping[str, str] | None = None,
                         headers: Mapping[str, str] | None = None, content: bytes | None = None) -> VendorResponse:
    """Call a vendor with retries until ``deadline`` (a ``time.monotonic()`` value).

    The body is ``json_body`` (encoded here) or raw ``content`` (its content type in ``headers``).
    """
    kwargs: dict[str, Any] = {"headers": dict(headers or {})}
    if content is not None:
        kwargs["content"] = content
    elif json_body is not None:
        kwargs["content"] = json.dumps(json_body, separators=(",", ":")).encode("utf-8")
        kwargs["headers"].setdefault("content-type", "application/json")
    if params:
        kwargs["params"] = dict(params)
    attempt = 0
    while True:
        attempt += 1
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise GatewayHTTPError(504, "vendor_timeout", f"{vendor} did not answer in time")
        wait: float | None = None
        try:
            result = await _once(client, method, url, timeout=remaining, max_bytes=limits.max_response_bytes,
                                 vendor=vendor, **kwargs)
        except httpx.TimeoutException:
            if attempt > limits.vendor_retries:
                raise GatewayHTTPError(504, "vendor_timeout", f"{vendor} did not answer in time") from None
        except httpx.HTTPError as exc:
            if attempt > limits.vendor_retries:
                raise GatewayHTTPError(502, "vendor_unreachable",
                                       f"{vendor} could not be reached ({type(exc).__name__})") from None
        else:
            final = VendorResponse(result.status, result.headers, result.body, attempt)
            if result.status not in RETRY_STATUSES or attempt > limits.vendor_retries:
                return final
            wait = _retry_after(result.headers)
            if wait is not None and time.monotonic() + wait >= deadline:
                return final  # the vendor's own wait does not fit: pass its answer on
        delay = wait if wait is not None else limits.backoff_base * (2 ** (attempt - 1)) * random.uniform(0.5, 1.5)
        delay = min(delay, max(0.0, deadline - time.monotonic()) / 2)
        await asyncio.sleep(delay)


def _scrub(text: str, secrets: Iterable[str | None]) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def vendor_message(resp: VendorResponse, secrets: Iterable[str | None] = ()) -> str:
    """The vendor's own error text (``error``/``message``/``detail``), trimmed and scrubbed."""
    text = ""
    try:
        data = json.loads(resp.body)
    except (ValueError, UnicodeDecodeError):
        data = None
    if isinstance(data, Mapping):
        for key in ("error", "message", "detail"):
            value = data.get(key)
            if isinstance(value, Mapping):
                value = value.get("message")
            if isinstance(value, str) and value.strip():
                text = value.strip()
                break
    if not text:
        text = resp.body[:300].decode("utf-8", errors="replace").strip()
    return _scrub(text[:500], secrets)


def raise_for_vendor(resp: VendorResponse, vendor: str, secrets: Iterable[str | None] = ()) -> None:
    """Nothing for a 2xx answer; otherwise the :class:`GatewayHTTPError` the client should get."""
    if resp.ok:
        return
    status = resp.status
    detail = vendor_message(resp, secrets)
    extra = {"vendor": vendor, "vendor_status": status}
    if status in (400, 404, 409, 413, 415, 422):
        raise GatewayHTTPError(status, "vendor_rejected", f"{vendor} rejected the request: {detail}", extra=extra)
    if status in (401, 403):
        raise GatewayHTTPError(502, "vendor_auth_failed",
                               f"{vendor} refused the gateway's credentials; tell the gateway operator", extra=extra)
    if status == 402:
        raise GatewayHTTPError(502, "vendor_payment_required",
                               f"the gateway's {vendor} account is out of credit; tell the gateway operator",
                               extra=extra)
    if status == 429:
        wait = _retry_after(resp.headers)
        raise too_many("vendor_rate_limited", f"{vendor} is rate limiting the gateway; retry later",
                       max(1, int(wait if wait is not None else 5)), vendor=vendor, vendor_status=status)
    if status in (408, 504):
        raise GatewayHTTPError(504, "vendor_timeout", f"{vendor} timed out", extra=extra)
    raise GatewayHTTPError(502, "vendor_error", f"{vendor} failed ({status}): {detail}", extra=extra)
