"""Which addresses the browser may open (requirement T-BROWSER, navigation safety).

Three layers, each for what it sees:

1. :func:`url_refusal` — before a navigation and on every request the browser makes (Playwright route
   interception): only ``http``/``https`` (plus ``data:``, ``blob:`` and ``about:`` for what pages load
   themselves), no user info, no cloud-metadata host names or literals, and no URL that carries a secret
   (a value of a secret-named environment variable, or a common key shape, raw or percent-decoded);
2. :func:`address_refusal` — the host resolved, every address judged like the web fetcher does
   (:func:`hermes.net.address_policy.ip_allowed`): metadata and link-local never, loopback and private ranges
   only with ``browser.allow_private_urls``;
3. the network fence (:mod:`hermes.net.fence`) — the local Chromium's only way out, which judges every
   connection at the address it really connects to, so a redirect, a frame, a subresource, a WebSocket
   or a second DNS answer cannot reach what (2) refuses. A CDP endpoint's browser is not ours to proxy:
   there (1) and (2) run on its requests and on every main-frame navigation instead, and every response
   is judged at the address that browser really got it from (:func:`served_refusal`, CDP's
   ``remoteIPAddress``): a name only the remote browser resolves cannot bring a private page to the model.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit

from hermes.net.address_policy import FetchPolicy, IPAddress, ip_allowed
from hermes.redact import redact, secret_values

#: host names of cloud metadata services (their addresses are refused by ip_allowed as well)
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata", "instance-data",
                            "metadata.azure.internal"})
PAGE_SCHEMES = ("http", "https")
#: schemes a page may use for what it loads itself (never for browser_navigate)
INNER_SCHEMES = ("data", "blob", "about")


def policy_of(allow_private: bool) -> FetchPolicy:
    """The fence and address policy: loopback and private together, as ``browser.allow_private_urls``."""
    return FetchPolicy(allow_loopback=allow_private, allow_private=allow_private)


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def carries_secret(url: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether ``url`` (raw or percent-decoded) holds a known secret value or a common key shape."""
    secrets = secret_values(env)
    return any(redact(form, secrets) != form for form in {url, unquote(url), unquote(unquote(url))})


def url_refusal(url: str, *, allow_private: bool, navigation: bool = True,
                env: Mapping[str, str] | None = None) -> str | None:
    """Why ``url`` may not be opened (a sentence), or None. Offline: no name is resolved here."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        return f"{url[:200]!r} is not a valid URL"
    scheme = parts.scheme.lower()
    if scheme in INNER_SCHEMES and not navigation:
        return None
    if navigation and url == "about:blank":
        return None
    if scheme not in PAGE_SCHEMES:
        return f"only http and https pages can be opened, not {scheme or 'a URL without a scheme'}:"
    if "@" in parts.netloc:
        return "URLs with user info (user:password@host) are not opened"
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        return "the URL has no host"
    if host in METADATA_HOSTS:
        return f"{host} is a cloud metadata address, which the browser never opens"
    ip = _literal(host)
    if ip is not None and not ip_allowed(ip, policy_of(allow_private)):
        return _address_words(ip, allow_private)
    if carries_secret(url, env):
        return "the URL carries a secret (an API key or token); it is not opened"
    return None


def _address_words(ip: IPAddress, allow_private: bool) -> str:
    if not ip_allowed(ip, policy_of(True)):
        return f"{ip} is a cloud metadata, link-local or reserved address, which the browser never opens"
    return (f"{ip} is a private or loopback address, which the browser does not open "
            "(browser.allow_private_urls: true allows it)")


def served_refusal(url: str, remote_ip: str, *, allow_private: bool) -> str | None:
    """Why a response a remote browser (CDP endpoint, cloud) got from ``remote_ip`` may not be shown, or
    None: what a name resolved to *there* (a name only that browser resolves, a rebinding answer) is
    judged like any address. An empty or unreadable address (a cached or generated response) is None."""
    try:
        ip = ipaddress.ip_address(remote_ip.strip("[]").split("%")[0])
    except ValueError:
        return None
    if ip_allowed(ip, policy_of(allow_private)):
        return None
    host = (urlsplit(url).hostname or url[:100]).rstrip(".").lower()
    return f"{host} was served from {_address_words(ip, allow_private)}"


async def address_refusal(url: str, *, allow_private: bool) -> str | None:
    """Why the host of ``url`` may not be reached, judged on every address it resolves to; None when all
    are allowed (a name that does not resolve is left to the browser, which will fail on it)."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in PAGE_SCHEMES:
        return None
    host = (parts.hostname or "").rstrip(".").lower()
    ip = _literal(host)
    addresses: list[IPAddress]
    if ip is not None:
        addresses = [ip]
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, parts.port or 443, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            return None
        addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    policy = policy_of(allow_private)
    for address in addresses:
        if not ip_allowed(address, policy):
            words = _address_words(address, allow_private)
            return words if address == ip else f"{host} resolves to {words}"
    return None
