"""What the web tools read at execution time: the ``web.*`` limits, vendor credentials and the HTTP client.

Every call builds a fresh :class:`WebContext` — the shared
:class:`~hermes.tools.routed.context.RoutedContext` (the session's settings, or the files under
``HERMES_HOME``) plus :meth:`WebContext.limits` — and asks it for the route of ``web.search`` or
``web.extract``; the routing function decides each time, and :meth:`~RoutedContext.access` says where
to call and with which credential (gateway: the portal token on the relay's origin; byok: the vendor's
API, ``SEARXNG_URL``/``FIRECRAWL_API_URL`` for self-hosted ones or ``web.<vendor>.base_url`` for a
proxy, with the user's key). :func:`vendor_auth` turns that secret into the header each vendor reads.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes.config.schema import SCHEMA
from hermes.errors import ConfigError
from hermes.tools.routed.context import Access, RoutedContext

if TYPE_CHECKING:
    from hermes.net.address_policy import FetchPolicy
    from hermes.vendors.base import Auth

DEFAULT_FETCH_TIMEOUT: float = SCHEMA.key("web.fetch_timeout").default
DEFAULT_FETCH_MAX_BYTES: int = SCHEMA.key("web.fetch_max_bytes").default
DEFAULT_EXTRACT_MAX_CHARS: int = SCHEMA.key("web.extract_max_chars").default
#: a page never gets less than this, however many URLs share the budget
MIN_PAGE_CHARS = 2_000
USER_AGENT = "hermes-agent (+web tools)"


@dataclass(frozen=True)
class WebLimits:
    """The ``web.*`` limits from config.yaml (see docs/tools/web.md)."""

    allow_loopback: bool = False
    allow_private: bool = False
    fetch_timeout: float = DEFAULT_FETCH_TIMEOUT
    fetch_max_bytes: int = DEFAULT_FETCH_MAX_BYTES
    extract_max_chars: int = DEFAULT_EXTRACT_MAX_CHARS
    ddgs_backend: str = "duckduckgo"

    def policy(self) -> FetchPolicy:
        """The SSRF policy of local fetches (HTML, text and PDF are accepted)."""
        from hermes.net.address_policy import TEXT_TYPES, FetchPolicy

        return FetchPolicy(allow_loopback=self.allow_loopback, allow_private=self.allow_private,
                           timeout=self.fetch_timeout, max_bytes=self.fetch_max_bytes, user_agent=USER_AGENT,
                           content_types=(*TEXT_TYPES, "application/pdf"))

    def page_budget(self, pages: int) -> int:
        """Characters each of ``pages`` pages may keep: the budget shared evenly, at least MIN_PAGE_CHARS."""
        return max(MIN_PAGE_CHARS, self.extract_max_chars // max(1, pages))


class WebContext(RoutedContext):
    """The routed-call context of one web tool call, with the ``web.*`` limits."""

    def limits(self) -> WebLimits:
        """The ``web.*`` limits; a ConfigError naming the key when one is malformed."""
        backend = self.get("web.duckduckgo.backend")
        if backend is not None and (not isinstance(backend, str) or not backend.strip()):
            raise ConfigError("web.duckduckgo.backend in config.yaml must be a ddgs backend name such as "
                              "duckduckgo or auto")
        return WebLimits(
            allow_loopback=SCHEMA.read(self, "web.allow_loopback"),
            allow_private=SCHEMA.read(self, "web.allow_private"),
            fetch_timeout=SCHEMA.read(self, "web.fetch_timeout"),
            fetch_max_bytes=SCHEMA.read(self, "web.fetch_max_bytes"),
            extract_max_chars=SCHEMA.read(self, "web.extract_max_chars"),
            ddgs_backend=backend.strip() if isinstance(backend, str) else "duckduckgo",
        )


def vendor_auth(access: Access) -> Auth | None:
    """The credential header of ``access``: the portal token as a bearer token on the gateway, no header
    for a backend that takes none, else the header each web vendor reads."""
    from hermes.vendors.base import Auth

    secret = access.secret
    if not secret:
        return None
    if access.gateway:
        return Auth.bearer(secret)
    vendor = access.route.vendor
    if vendor == "exa":
        return Auth.api_key_header("x-api-key", secret)
    if vendor == "brave":
        return Auth.api_key_header("x-subscription-token", secret)
    return Auth.bearer(secret)


def http_client(*, trust_env: bool = True, timeout: float = 60.0) -> Any:
    """A fresh ``httpx.AsyncClient`` for one tool call; redirects are never followed automatically.

    Local page fetches pass ``trust_env=False``: a proxy from the environment would connect somewhere
    other than the address :func:`~hermes.net.safefetch.safe_fetch` vetted. The TLS context (loading the
    CA bundle takes ~30 ms) is built once and shared; SSL contexts are safe to share between clients.
    """
    import httpx

    global _tls
    if _tls is None:
        _tls = httpx.create_ssl_context()
    return httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=trust_env, verify=_tls,
                             headers={"user-agent": USER_AGENT})


_tls: ssl.SSLContext | None = None
