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
from hermes.plugins.video_gen.base import Capabilities, Connection, ModelInfo, VideoBackend
from hermes.plugins.video_gen.catalog import cached_models, store_models
from hermes.plugins.video_gen.discovery import find_backends
from hermes.tools.routed.context import Access, RoutedContext

if TYPE_CHECKING:
    import httpx

    from hermes.routing import Route

_HINT = "Run 'hermes tools' to change it."
#: ``ModelInfo.extra`` key of a live-catalog model the cache does not hold yet
UNCATALOGUED = "uncatalogued"
_UNKNOWN = Capabilities(modes=("text", "image"), min_duration=1, max_duration=60)


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
    if model is None and backend.live_catalog:
        model = next((m for m in cached_models(ctx.settings.paths.cache, backend.name) if m.id == model_id), None)
        # not fetched yet: the call reads the live catalog before anything is paid (refresh_model)
        model = model or ModelInfo(model_id, model_id, _UNKNOWN, None, {UNCATALOGUED: True})
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
    if active.plugin:
        return backend_connection(ctx, active.backend, "byok", http), f"the {active.backend.name} plugin"
    access: Access = ctx.access(active.route)
    return Connection(http, access.origin, access.secret, access.allow_url, access.gateway), access.via


async def refresh_model(ctx: RoutedContext, active: Active, conn: Connection) -> Active:
    """``active`` with its model read from the live catalog when the cache did not hold it (free; before any
    paid call); SelectionError when the backend does not list the model."""
    from dataclasses import replace

    if not active.model.extra.get(UNCATALOGUED):
        return active
    models = await active.backend.fetch_models(conn)
    store_models(ctx.settings.paths.cache, active.backend.name, models)
    found = next((m for m in models if m.id == active.model.id), None)
    if found is None:
        known = ", ".join(m.id for m in models[:20]) or "none"
        raise SelectionError(f"video_gen.model is set to {active.model.id!r}, which {active.backend.display}'s "
                             f"catalog does not list (it lists: {known}). {_HINT}")
    return replace(active, model=found)


def backend_connection(ctx: RoutedContext, backend: VideoBackend, route_kind: str, http: httpx.AsyncClient,
                       *, job_id: str | None = None) -> Connection:
    """A connection to ``backend`` itself, whatever ``video_gen.provider`` says now: with its own key
    (``video_gen.<name>.base_url`` honoured), or — ``route_kind == "gateway"`` — through the gateway while
    ``video_gen`` is still routed there (a stored job is polled on the route it was paid on)."""
    from hermes.routing import Route
    from hermes.routing.categories import CATEGORIES
    from hermes.vendors.base import same_origin

    vendor = CATEGORIES["video_gen"].vendor(backend.name)
    if route_kind == "gateway":
        route = ctx.route("video_gen")
        if route.kind != "gateway":
            what = f"video job {job_id}" if job_id else "this"
            raise SelectionError(f"{what} was paid through the Tool Gateway, but video_gen is now routed to "
                                 f"{route.vendor}; route it through nous again to resume it. {_HINT}")
    elif vendor is None:  # a plugin backend
        origin = (ctx.get_str(f"video_gen.{backend.name}.base_url") or backend.api_origin or "").rstrip("/")
        return Connection(http, origin, plugin_secret(ctx, backend), same_origin(origin))
    else:
        route = Route("byok", "video_gen", "video_gen", vendor.name, vendor.api_origin, vendor.env[0][0],
                      "", None, None)
    access = ctx.access(route)
    return Connection(http, access.origin, access.secret, access.allow_url, access.gateway)


async def backend_models(ctx: RoutedContext, name: str, *, refresh: bool) -> tuple[VideoBackend, tuple[ModelInfo, ...]]:
    """The models of the backend ``name``: its table, or its live catalog (read now when ``refresh`` or when
    never cached, then cached) — ``hermes video models`` and the picker list these."""
    backend = find_backends(ctx.settings.paths.plugins).get(name)
    if backend is None:
        raise SelectionError(f"no video backend called {name!r}; installed: "
                             f"{', '.join(find_backends(ctx.settings.paths.plugins).names())}")
    if not backend.live_catalog:
        return backend, backend.models()
    cached = cached_models(ctx.settings.paths.cache, name)
    if cached and not refresh:
        return backend, cached
    from hermes.tools.routed.context import http_client

    if backend.env and not any(ctx.env.get(n, "").strip() for n in backend.env):
        raise SelectionError(f"{backend.display}'s catalog is read with {' or '.join(backend.env)}, which is not set "
                             "(hermes config set-env NAME VALUE)")
    async with http_client(60.0) as http:
        models = await backend.fetch_models(backend_connection(ctx, backend, "byok", http))
    store_models(ctx.settings.paths.cache, name, models)
    return backend, models
