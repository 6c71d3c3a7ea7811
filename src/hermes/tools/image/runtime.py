"""What the media tool families need at execution time: settings, routes, credentials, error wording.

Shared by ``image_generate``, ``text_to_speech`` (and speech to text), ``vision_analyze``/``video_analyze``
and ``x_search``. A tool builds a :class:`MediaContext` from its handler's ``**kw`` (the session's settings
when there is a session, else the files under ``HERMES_HOME``), asks :meth:`MediaContext.route` for the
route of its category — the routing function decides, at every call (GW-3: the saved selection wins) —
and :meth:`MediaContext.access` for where to call and with which secret:

* a **gateway** route: the entitlement is checked (GW-10), the origin comes from the route (a pinned
  ``{LABEL}_GATEWAY_URL`` or the derived host) and the secret is the portal token, which may only go to
  URLs that :func:`~hermes.routing.token_allowed_for` accepts;
* a **byok** route: the vendor's API (or ``<category>.<vendor>.base_url`` from config.yaml, for proxies
  and compatible servers) and the user's key, which may only go back to that same origin.

Selection problems come out as routing's :class:`~hermes.errors.SelectionError` with its GW-3 wording,
untouched; vendor failures as a :class:`~hermes.errors.ToolError` naming the route and what to check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    """Where a route's vendor client calls and with which secret (kept out of ``repr``)."""

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
        return f"{self.route.vendor} ({self.route.credential_env})"


class MediaContext:
    """The settings, environment and portal credentials one tool call works with."""

    def __init__(self, settings: Settings, surface: Surface | None = None) -> None:
        self.settings = settings
        self.surface = surface
        self._env: dict[str, str] | None = None
        self._credentials: Credentials | None = None

    @classmethod
    def from_kw(cls, kw: Mapping[str, Any]) -> MediaContext:
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
    def env(self) -> dict[str, str]:
        """Process environment over ``.env`` (what routing reads)."""
        if self._env is None:
            self._env = self.settings.env.as_dict()
        return self._env

    @property
    def home(self) -> Path:
        return self.settings.paths.home

    def get(self, key: str, default: Any = None) -> Any:
        """A dotted config key (``image_gen.model``); ``default`` when absent or when a parent is not a mapping."""
        node: Any = self.config
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return default if node is None else node

    def get_str(self, key: str, default: str | None = None) -> str | None:
        """A config string (stripped); a ConfigError naming the key when it has another type."""
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ConfigError(f"{key} in config.yaml must be a string, not {type(value).__name__}")
        text = str(value).strip()
        return text or default

    def get_bool(self, key: str, default: bool) -> bool:
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1", "false", "no", "off", "0"):
            return value.strip().lower() in ("true", "yes", "on", "1")
        raise ConfigError(f"{key} in config.yaml must be true or false")

    def get_number(self, key: str, default: float, *, low: float, high: float) -> float:
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= float(value) <= high:
            raise ConfigError(f"{key} in config.yaml must be a number from {low:g} to {high:g}")
        return float(value)

    def credentials(self) -> Credentials:
        """The portal credentials (auth.json and TOOL_GATEWAY_USER_TOKEN), read once per call; a portal login
        about to expire is refreshed first (rotated tokens are stored), so gateway calls carry a live token."""
        if self._credentials is None:
            from hermes.routing.portal_auth import fresh_credentials

            self._credentials = fresh_credentials(self.settings.paths.auth, self.env)
        return self._credentials

    # -- routes ------------------------------------------------------------------------------------------
    def route(self, name: str) -> Route:
        """The route of ``name`` (``image_gen``, ``tts``, ``stt``); SelectionError (GW-3) when it cannot run."""
        from hermes.routing import resolve_route

        return resolve_route(name, self.config, self.env, self.credentials()).require()

    def gateway_route(self, route: Route, label: str, vendor: str) -> Route:
        """``route`` moved to another relay ``label`` of the gateway (the Krea → FAL fallback)."""
        from hermes.routing import gateway_origin

        try:
            origin = gateway_origin(label, self.env)
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
            origin, token = gateway_token(route, self.credentials(), env)
            return Access(route, origin, token, lambda url: token_allowed_for(url, env))
        if route.kind == "byok":
            name = route.credential_env
            secret = env.get(name, "").strip() if name else ""
            if not name or not secret:
                raise SelectionError(f"{route.name} is configured to use {route.vendor} (set via hermes tools), "
                                     f"but its key is not set. Run 'hermes tools' to change it.")
            origin = self.byok_origin(route)
            return Access(route, origin, secret, same_origin(origin))
        raise ValueError(f"route {route.name} of kind {route.kind} has no remote access")

    def byok_origin(self, route: Route) -> str:
        """The vendor API origin, or ``<category>.<vendor>.base_url`` from config.yaml when set."""
        from hermes.routing.endpoints import parse_origin

        key = f"{route.category}.{route.vendor}.base_url"
        custom = self.get_str(key)
        if custom is not None:
            if parse_origin(custom) is None:
                raise ConfigError(f"{key} must be a plain http(s) URL (no user info, spaces or backslashes)")
            return custom.rstrip("/")
        if not route.origin:
            raise ConfigError(f"{route.name} has no API address for {route.vendor}; set {key} in config.yaml")
        return route.origin


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
    elif exc.status in (401, 403):
        message += f". Check {route.credential_env} in ~/.hermes/.env (run 'hermes tools' to change the backend)."
    return ToolError(message)


def http_client(timeout: float = 60.0) -> httpx.AsyncClient:
    """A fresh ``httpx.AsyncClient`` for one tool call (:func:`hermes.vendors.base.new_client`)."""
    from hermes.vendors.base import new_client

    return new_client(timeout)


