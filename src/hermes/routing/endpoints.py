"""Where gateway calls go, and where the user's gateway token may be sent (requirement GW-14).

Every managed relay has a *label* (``firecrawl``, ``fal-queue``, ``krea``, ``openai-audio``,
``browser-use``, ``modal``), plus two special ones: ``tool`` — the shared managed origin that hosts the
vendors the gateway runs itself and media uploads — and ``connector`` — the connector API
(``/v1/connectors/*``), a deployment of its own. The origin of a label is, first match wins:

1. ``{LABEL}_GATEWAY_URL`` (label upper-cased, ``-`` → ``_``), used exactly as given. For the two
   special labels these are ``TOOL_GATEWAY_URL`` and ``CONNECTOR_GATEWAY_URL``;
2. for a vendor hosted on the shared origin: ``TOOL_GATEWAY_URL``;
3. when ``TOOL_GATEWAY_DOMAIN`` is not set: the origin the portal login advertised for the label
   (``advertised``, stored beside the token by a login to a self-hosted gateway: :mod:`.advertised`);
4. ``{TOOL_GATEWAY_SCHEME}://{label}-gateway.{TOOL_GATEWAY_DOMAIN}`` (shared-hosted vendors:
   ``tool-gateway``), scheme ``https`` and domain ``nousresearch.com`` unless set. A scheme other
   than ``http``/``https`` is a :class:`~hermes.errors.ConfigError`.

:func:`token_allowed_for` is the guard every HTTP client in front of the gateway must ask before it
attaches the user's token (redirects and absolute URLs returned by a relay included): only the origins
above and loopback qualify, never a host that some other variable or a response happens to name.

Pure functions of an environment mapping; nothing here reads files or the process environment.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from hermes.errors import ConfigError

#: The managed deployment's domain: ``{label}-gateway.nousresearch.com``.
MANAGED_DOMAIN = "nousresearch.com"
DEFAULT_SCHEME = "https"

#: The shared managed origin (``tool-gateway.<domain>``, pinned by ``TOOL_GATEWAY_URL``).
SHARED_LABEL = "tool"
#: The connector API origin (``connector-gateway.<domain>``, pinned by ``CONNECTOR_GATEWAY_URL``).
CONNECTOR_LABEL = "connector"

#: Relay labels of the vendors the gateway fronts (the upstream client's names).
VENDOR_LABELS: tuple[str, ...] = ("firecrawl", "fal-queue", "krea", "openai-audio", "browser-use", "modal")
#: Every label whose pin variable is trusted with the token.
KNOWN_LABELS: tuple[str, ...] = (*VENDOR_LABELS, SHARED_LABEL, CONNECTOR_LABEL)
#: Labels served by the shared origin rather than a relay host of their own.
SHARED_HOSTED_LABELS: frozenset[str] = frozenset({SHARED_LABEL})

_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")
_HOST = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$")
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f\\]")
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Origin:
    """A parsed origin: scheme, lower-case host without trailing dot, and an explicit port."""

    scheme: str
    host: str
    port: int

    def matches(self, other: Origin) -> bool:
        """Same scheme, host and port."""
        return self == other


def pin_env_name(label: str) -> str:
    """The variable that pins ``label``'s origin: ``fal-queue`` → ``FAL_QUEUE_GATEWAY_URL``."""
    return f"{label.upper().replace('-', '_')}_GATEWAY_URL"


def _value(env: Mapping[str, str], name: str) -> str | None:
    raw = env.get(name)
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    return text or None


def gateway_scheme(env: Mapping[str, str]) -> str:
    """``TOOL_GATEWAY_SCHEME`` lower-cased (default ``https``); anything but http/https is a ConfigError."""
    raw = _value(env, "TOOL_GATEWAY_SCHEME")
    if raw is None:
        return DEFAULT_SCHEME
    scheme = raw.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ConfigError(f"TOOL_GATEWAY_SCHEME must be http or https, not {raw!r}")
    return scheme


def gateway_domain(env: Mapping[str, str]) -> tuple[str, int | None]:
    """``TOOL_GATEWAY_DOMAIN`` as (host, port or None); default ``nousresearch.com``.

    The host is lower-cased and loses a trailing dot. Anything that is not ``host`` or ``host:port``
    (a scheme, a path, user info, spaces) is a ConfigError: the value is glued into every gateway URL.
    """
    raw = _value(env, "TOOL_GATEWAY_DOMAIN")
    if raw is None:
        return MANAGED_DOMAIN, None
    host, sep, port_text = raw.lower().rpartition(":") if ":" in raw else (raw.lower(), "", "")
    host = host.rstrip(".").lstrip(".")
    port: int | None = None
    if sep:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ConfigError("TOOL_GATEWAY_DOMAIN has an invalid port")
        port = int(port_text)
    if not _HOST.match(host):
        raise ConfigError("TOOL_GATEWAY_DOMAIN must be a bare domain such as gateway.example.com (optionally :port)")
    return host, port


def parse_origin(url: str) -> Origin | None:
    """Parse an absolute http(s) URL into its :class:`Origin`; None when it is not a plain one.

    Refused (None): other schemes, user info (``user@host``), control characters, spaces or backslashes
    anywhere, an empty or malformed host, a bad port.
    """
    if not isinstance(url, str) or _BAD_CHARS.search(url):
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or "@" in parts.netloc:
        return None
    host = (parts.hostname or "").rstrip(".")
    if not host:
        return None
    if ":" in host:  # IPv6 literal
        try:
            host = str(ipaddress.IPv6Address(host))
        except ValueError:
            return None
    elif not _HOST.match(host):
        return None
    return Origin(scheme, host, port if port is not None else _DEFAULT_PORTS[scheme])


def _pinned(env: Mapping[str, str], name: str) -> str | None:
    raw = _value(env, name)
    if raw is None:
        return None
    if parse_origin(raw) is None:
        # The value is not echoed: a URL with user info may carry a password.
        raise ConfigError(
            f"{name} must be a plain http(s) URL such as https://gateway.example.com "
            "(no user info, spaces or backslashes)"
        )
    parts = urlsplit(raw)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path}".rstrip("/")


def _check_label(label: str) -> None:
    if not _LABEL.match(label):
        raise ValueError(f"not a gateway label: {label!r}")


def gateway_origin(label: str, env: Mapping[str, str], advertised: Mapping[str, str] | None = None) -> str:
    """The base URL the client calls for ``label`` (no trailing slash; vendor paths go right after it);
    ``advertised``: the origins the portal login advertised, by label.

    Raises ConfigError for a malformed override (scheme, domain or pinned URL) and ValueError for a
    label that cannot be a host name part.
    """
    _check_label(label)
    pinned = _pinned(env, pin_env_name(label))
    if pinned is not None:
        return pinned
    shared = label in SHARED_HOSTED_LABELS
    if shared:
        pinned = _pinned(env, pin_env_name(SHARED_LABEL))
        if pinned is not None:
            return pinned
    if advertised and label in advertised and _value(env, "TOOL_GATEWAY_DOMAIN") is None:
        return advertised[label]
    scheme = gateway_scheme(env)
    host, port = gateway_domain(env)
    sub = SHARED_LABEL if shared else label
    return f"{scheme}://{sub}-gateway.{host}" + (f":{port}" if port is not None else "")


def shared_origin(env: Mapping[str, str], advertised: Mapping[str, str] | None = None) -> str:
    """The shared managed origin (``TOOL_GATEWAY_URL``, the advertised one, or ``tool-gateway.<domain>``)."""
    return gateway_origin(SHARED_LABEL, env, advertised)


def connector_origin(env: Mapping[str, str], advertised: Mapping[str, str] | None = None) -> str:
    """The connector API origin (``CONNECTOR_GATEWAY_URL``, the advertised one, or ``connector-gateway.<domain>``)."""
    return gateway_origin(CONNECTOR_LABEL, env, advertised)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def trusted_origins(env: Mapping[str, str], extra_labels: Iterable[str] = (),
                    advertised: Mapping[str, str] | None = None) -> frozenset[Origin]:
    """The exact origins the token may go to besides loopback and the derived ``*-gateway`` hosts.

    That is the origin of every known label (pinned or derived). A malformed override is skipped here
    (fail closed): :func:`gateway_origin` reports it where the route is built.
    """
    found: set[Origin] = set()
    for label in (*KNOWN_LABELS, *extra_labels):
        try:
            origin = parse_origin(gateway_origin(label, env, advertised))
        except (ConfigError, ValueError):
            origin = None
        if origin is not None:
            found.add(origin)
    return frozenset(found)


def token_allowed_for(url: str, env: Mapping[str, str], *, extra_labels: Iterable[str] = (),
                      advertised: Mapping[str, str] | None = None) -> bool:
    """Whether the user's gateway token may be attached to a request for ``url``.

    True only for:

    * loopback (``localhost``, ``127.0.0.0/8``, ``::1``) over http or https, any port;
    * the origin of a known label: its ``{LABEL}_GATEWAY_URL`` pin, ``TOOL_GATEWAY_URL``,
      ``CONNECTOR_GATEWAY_URL``, the one the portal login advertised (``advertised``, when it is the
      label's origin), or the derived ``{label}-gateway.<domain>`` host;
    * any other ``<one-label>-gateway.<TOOL_GATEWAY_DOMAIN>`` host with the configured scheme and port.

    Scheme, host and port must match exactly (no downgrade to http, no other port). URLs with user
    info, control characters, backslashes or a malformed host are refused, as are variables named
    ``*_GATEWAY_URL`` that do not belong to a known label (``PAYMENT_GATEWAY_URL`` is someone else's).
    Never raises.
    """
    target = parse_origin(url)
    if target is None:
        return False
    if _is_loopback(target.host):
        return True
    if target in trusted_origins(env, extra_labels, advertised):
        return True
    try:
        scheme = gateway_scheme(env)
        domain, port = gateway_domain(env)
    except ConfigError:
        return False
    if target.scheme != scheme or target.port != (port if port is not None else _DEFAULT_PORTS[scheme]):
        return False
    suffix = "-gateway." + domain
    if not target.host.endswith(suffix):
        return False
    return bool(_LABEL.match(target.host[: -len(suffix)]))
