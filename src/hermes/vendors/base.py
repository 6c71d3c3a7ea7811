"""Plumbing every vendor client shares: credentials, errors, retries, size caps and URL guards.

A vendor client is built from ``(http, origin, auth)``: the shared ``httpx.AsyncClient``, the base URL
it calls (the vendor's own API for BYOK routes, a Tool Gateway relay for managed ones) and the
:class:`Auth` header to attach. Nothing else differs between the two routes, which is why the gateway
server's relays can use the same clients towards the real vendors.

:func:`send` makes one logical request through :func:`hermes.net.http.send_request`:

* the credential is attached only when ``allow(url)`` says so — a vendor (or a relay) that answers with
  an absolute URL on some other host never receives the user's key or portal token;
* transport errors and the statuses in :attr:`RetryPolicy.statuses` are retried with exponential backoff
  (``Retry-After`` honoured up to ``max_delay``), with the same idempotency key on every attempt;
* the body is read as a stream and refused past ``max_bytes``;
* httpx's errors and the size cap become :class:`VendorError` s.

:class:`JsonApiClient` holds what every client has (client, origin, credential, URL guard, retry policy,
time-out, size cap) and sends through :func:`send`; each vendor's client is a subclass adding its endpoints.

It returns the final :class:`VendorResponse` whatever its status; :meth:`VendorResponse.raise_for_status`
turns a non-2xx answer into a :class:`VendorError` carrying the vendor's own message.
"""

from __future__ import annotations

import base64
import binascii
import json
import socket
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal
from urllib.parse import unquote_to_bytes, urlsplit

import httpx

from hermes.errors import HermesError, ResponseTooLarge
from hermes.net.http import NO_RETRY as NO_RETRY  # re-exported: the clients and their callers import both from here
from hermes.net.http import HttpAnswer, send_request
from hermes.net.http import RetryPolicy as RetryPolicy

UrlGuard = Callable[[str], bool]
ErrorKind = Literal["unreachable", "timeout", "http", "bad_response", "too_large", "refused_url", "failed"]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_MESSAGE_LIMIT = 300


@dataclass(frozen=True)
class Auth:
    """One credential header. The value is kept out of ``repr`` (it is a key or a portal token)."""

    header: str
    value: str = field(repr=False)

    @classmethod
    def bearer(cls, token: str) -> Auth:
        """``Authorization: Bearer <token>`` (OpenAI, Krea, xAI, the gateway's own endpoints)."""
        return cls("authorization", f"Bearer {token}")

    @classmethod
    def key(cls, token: str) -> Auth:
        """``Authorization: Key <token>`` (FAL and its queue relay)."""
        return cls("authorization", f"Key {token}")

    @classmethod
    def api_key_header(cls, name: str, token: str) -> Auth:
        """A vendor-specific header such as ElevenLabs' ``xi-api-key``."""
        return cls(name.lower(), token)

    def headers(self) -> dict[str, str]:
        return {self.header: self.value}


class VendorError(HermesError):
    """A vendor (or a relay in front of it) failed, refused, or answered something unreadable.

    ``kind`` says what happened; ``status`` is the HTTP status of an answer (None when there was none);
    ``before_start`` is True when the vendor certainly did not start any work (it could not be reached,
    or it kept answering 429) — the only case where a caller may safely try another backend.
    """

    def __init__(
        self, vendor: str, message: str, *, kind: ErrorKind, status: int | None = None,
        retry_after: float | None = None, before_start: bool = False,
    ) -> None:
        super().__init__(message)
        self.vendor = vendor
        self.kind = kind
        self.status = status
        self.retry_after = retry_after
        self.before_start = before_start


@dataclass(frozen=True)
class VendorResponse(HttpAnswer):
    """A complete answer of ``vendor``: status, headers, body, and how many tries it took."""

    vendor: str = "vendor"

    def json(self) -> Any:
        """The body as JSON, or a ``bad_response`` VendorError."""
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            raise VendorError(self.vendor, f"{self.vendor} answered with something that is not JSON",
                              kind="bad_response", status=self.status) from None

    def json_object(self) -> dict[str, Any]:
        """The body as a JSON object (a ``bad_response`` VendorError for anything else)."""
        value = self.json()
        if not isinstance(value, dict):
            raise VendorError(self.vendor, f"{self.vendor} answered with JSON that is not an object",
                              kind="bad_response", status=self.status)
        return value

    def raise_for_status(self) -> VendorResponse:
        """This response when it is a 2xx, else :meth:`http_error`."""
        if self.ok:
            return self
        raise self.http_error()

    def http_error(self) -> VendorError:
        """The VendorError for this answer: its status and the vendor's own message."""
        detail = error_detail(self.body)
        suffix = f": {detail}" if detail else ""
        return VendorError(self.vendor, f"{self.vendor} answered HTTP {self.status}{suffix}", kind="http",
                           status=self.status, retry_after=self.retry_after)


def error_detail(body: bytes) -> str:
    """The vendor's own error message from a body (JSON ``error``/``message``/``detail``, else text)."""
    text = body[:4096].decode("utf-8", errors="replace").strip()
    try:
        value: Any = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        for key in ("error", "message", "detail", "msg"):
            found = _message_of(value.get(key))
            if found:
                return _clip(found)
    if text.startswith(("<", "{", "[")):
        return ""
    return _clip(text)


def _message_of(value: object) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, dict):
        return _message_of(value.get("message")) or _message_of(value.get("detail"))
    if isinstance(value, list) and value:
        return _message_of(value[0]) or (_message_of(value[0].get("msg")) if isinstance(value[0], dict) else None)
    return None


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


def origin_of(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of an http(s) URL, or None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return None
    return scheme, parts.hostname.lower().rstrip("."), port or (443 if scheme == "https" else 80)


def same_origin(base: str) -> UrlGuard:
    """A guard allowing only URLs on the scheme, host and port of ``base``."""
    wanted = origin_of(base)

    def allow(url: str) -> bool:
        return wanted is not None and origin_of(url) == wanted

    return allow


def join(origin: str, path: str) -> str:
    """``origin`` (no trailing slash) + ``/`` + ``path`` (leading slashes dropped)."""
    return f"{origin.rstrip('/')}/{path.lstrip('/')}"


def new_client(timeout: float = 60.0, *, user_agent: str = "hermes-agent") -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` suited to the vendor clients: no redirects, and ``TCP_NODELAY`` on its sockets.

    httpx writes a request's headers and body separately; without ``TCP_NODELAY`` the body waits for the
    server's delayed ACK (about 40 ms on Linux) on every reused connection.
    """
    transport = httpx.AsyncHTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    return httpx.AsyncClient(timeout=timeout, follow_redirects=False, headers={"user-agent": user_agent},
                             transport=transport)


def api_root(origin: str) -> str:
    """``origin`` without a trailing slash or ``/v1`` (OpenAI-style base URLs are often written with it)."""
    root = origin.rstrip("/")
    return root[:-3] if root.endswith("/v1") else root


def idempotency_key() -> str:
    return str(uuid.uuid4())


async def send(
    http: httpx.AsyncClient, method: str, url: str, *, vendor: str, auth: Auth | None,
    allow: UrlGuard, retry: RetryPolicy = NO_RETRY, timeout: float = 60.0, max_bytes: int = DEFAULT_MAX_BYTES,
    headers: Mapping[str, str] | None = None, params: Mapping[str, str] | None = None,
    json_body: Any = None, data: Mapping[str, str] | None = None,
    files: Mapping[str, tuple[str, bytes, str]] | None = None, follow_redirects: bool = False,
) -> VendorResponse:
    """One logical request (see the module docstring); raises VendorError when no answer came back.

    Redirects are followed only when ``follow_redirects`` is set, which :func:`download` does for
    credential-free requests; a request carrying ``auth`` never follows one to another host.
    """
    if auth is not None and follow_redirects:
        raise ValueError("a request with credentials must not follow redirects")
    if auth is not None and not allow(url):
        shown = origin_of(url)
        where = f"{shown[0]}://{shown[1]}:{shown[2]}" if shown else "a malformed URL"
        raise VendorError(vendor, f"{vendor} pointed to {where}, which is not where your credentials belong; "
                                  "the request was not sent", kind="refused_url")
    all_headers = dict(headers or {})
    if auth is not None:
        all_headers.update(auth.headers())
    try:
        answer = await send_request(http, method, url, max_bytes=max_bytes, retry=retry, timeout=timeout,
                                    headers=all_headers, params=params, json=json_body, data=data, files=files,
                                    follow_redirects=follow_redirects)
    except ResponseTooLarge:
        raise VendorError(vendor, f"{vendor} answered with more than {max_bytes} bytes", kind="too_large") from None
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise VendorError(vendor, f"cannot reach {vendor} ({type(exc).__name__})", kind="unreachable",
                          before_start=True) from None
    except httpx.TimeoutException:
        raise VendorError(vendor, f"{vendor} did not answer within {timeout:g} s", kind="timeout") from None
    except httpx.HTTPError as exc:
        raise VendorError(vendor, f"the connection to {vendor} failed ({type(exc).__name__})",
                          kind="unreachable") from None
    except UnicodeEncodeError:
        raise VendorError(vendor, f"the request to {vendor} holds text that is not valid Unicode (a lone surrogate)",
                          kind="failed") from None
    return VendorResponse(answer.status, answer.headers, answer.body, answer.attempts, answer.charset, vendor)


def decode_data_uri(uri: str, *, max_bytes: int) -> tuple[bytes, str]:
    """(bytes, media type) of a ``data:`` URI; ValueError when it is malformed or too large."""
    head, sep, payload = uri.partition(",")
    if not sep or not head.lower().startswith("data:"):
        raise ValueError("not a data: URI")
    meta = head[5:].split(";")
    media_type = meta[0].strip().lower() or "text/plain"
    if len(payload) > max_bytes * 4 // 3 + 8:
        raise ValueError(f"the data: URI holds more than {max_bytes} bytes")
    if any(part.strip().lower() == "base64" for part in meta[1:]):
        try:
            raw = base64.b64decode("".join(payload.split()), validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the data: URI is not valid base64") from None
    else:
        raw = unquote_to_bytes(payload)
    if len(raw) > max_bytes:
        raise ValueError(f"the data: URI holds more than {max_bytes} bytes")
    return raw, media_type


async def download(
    http: httpx.AsyncClient, url: str, *, vendor: str, max_bytes: int, timeout: float = 60.0,
    trusted_origin: str | None = None, allow_private: bool = False,
) -> tuple[bytes, str]:
    """(bytes, content type) of a result a vendor published at ``url`` — sent WITHOUT credentials.

    ``data:`` URIs (some vendors inline small results) are decoded instead of fetched. Other URLs go
    through the SSRF-safe fetcher (:func:`hermes.net.safefetch.safe_fetch`): http(s) only, every hop
    (redirects included) to public addresses only — a result URL naming 127.0.0.1, a private network or
    a cloud metadata address is refused. ``trusted_origin`` is the vendor endpoint the caller was
    configured with (a vendor or gateway on this machine may serve its results from its own address);
    ``allow_private`` is the operator's ``security.allow_private_urls``.
    """
    if url.startswith("data:"):
        try:
            return decode_data_uri(url, max_bytes=max_bytes)
        except ValueError as exc:
            raise VendorError(vendor, f"{vendor} returned an unusable data: URI ({exc})", kind="bad_response") \
                from None
    if origin_of(url) is None:
        raise VendorError(vendor, f"{vendor} returned a result URL that is not http(s)", kind="bad_response")
    from hermes.errors import FetchError
    from hermes.net.address_policy import FetchPolicy, origin_key
    from hermes.net.safefetch import safe_fetch

    trusted = origin_key(trusted_origin) if trusted_origin else None
    policy = FetchPolicy(allow_loopback=allow_private, allow_private=allow_private, timeout=timeout,
                         max_bytes=max_bytes, user_agent="hermes-agent (results)", content_types=(),
                         trusted_origins=(trusted,) if trusted else ())
    try:
        page = await safe_fetch(http, url, policy)
    except FetchError as exc:  # a refused address, too large, too slow, failed
        kind: ErrorKind = "refused_url" if exc.status == 403 else "bad_response"
        raise VendorError(vendor, f"the result at {url[:200]} was not downloaded: {exc}", kind=kind) from None
    if page.status >= 400:
        raise VendorError(vendor, f"the result at {url[:200]} answered HTTP {page.status}", kind="bad_response")
    return page.body, page.content_type


class JsonApiClient:
    """Where a vendor client calls, with which credential, and its limits; subclasses add the endpoints.

    ``origin`` is the vendor's API (BYOK) or a gateway relay; ``allow_url`` decides which URLs may receive
    the credential (default: the origin only). Subclasses set ``vendor`` and their defaults;
    ``strip_v1`` drops a trailing ``/v1`` from the origin (OpenAI-style base URLs, see :func:`api_root`).
    :meth:`_send` answers any body (audio bytes, plain text); :meth:`_json` wants a JSON object.
    """

    vendor: ClassVar[str] = "vendor"
    default_retry: ClassVar[RetryPolicy] = RetryPolicy()
    default_timeout: ClassVar[float] = 60.0
    default_max_bytes: ClassVar[int] = 16 * 1024 * 1024
    strip_v1: ClassVar[bool] = False

    def __init__(
        self, http: httpx.AsyncClient, origin: str, auth: Auth | None = None, *, allow_url: UrlGuard | None = None,
        retry: RetryPolicy | None = None, timeout: float | None = None, max_bytes: int | None = None,
    ) -> None:
        self.http = http
        self.origin = api_root(origin) if self.strip_v1 else origin.rstrip("/")
        self.auth = auth
        self.allow_url = allow_url or same_origin(self.origin)
        self.retry = retry or self.default_retry
        self.timeout = self.default_timeout if timeout is None else timeout
        self.max_bytes = self.default_max_bytes if max_bytes is None else max_bytes

    def _url(self, path: str) -> str:
        """``origin + path``."""
        return join(self.origin, path)

    async def _send(
        self, method: str, url: str, *, accept: str | None = "application/json",
        headers: Mapping[str, str] | None = None, params: Mapping[str, str] | None = None, json_body: Any = None,
        data: Mapping[str, str] | None = None, files: Mapping[str, tuple[str, bytes, str]] | None = None,
        retry: RetryPolicy | None = None, timeout: float | None = None, max_bytes: int | None = None,
    ) -> VendorResponse:
        """One request to ``url`` with this client's credential, guard and limits (each may be overridden).

        ``accept`` is sent as ``Accept`` (None: no such header); the answer is returned whatever its status.
        """
        all_headers = {"accept": accept} if accept is not None else {}
        all_headers.update(headers or {})
        return await send(self.http, method, url, vendor=self.vendor, auth=self.auth, allow=self.allow_url,
                          retry=self.retry if retry is None else retry,
                          timeout=self.timeout if timeout is None else timeout,
                          max_bytes=self.max_bytes if max_bytes is None else max_bytes,
                          headers=all_headers, params=params, json_body=json_body, data=data, files=files)

    async def _json(
        self, method: str, url: str, *, headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None, json_body: Any = None, data: Mapping[str, str] | None = None,
        files: Mapping[str, tuple[str, bytes, str]] | None = None,
    ) -> dict[str, Any]:
        """The JSON object a 2xx answer to ``url`` holds (VendorError otherwise)."""
        response = await self._send(method, url, headers=headers, params=params, json_body=json_body, data=data,
                                    files=files)
        return response.raise_for_status().json_object()

    async def _post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST a JSON body to ``origin + path``; the JSON object answered (VendorError otherwise)."""
        return await self._json("POST", self._url(path), json_body=body)
