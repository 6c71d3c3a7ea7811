"""Whether an address, a browser ``Origin`` or an HTTP ``Host`` header is this machine only.

The keyless servers on a loopback bind (``hermes serve``, the gateway's API server) let in what comes
from this machine; a web page the person visits can still send requests there (a no-cors POST, or a
page on a name that was rebound to 127.0.0.1). Such a request carries a non-loopback ``Origin`` or
``Host``, which these checks refuse.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name, IPv6 with or without brackets) is this machine only."""
    name = host.strip().strip("[]").lower()
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def origin_is_local(origin: str | None) -> bool:
    """No ``Origin`` header (not a browser) or a loopback one; ``null`` (a sandboxed page, a file) is not."""
    if not origin or origin == "null":
        return origin is None
    try:
        return is_loopback(urlsplit(origin).hostname or "")
    except ValueError:
        return False


def host_header_is_local(host: str | None) -> bool:
    """A ``Host`` header naming a loopback address or name, with any port (``127.0.0.1:8642``,
    ``localhost``, ``[::1]:80``). A missing header (HTTP/1.0) counts as local: only a browser on a
    rebound name sends a foreign one."""
    if host is None:
        return True
    value = host.strip()
    if value.startswith("["):
        name = value[1:value.find("]")] if "]" in value else ""
    else:
        name = value.rsplit(":", 1)[0] if value.count(":") == 1 else value
    return bool(name) and is_loopback(name)
