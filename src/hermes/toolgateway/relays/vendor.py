"""Calling a vendor (or a self-hosted engine) from a relay: retries, deadline, size cap, error mapping.

:func:`vendor_request` makes one logical request on the gateway's vendor client — the small keep-alive
HTTP/1.1 client of :mod:`hermes.net.h1client` (same errors, caps and deadlines as httpx, a fraction of its
cost per request) — or on an ``httpx.AsyncClient`` (through :func:`hermes.net.http.send_request`):

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

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from hermes.errors import DeadlineExceeded, ResponseTooLarge
from hermes.net.h1client import H1Client
from hermes.net.http import HttpAnswer, RetryPolicy, send_request
from hermes.toolgateway.config import Limits
from hermes.toolgateway.errors import GatewayHTTPError, loads_body, too_many

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
#: request bodies' encoder, made once (``json.dumps`` with separators builds a new one on every call)
_JSON_BODY = json.JSONEncoder(separators=(",", ":"))


@dataclass(frozen=True)
class VendorResponse(HttpAnswer):
    """A complete vendor answer."""

    def json(self, vendor: str) -> Any:
        """The body as JSON, or a 502 ``vendor_bad_response``."""
        try:
            return loads_body(self.body)
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


#: the policy made of each ``[limits]`` seen, by its identity (a gateway has one; hashing it cost each call more)
_POLICIES: dict[int, tuple[Limits, RetryPolicy]] = {}


def retry_policy(limits: Limits) -> RetryPolicy:
    """``limits.vendor_retries`` retries after the first try; backoff ``backoff_base`` × 2ⁿ × 0.5–1.5, uncapped
    (the deadline bounds it), and the vendor's ``Retry-After`` taken as it is."""
    made = _POLICIES.get(id(limits))
    if made is not None and made[0] is limits:
        return made[1]
    if len(_POLICIES) >= 64:
        _POLICIES.clear()
    policy = _policy(limits)
    _POLICIES[id(limits)] = (limits, policy)
    return policy


def _policy(limits: Limits) -> RetryPolicy:
    return RetryPolicy(attempts=limits.vendor_retries + 1, base_delay=limits.backoff_base, max_delay=math.inf,
                       statuses=RETRY_STATUSES, max_retry_after=math.inf, jitter=(0.5, 1.5))


async def vendor_request(client: httpx.AsyncClient | H1Client, method: str, url: str, *, vendor: str, limits: Limits,
                         deadline: float, json_body: Any = None, params: Mapping[str, str] | None = None,
                         headers: Mapping[str, str] | None = None, content: bytes | None = None) -> VendorResponse:
    """Call a vendor with retries until ``deadline`` (a ``time.monotonic()`` value).

    The body is ``json_body`` (encoded here) or raw ``content`` (its content type in ``headers``).
    """
    all_headers = dict(headers or {})
    if content is None and json_body is not None:
        try:
            content = orjson.dumps(json_body)
        except TypeError:  # an integer beyond 64 bits, a key that is not a string: json writes those
            content = _JSON_BODY.encode(json_body).encode("utf-8")
        all_headers.setdefault("content-type", "application/json")
    try:
        if isinstance(client, H1Client):
            answer = await client.send(method, url, max_bytes=limits.max_response_bytes, retry=retry_policy(limits),
                                       deadline=deadline, headers=all_headers, content=content, params=params)
        else:
            answer = await send_request(client, method, url, max_bytes=limits.max_response_bytes,
                                        retry=retry_policy(limits), deadline=deadline, headers=all_headers,
                                        params=dict(params) if params else None, content=content)
    except ResponseTooLarge as exc:
        raise GatewayHTTPError(502, "vendor_response_too_large",
                               f"{vendor} answered with more than {exc.limit} bytes") from None
    except (DeadlineExceeded, httpx.TimeoutException):
        raise GatewayHTTPError(504, "vendor_timeout", f"{vendor} did not answer in time") from None
    except httpx.HTTPError as exc:
        raise GatewayHTTPError(502, "vendor_unreachable",
                               f"{vendor} could not be reached ({type(exc).__name__})") from None
    return VendorResponse(answer.status, answer.headers, answer.body, answer.attempts, answer.charset)


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
        wait = resp.retry_after
        raise too_many("vendor_rate_limited", f"{vendor} is rate limiting the gateway; retry later",
                       max(1, int(wait if wait is not None else 5)), vendor=vendor, vendor_status=status)
    if status in (408, 504):
        raise GatewayHTTPError(504, "vendor_timeout", f"{vendor} timed out", extra=extra)
    raise GatewayHTTPError(502, "vendor_error", f"{vendor} failed ({status}): {detail}", extra=extra)
