"""Fetching a URL on behalf of a model or a user without letting it reach the local network (SSRF).

Used by the web tools (pages fetched on this machine) and by the gateway server's local page extraction.

Every hop (the first URL and each redirect, at most ``max_redirects``) is checked the same way:

1. only ``http``/``https``, no user info, a host name or IP literal;
2. the host is resolved and **every** address must be public: loopback, private (RFC 1918, ULA, CGNAT),
   link-local, multicast, reserved, unspecified and cloud metadata addresses (``169.254.169.254``,
   ``fd00:ec2::254``, ``100.100.100.200``) are refused; IPv4-mapped and NAT64 IPv6 addresses are judged
   by the IPv4 address inside. ``allow_loopback`` (tests, a page server on the same host) and
   ``allow_private`` (an intranet gateway) are operator choices; metadata and link-local stay refused.
   ``trusted_origins`` names origins (``scheme://host:port``) the operator configured — a vendor's own
   endpoint — whose addresses are allowed as if both were set; a redirect elsewhere is judged as usual;
3. the connection goes to the **vetted IP itself** (the URL's host is sent as ``Host`` and as TLS SNI,
   and the certificate is checked against it), so a second DNS answer cannot swap in another address
   (DNS rebinding); the peer address of the connection is checked again after connecting;
4. one overall time limit, a size cap on the decoded body (a gzip bomb stops at the cap), and only
   text/HTML content types. ``Connection: close`` keeps a pooled connection of one host from serving
   another host that shares its IP.

Each hop is one :func:`hermes.net.http.send_request` (no retries) whose ``inspect`` hook checks the peer
address and the content type before any of the body is read.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import time
from dataclasses import dataclass, replace
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx

from hermes.errors import DeadlineExceeded, FetchError, ResponseTooLarge
from hermes.net.address_policy import (
    TEXT_TYPES,
    FetchPolicy,
    IPAddress,
    check_url,
    refused_error,
    resolve_allowed,
)
from hermes.net.http import send_request

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


@dataclass(frozen=True)
class FetchedPage:
    """A fetched document: the final URL (after redirects), status, content type and decoded text."""

    url: str
    status: int
    content_type: str
    text: str
    #: the raw body (for images and other binary types ``text`` is empty)
    body: bytes = b""


def _pinned_url(url: str, ip: IPAddress, port: int) -> str:
    parts = urlsplit(url)
    literal = f"[{ip}]" if isinstance(ip, ipaddress.IPv6Address) else str(ip)
    return urlunsplit((parts.scheme, f"{literal}:{port}", parts.path or "/", parts.query, ""))


def _host_header(host: str, scheme: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if port == (443 if scheme == "https" else 80) else f"{shown}:{port}"


def _decode(raw: bytes, charset: str | None) -> str:
    if not charset:
        match = _META_CHARSET.search(raw[:4096])
        charset = match.group(1).decode("ascii") if match else "utf-8"
    try:
        return raw.decode(charset, errors="replace")
    except LookupError:
        return raw.decode("utf-8", errors="replace")


def _peer_ok(response: httpx.Response, ip: IPAddress) -> bool:
    stream = response.extensions.get("network_stream")
    if stream is None:
        return True
    addr = stream.get_extra_info("server_addr")
    if not addr:
        return True
    try:
        return ipaddress.ip_address(str(addr[0]).split("%", 1)[0]) == ip
    except ValueError:
        return False


async def _hop(client: httpx.AsyncClient, url: str, policy: FetchPolicy, deadline: float) -> FetchedPage | str:
    """One request: the page, or the absolute URL of a redirect to follow."""
    scheme, host, port = check_url(url)
    if f"{scheme}://{host}:{port}" in policy.trusted_origins:
        policy = replace(policy, allow_loopback=True, allow_private=True)
    ip = await resolve_allowed(host, port, policy)
    headers = {"host": _host_header(host, scheme, port), "user-agent": policy.user_agent, "connection": "close",
               "accept": "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,*/*;q=0.1"}
    extensions = {"sni_hostname": host} if scheme == "https" and host != str(ip) else {}

    def check(response: httpx.Response) -> bool:
        """Refuse an unchecked peer or a content type not accepted; False (body unread) for a redirect."""
        if not _peer_ok(response, ip):
            raise refused_error("the connection ended up at an address that was not checked")
        if _redirect_target(response.status_code, response.headers) is not None:
            return False
        ctype = _content_type(response.headers)
        if policy.content_types and ctype not in policy.content_types:
            raise FetchError(415, "unsupported_content",
                             f"the URL serves {ctype}; accepted here: {', '.join(policy.content_types)}")
        return True

    try:
        answer = await send_request(client, "GET", _pinned_url(url, ip, port), max_bytes=policy.max_bytes,
                                    deadline=deadline, headers=headers, extensions=extensions,
                                    follow_redirects=False, inspect=check)
    except ResponseTooLarge:
        raise FetchError(413, "page_too_large",
                         f"the response is larger than the limit of {policy.max_bytes} bytes") from None
    location = _redirect_target(answer.status, answer.headers)
    if location is not None:
        try:
            return urljoin(url, location)
        except ValueError:
            raise FetchError(502, "bad_redirect", "the page redirected to a malformed address") from None
    ctype = _content_type(answer.headers)
    text = _decode(answer.body, answer.charset) if ctype in TEXT_TYPES else ""
    return FetchedPage(url, answer.status, ctype, text, answer.body)


def _redirect_target(status: int, headers: httpx.Headers) -> str | None:
    location: str | None = headers.get("location")
    return location if status in _REDIRECTS and location else None


def _content_type(headers: httpx.Headers) -> str:
    value: str = headers.get("content-type", "text/html")
    return value.split(";")[0].strip().lower()


async def safe_fetch(client: httpx.AsyncClient, url: str, policy: FetchPolicy) -> FetchedPage:
    """GET ``url`` under ``policy``, following redirects hop by hop; raises :class:`FetchError`."""
    deadline = time.monotonic() + policy.timeout
    current = url
    try:
        async with asyncio.timeout(policy.timeout):
            for _ in range(policy.max_redirects + 1):
                result = await _hop(client, current, policy, deadline)
                if isinstance(result, FetchedPage):
                    return result
                current = result
    except (TimeoutError, DeadlineExceeded, httpx.TimeoutException):
        raise FetchError(504, "fetch_timeout", f"the page did not load within {policy.timeout:g} s") from None
    except httpx.RemoteProtocolError as exc:
        if "location header" in str(exc).lower():  # httpx refuses to parse a malformed redirect target
            raise FetchError(502, "bad_redirect", "the page redirected to a malformed address") from None
        raise FetchError(502, "fetch_failed", f"the page could not be fetched ({type(exc).__name__})") from None
    except httpx.HTTPError as exc:
        raise FetchError(502, "fetch_failed", f"the page could not be fetched ({type(exc).__name__})") from None
    raise FetchError(502, "too_many_redirects", f"more than {policy.max_redirects} redirects")
