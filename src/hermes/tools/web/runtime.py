"""What the web tools read at execution time: settings, the route of each function, credentials, limits.

Every call builds a fresh :class:`WebContext` (the session's settings, or the files under
``HERMES_HOME``) and asks :meth:`WebContext.route` for the route of ``web.search`` or ``web.extract`` —
the routing function decides each time; nothing is cached across calls (GW-3: the saved selection
wins, a new key in ``.env`` never changes a saved route). :meth:`WebContext.access` then says where to
call and with which credential:

* **gateway** — the entitlement is checked (GW-10 message on failure), the origin is the route's
  (``FIRECRAWL_GATEWAY_URL`` or ``firecrawl-gateway.<domain>``) and the portal token is attached only
  when :func:`~hermes.routing.token_allowed_for` accepts the URL;
* **byok** — the vendor's API (``SEARXNG_URL``/``FIRECRAWL_API_URL`` for self-hosted ones, or
  ``web.<vendor>.base_url`` from config.yaml for a proxy) with the user's key, which may only go back to
  that same origin. URL-only backends (SearXNG, a key-less self-hosted Firecrawl)
  send no credential.

Routing's :class:`~hermes.errors.SelectionError` and entitlement's :class:`~hermes.errors.GatewayError`
pass through untouched, so the model (and the person) sees their exact wording.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes.errors import ConfigError, SelectionError, ToolError
from hermes.tools.context import session_of

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.net.safefetch import FetchPolicy
    from hermes.routing import Credentials, Route
    from hermes.vendors.base import Auth, UrlGuard, VendorError

DEFAULT_FETCH_TIMEOUT = 20.0
DEFAULT_FETCH_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_EXTRACT_MAX_CHARS = 30_000
#: a page never gets less than this, however many URLs share the budget
MIN_PAGE_CHARS = 2_000
USER_AGENT = "hermes-agent (+web tools)"
_TRUE_WORDS = frozenset({"true", "yes", "on", "1"})
_FALSE_WORDS = frozenset({"false", "no", "off", "0"})


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
        from hermes.net.safefetch import TEXT_TYPES, FetchPolicy

        return FetchPolicy(allow_loopback=self.allow_loopback, allow_private=self.allow_private,
                           timeout=self.fetch_timeout, max_bytes=self.fetch_max_bytes, user_agent=USER_AGENT,
                           content_types=(*TEXT_TYPES, "application/pdf"))

    def page_budget(self, pages: int) -> int:
        """Characters each of ``pages`` pages may keep: the budget shared evenly, at least MIN_PAGE_CHARS."""
        return max(MIN_PAGE_CHARS, self.extract_max_chars // max(1, pages))


@dataclass(frozen=True)
class Access:
    """Where a remote route calls and with which credential (kept out of ``repr``)."""

    route: Route
    origin: str
    auth: Auth | None = field(repr=False)
    allow_url: UrlGuard = field(repr=False)

    @property
    def gateway(self) -> bool:
        return self.route.kind == "gateway"

    @property
    def via(self) -> str:
        """Human words for the route, for results and errors."""
        if self.gateway:
            return f"the Nous Tool Gateway ({self.route.gateway_label} relay)"
        if self.route.credential_env:
            return f"{self.route.vendor} ({self.route.credential_env})"
        return str(self.route.vendor)


class WebContext:
    """The settings, environment and portal credentials one web tool call works with."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._env: dict[str, str] | None = None
        self._credentials: Credentials | None = None

    @classmethod
    def from_kw(cls, kw: Mapping[str, Any]) -> WebContext:
        """The calling session's settings, or the files under HERMES_HOME when there is no session."""
        session = session_of(dict(kw))
        if session is not None and session.settings is not None:
            return cls(session.settings)
        from hermes.config.settings import Settings

        return cls(Settings.load())

    # -- reading ---------------------------------------------------------------------------------------
    @property
    def config(self) -> Mapping[str, Any]:
        data = self.settings.config.data
        return data if isinstance(data, Mapping) else {}

    @property
    def env(self) -> dict[str, str]:
        """Process environment over ``.env`` (what routing reads)."""
        if self._env is None:
            self._env = self.settings.env.as_dict()
        return self._env

    def get(self, key: str) -> Any:
        """A dotted config key, or None when absent (or when a parent is not a mapping)."""
        node: Any = self.config
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return None
            node = node[part]
        return node

    def _bool(self, key: str, default: bool) -> bool:
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        word = value.strip().lower() if isinstance(value, str) else None
        if word in _TRUE_WORDS or word in _FALSE_WORDS:
            return word in _TRUE_WORDS
        raise ConfigError(f"{key} in config.yaml must be true or false")

    def _number(self, key: str, default: float, low: float, high: float) -> float:
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= float(value) <= high:
            raise ConfigError(f"{key} in config.yaml must be a number from {low:g} to {high:g}")
        return float(value)

    def limits(self) -> WebLimits:
        """The ``web.*`` limits; a ConfigError naming the key when one is malformed."""
        backend = self.get("web.duckduckgo.backend")
        if backend is not None and (not isinstance(backend, str) or not backend.strip()):
            raise ConfigError("web.duckduckgo.backend in config.yaml must be a ddgs backend name such as "
                              "duckduckgo or auto")
        return WebLimits(
            allow_loopback=self._bool("web.allow_loopback", False),
            allow_private=self._bool("web.allow_private", False),
            fetch_timeout=self._number("web.fetch_timeout", DEFAULT_FETCH_TIMEOUT, 1, 300),
            fetch_max_bytes=int(self._number("web.fetch_max_bytes", DEFAULT_FETCH_MAX_BYTES, 65_536, 200 * 2**20)),
            extract_max_chars=int(self._number("web.extract_max_chars", DEFAULT_EXTRACT_MAX_CHARS, 1_000, 1_000_000)),
            ddgs_backend=backend.strip() if isinstance(backend, str) else "duckduckgo",
        )

    def credentials(self) -> Credentials:
        """The portal credentials (auth.json and TOOL_GATEWAY_USER_TOKEN), read once per call; a portal login
        about to expire is refreshed first (rotated tokens are stored), so gateway calls carry a live token."""
        if self._credentials is None:
            from hermes.routing.portal_auth import fresh_credentials

            self._credentials = fresh_credentials(self.settings.paths.auth, self.env)
        return self._credentials

    # -- routes ------------------------------------------------------------------------------------------
    def route(self, function: str) -> Route:
        """The route of ``web.<function>`` now; SelectionError (GW-3 wording) when it cannot run."""
        from hermes.routing import resolve_route

        return resolve_route(f"web.{function}", self.config, self.env, self.credentials()).require()

    def access(self, route: Route) -> Access:
        """Origin, credential and URL guard of a gateway or byok route (see the module docstring)."""
        from hermes.routing import gateway_token, token_allowed_for
        from hermes.vendors.base import Auth, same_origin

        env = self.env
        if route.kind == "gateway":
            origin, token = gateway_token(route, self.credentials(), env)
            return Access(route, origin, Auth.bearer(token), lambda url: token_allowed_for(url, env))
        if route.kind != "byok":
            raise ToolError(f"{route.name} is routed to {route.vendor}, which has no remote API")
        origin = self.byok_origin(route)
        name = route.credential_env
        if name is not None and name.endswith("_URL"):
            return Access(route, origin, None, same_origin(origin))
        secret = env.get(name, "").strip() if name else ""
        if not name or not secret:
            raise SelectionError(f"{route.name} is configured to use {route.vendor} (set via hermes tools), but its "
                                 "key is not set. Run 'hermes tools' to change it.")
        return Access(route, origin, vendor_auth(str(route.vendor), secret), same_origin(origin))

    def byok_origin(self, route: Route) -> str:
        """``web.<vendor>.base_url`` from config.yaml when set (proxies, compatible servers), else the route's."""
        from hermes.routing.endpoints import parse_origin

        key = f"web.{route.vendor}.base_url"
        custom = self.get(key)
        if custom is not None:
            if not isinstance(custom, str) or parse_origin(custom.strip()) is None:
                raise ConfigError(f"{key} in config.yaml must be a plain http(s) URL (no user info, spaces or "
                                  "backslashes)")
            return custom.strip().rstrip("/")
        if not route.origin:
            raise ConfigError(f"{route.name} has no API address for {route.vendor}; set {key} in config.yaml")
        return route.origin


def vendor_auth(vendor: str, secret: str) -> Auth:
    """The credential header each web vendor reads."""
    from hermes.vendors.base import Auth

    if vendor == "exa":
        return Auth.api_key_header("x-api-key", secret)
    if vendor == "brave":
        return Auth.api_key_header("x-subscription-token", secret)
    return Auth.bearer(secret)


def vendor_failure(exc: VendorError, access: Access, what: str) -> ToolError:
    """A ToolError for a vendor failure: the route used, the vendor's message and what to check."""
    route = access.route
    message = f"{what} failed via {access.via}: {exc}"
    if access.gateway:
        if exc.status in (401, 403):
            message += (". The gateway refused your portal token: run 'hermes portal login', or run 'hermes tools' "
                        f"to switch {route.name} to your own key.")
        elif exc.status == 402:
            message += (". Your Nous subscription does not cover this call (it may have expired): renew it in the "
                        f"portal, or run 'hermes tools' to switch {route.name} to your own key.")
    elif exc.status in (401, 403) and route.credential_env and not route.credential_env.endswith("_URL"):
        message += f". Check {route.credential_env} in ~/.hermes/.env (run 'hermes tools' to change the backend)."
    return ToolError(message)


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
