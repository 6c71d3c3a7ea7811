"""The context of one gateway-routed tool call: settings, its route, where it calls and with which secret.

Shared by every family whose calls the routing function places (``web_search``/``web_extract``,
``image_generate``, ``text_to_speech`` and speech to text, ``vision_analyze``/``video_analyze``,
``x_search``). A tool builds a :class:`RoutedContext` from its handler's ``**kw`` (the session's settings
and surface when there is a session, else the files under ``HERMES_HOME``), asks
:meth:`RoutedContext.route` for the route of its category or web function — the routing function
decides at every call, nothing is cached across calls (GW-3: the saved selection wins, a new key in
``.env`` never changes a saved route) — and :meth:`RoutedContext.access` for where to call and with which
secret:

* a **gateway** route: the entitlement is checked (GW-10, through :func:`~hermes.routing.gateway_token`),
  the origin comes from the route (a pinned ``{LABEL}_GATEWAY_URL`` or the derived host) and the secret
  is the portal token, which may only go to URLs that :func:`~hermes.routing.token_allowed_for` accepts;
* a **byok** route: the vendor's API (or ``<category>.<vendor>.base_url`` from config.yaml, for proxies
  and compatible servers) and the user's key, which may only go back to that same origin. A route whose
  "credential" is a URL variable (``SEARXNG_URL``, a key-less self-hosted ``FIRECRAWL_API_URL``) sends
  no secret.

Selection problems come out as routing's :class:`~hermes.errors.SelectionError` and entitlement's
:class:`~hermes.errors.GatewayError` with their own wording, untouched; vendor failures as a
:class:`~hermes.errors.ToolError` naming the route and what to check (:func:`vendor_failure`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from hermes.config.reader import ConfigReader
from hermes.errors import ConfigError, SelectionError, ToolError
from hermes.tools.context import session_of

if TYPE_CHECKING:
    import httpx

    from hermes.config.settings import Settings
    from hermes.routing import Credentials, Route
    from hermes.tools.toolsets import Surface
    from hermes.vendors.base import VendorError

UrlGuard = Callable[[str], bool]


@dataclass(frozen=True)
class Access:
    """Where a route's vendor client calls and with which secret (kept out of ``repr``).

    ``secret`` is the portal token (gateway), the user's key (byok), or ``""`` for a backend that takes
    no credential (its route's variable is a URL).
    """

    route: Route
    origin: str
    secret: str = field(repr=False)
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


class RoutedContext:
    """The settings, environment and portal credentials one routed tool call works with."""

    def __init__(self, settings: Settings, surface: Surface | None = None) -> None:
        self.settings = settings
        self.surface = surface
        self._env: dict[str, str] | None = None
        self._credentials: Credentials | None = None

    @classmethod
    def from_kw(cls, kw: Mapping[str, Any]) -> Self:
        """The calling session's settings and surface, or the files under HERMES_HOME without a session."""
        session = session_of(dict(kw))
        if session is not None and session.settings is not None:
            return cls(session.settings, session.surface)
        from hermes.config.settings import Settings

        return cls(Settings.load(), session.surface if session is not None else None)

    # -- reading ---------------------------------------------------------------------------------------
    @property
    def config(self) -> Mapping[str, Any]:
        data = self.settings.config.data
        return data if isinstance(data, Mapping) else {}

    @property
    def read(self) -> ConfigReader:
        """Typed reads of config.yaml keys (errors name the key)."""
        return ConfigReader(self.config)

    @property
    def env(self) -> dict[str, str]:
        """Process environment over ``.env``, then the keys stored with ``hermes auth add`` (what routing reads)."""
        if self._env is None:
            from hermes.errors import GatewayError
            from hermes.routing.stored_keys import with_stored

            env, auth = self.settings.env.as_dict(), self.settings.paths.auth
            try:  # fresh: a SuperGrok login about to expire is renewed before its token is sent
                self._env = with_stored(env, auth, fresh=True)
            except GatewayError as exc:
                import logging

                logging.getLogger(__name__).warning("%s", exc)
                self._env = with_stored(env, auth)
        return self._env

    @property
    def home(self) -> Path:
        return self.settings.paths.home

    def get(self, key: str, default: Any = None) -> Any:
        """A dotted config key (``image_gen.model``); ``default`` when absent or when a parent is not a mapping."""
        return self.read.value(key, default)

    def get_str(self, key: str, default: str | None = None) -> str | None:
        """A config string (stripped); a ConfigError naming the key when it has another type."""
        return self.read.text(key, default)

    def get_bool(self, key: str, default: bool) -> bool:
        """true/false or a yes/no word (:data:`hermes.config.reader.TRUE_WORDS`)."""
        return self.read.flag(key, default)

    def get_number(self, key: str, default: float, *, low: float, high: float) -> float:
        """An int or float from ``low`` to ``high``."""
        return self.read.number(key, default, minimum=low, maximum=high)

    def credentials(self) -> Credentials:
        """The portal credentials (auth.json and TOOL_GATEWAY_USER_TOKEN), read once per call; a portal login
        about to expire is refreshed first (rotated tokens are stored), so gateway calls carry a live token."""
        if self._credentials is None:
            from hermes.routing.portal_auth import fresh_credentials

            self._credentials = fresh_credentials(self.settings.paths.auth, self.env)
        return self._credentials

    # -- routes ------------------------------------------------------------------------------------------
    def route(self, name: str) -> Route:
        """The route of ``name`` (``web.search``, ``image_gen``, ``tts`` …); SelectionError (GW-3) when it
        cannot run."""
        from hermes.routing import resolve_route

        return resolve_route(name, self.config, self.env, self.credentials()).require()

    def gateway_route(self, route: Route, label: str, vendor: str) -> Route:
        """``route`` moved to another relay ``label`` of the gateway (the Krea → FAL fallback)."""
        from hermes.routing import gateway_origin

        try:
            origin = gateway_origin(label, self.env, self.credentials().gateway_origins)
        except ConfigError as exc:
            raise SelectionError(f"{route.name} is routed through the Nous Tool Gateway, but {exc}. "
                                 "Fix it in ~/.hermes/.env, or run 'hermes tools' to change the route.") from None
        return replace(route, gateway_label=label, vendor=vendor, origin=origin)

    def access(self, route: Route) -> Access:
        """Origin, secret and URL guard for a gateway or byok route (see the module docstring)."""
        from hermes.routing import gateway_token, token_allowed_for
        from hermes.vendors.base import same_origin

        env = self.env
        if route.kind == "gateway":
            credentials = self.credentials()
            origin, token = gateway_token(route, credentials, env)
            advertised = credentials.gateway_origins
            return Access(route, origin, token, lambda url: token_allowed_for(url, env, advertised=advertised))
        if route.kind != "byok":
            raise ToolError(f"{route.name} is routed to {route.vendor}, which has no remote API")
        name = route.credential_env
        if name is not None and name.endswith("_URL"):
            origin = self.byok_origin(route)
            return Access(route, origin, "", same_origin(origin))
        secret = env.get(name, "").strip() if name else ""
        if not name or not secret:
            raise SelectionError(f"{route.name} is configured to use {route.vendor} (set via hermes tools), but its "
                                 "key is not set. Run 'hermes tools' to change it.")
        origin = self.byok_origin(route)
        return Access(route, origin, secret, same_origin(origin))

    def byok_origin(self, route: Route) -> str:
        """The vendor API origin, or ``<category>.<vendor>.base_url`` from config.yaml when set."""
        from hermes.routing.endpoints import parse_origin

        key = f"{route.category}.{route.vendor}.base_url"
        custom = self.get_str(key)
        if custom is not None:
            if parse_origin(custom) is None:
                raise ConfigError(f"{key} in config.yaml must be a plain http(s) URL (no user info, spaces or "
                                  "backslashes)")
            return custom.rstrip("/")
        if not route.origin:
            raise ConfigError(f"{route.name} has no API address for {route.vendor}; set {key} in config.yaml")
        return route.origin

    # -- uploads -----------------------------------------------------------------------------------------
    async def upload(self, http: httpx.AsyncClient, access: Access, data: bytes, *, filename: str,
                     content_type: str) -> str:
        """Upload a local file for a gateway route to the gateway's upload endpoint (on the shared origin,
        with the portal token); returns the reference to put in the vendor request. VendorError on failure."""
        from hermes.routing import shared_origin
        from hermes.vendors.base import Auth
        from hermes.vendors.gateway_uploads import GatewayUploadsClient

        origin = shared_origin(self.env, self.credentials().gateway_origins)
        uploads = GatewayUploadsClient(http, origin, Auth.bearer(access.secret), allow_url=access.allow_url)
        return await uploads.upload(access.route.vendor or "nous", data, filename=filename,
                                    content_type=content_type)


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


def http_client(timeout: float = 60.0) -> httpx.AsyncClient:
    """A fresh ``httpx.AsyncClient`` for one tool call (:func:`hermes.vendors.base.new_client`)."""
    from hermes.vendors.base import new_client

    return new_client(timeout)


def text_arg(args: Mapping[str, Any], field: str, what: str, *, required: bool = True) -> str | None:
    """A string argument, stripped; ToolError when missing (if ``required``), empty or not valid Unicode."""
    value = args.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"'{field}' must be {what}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(f"'{field}' holds characters that are not valid Unicode (lone surrogates)") from None
    return value.strip()
