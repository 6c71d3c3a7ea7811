"""Which video backend and model a call uses, and where it calls (GW-3: the saved selection wins).

The route of ``video_gen`` comes from routing like every category (``video_gen.provider``: ``nous`` = the
Tool Gateway's ``fal-queue`` relay, ``fal``/``xai`` = your own key, never configured = the first backend
whose key is set). A value that is no built-in vendor names a backend plugin
(``HERMES_HOME/plugins/video_gen/<name>/`` or the entry point group ``hermes.video_gen``); its key is the
first of its ``env`` variables that is set, its API ``video_gen.<name>.base_url`` or its ``api_origin``.

The model is ``video_gen.model`` (the backend's default when unset); it must be one the backend has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hermes.errors import SelectionError
from hermes.plugins.video_gen.base import Connection, ModelInfo, VideoBackend
from hermes.plugins.video_gen.discovery import find_backends
from hermes.tools.routed.context import Access, RoutedContext

if TYPE_CHECKING:
    import httpx

    from hermes.routing import Route

_HINT = "Run 'hermes tools' to change it."


@dataclass(frozen=True)
class Active:
    """The backend and model of this call and the route they are reached by."""

    backend: VideoBackend
    model: ModelInfo
    route: Route
    plugin: bool

    @property
    def route_kind(self) -> str:
        return "gateway" if self.route.kind == "gateway" else "byok"


def _plugin_backend(ctx: RoutedContext, name: str) -> VideoBackend:
    found = find_backends(ctx.settings.paths.plugins)
    backend = found.get(name)
    if backend is None:
        why = next((e for source, e in found.errors.items() if source.endswith(f":{name}")), None)
        detail = f" (it failed to load: {why})" if why else ""
        raise SelectionError(f"video_gen.provider is set to {name!r}, but no video backend plugin of that name is "
                             f"installed{detail}; plugins live in ~/.hermes/plugins/video_gen/<name>/ or the "
                             f"hermes.video_gen entry points. Built in: fal, xai. {_HINT}")
    return backend


def offline_route(ctx: RoutedContext) -> Route:
    """The route of ``video_gen`` from the stored login as it is (no refresh, no network)."""
    from hermes.routing import load_credentials, resolve_route

    credentials = load_credentials(ctx.settings.paths.auth, ctx.env)
    return resolve_route("video_gen", ctx.config, ctx.env, credentials).require()


def active_backend(ctx: RoutedContext, route: Route | None = None) -> Active:
    """The route, backend and model of ``video_gen`` now; SelectionError (GW-3 wording) when it cannot run.

    ``route`` given (:func:`offline_route`): nothing is refreshed, for checks and descriptions."""
    from hermes.routing.categories import CATEGORIES

    route = route or ctx.route("video_gen")
    plugin = route.kind == "byok" and CATEGORIES["video_gen"].vendor(route.vendor or "") is None
    name = "fal" if route.kind == "gateway" else (route.vendor or "")
    if plugin:
        backend = _plugin_backend(ctx, name)
    else:
        found = find_backends(ctx.settings.paths.plugins).get(name)
        if found is None:
            raise SelectionError(f"video_gen is routed to {name}, but no video backend drives {name} yet "
                                 f"(built in: fal, xai). {_HINT}")
        backend = found
    model_id = ctx.get_str("video_gen.model") or backend.default_model
    model = backend.model(model_id)
    if model is None:
        known = ", ".join(m.id for m in backend.models()) or "none listed"
        raise SelectionError(f"video_gen.model is set to {model_id!r}, which {backend.display} does not have "
                             f"(its models: {known}). Pick one of those, or choose the backend that serves it. "
                             f"{_HINT}")
    return Active(backend, model, route, plugin)


def plugin_secret(ctx: RoutedContext, backend: VideoBackend) -> str:
    """The key of a plugin backend: the first of its ``env`` variables that is set ("" when it needs none)."""
    for name in backend.env:
        value = ctx.env.get(name, "").strip()
        if value:
            return value
    if backend.env:
        raise SelectionError(f"video_gen is configured to use {backend.name} (set via hermes tools), but "
                             f"{' (or '.join(backend.env)}{')' * (len(backend.env) - 1)} is not set. {_HINT}")
    return ""


def connection(ctx: RoutedContext, active: Active, http: httpx.AsyncClient) -> tuple[Connection, str]:
    """The :class:`Connection` of ``active`` and human words for the route (for results and errors)."""
    from hermes.vendors.base import same_origin

    if active.plugin:
        secret = plugin_secret(ctx, active.backend)
        key = f"video_gen.{active.backend.name}.base_url"
        origin = ctx.get_str(key) or active.backend.api_origin
        if not origin:
            raise SelectionError(f"the {active.backend.name} video plugin has no API address; set {key} in "
                                 "config.yaml")
        origin = origin.rstrip("/")
        return Connection(http, origin, secret, same_origin(origin)), f"the {active.backend.name} plugin"
    access: Access = ctx.access(active.route)
    return Connection(http, access.origin, access.secret, access.allow_url, access.gateway), access.via
