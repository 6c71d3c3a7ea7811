"""Which addresses an outbound request may reach, judged without an HTTP client.

:class:`FetchPolicy` says what a fetch may reach; :func:`ip_allowed` judges one address (metadata and
link-local never, loopback and private ranges only when the policy allows, an IPv6 address by every
IPv4 address it carries); :func:`resolve_allowed` resolves a name and requires every address to be
allowed. :mod:`hermes.net.safefetch` fetches with them; the browser's guard and the command fence judge
with them without importing httpx (tool discovery stays light).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from hermes.errors import FetchError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_METADATA = frozenset(ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200"))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "application/xml", "text/xml")

@dataclass(frozen=True)
class FetchPolicy:
    """What a fetch may reach and how much it may take."""

    allow_loopback: bool = False
    allow_private: bool = False
    timeout: float = 20.0
    max_bytes: int = 5 * 1024 * 1024
    max_redirects: int = 5
    user_agent: str = "hermes/1 (+page extraction)"
    #: content types accepted (lower case, without parameters); empty: any (the caller checks the body)
    content_types: tuple[str, ...] = TEXT_TYPES
    #: origins (``scheme://host:port``) whose addresses are allowed whatever they are (metadata excepted)
    trusted_origins: tuple[str, ...] = ()


def refused_error(message: str) -> FetchError:
    return FetchError(403, "url_not_allowed", message)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries and reaches: IPv4-mapped, NAT64 (64:ff9b::/96), 6to4
    (2002::/16) and Teredo (2001::/32: its server and its client)."""
    found: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip in _NAT64:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    return found


def ip_allowed(ip: IPAddress, policy: FetchPolicy) -> bool:
    """Whether a fetch may connect to ``ip`` under ``policy``; an IPv6 address that embeds IPv4 addresses
    is judged by every one of them."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        if inner:
            return all(ip_allowed(v4, policy) for v4 in inner)
    if ip in _METADATA or ip.is_link_local or ip.is_multicast or ip.is_unspecified:
        return False
    if ip.is_loopback:
        return policy.allow_loopback
    if ip.is_reserved:
        return False
    if ip.is_private or not ip.is_global:
        return policy.allow_private
    return True


def origin_key(url: str) -> str | None:
    """``scheme://host:port`` of an http(s) URL (the form of :attr:`FetchPolicy.trusted_origins`), or None."""
    try:
        scheme, host, port = check_url(url)
    except FetchError:
        return None
    return f"{scheme}://{host}:{port}"


def check_url(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a fetchable URL, or a 400/403 error."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise FetchError(400, "invalid_url", "the URL is not valid") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise refused_error("only http and https URLs can be fetched")
    if "@" in parts.netloc:
        raise refused_error("URLs with user info are not fetched")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host or any(c.isspace() for c in url):
        raise FetchError(400, "invalid_url", "the URL has no valid host")
    return scheme, host, port or (443 if scheme == "https" else 80)


async def resolve_allowed(host: str, port: int, policy: FetchPolicy) -> IPAddress:
    """The address to connect to; every address the name resolves to must be allowed."""
    try:
        addresses: list[IPAddress] = [ipaddress.ip_address(host)]
    except ValueError:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            raise FetchError(502, "fetch_failed", f"cannot resolve {host}") from None
        addresses = []
        for info in infos:
            addr = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            if addr not in addresses:
                addresses.append(addr)
    if not addresses:
        raise FetchError(502, "fetch_failed", f"cannot resolve {host}")
    for addr in addresses:
        if not ip_allowed(addr, policy):
            raise refused_error(f"{host} resolves to an address that is not fetched from (private or local)")
    return addresses[0]
