"""Polling stored video jobs again from another process (``hermes video resume``; T-VGEN).

A job is followed on the backend it was paid on, over the kind of route it was submitted through: a
``byok`` job with that backend's key (``video_gen.<backend>.base_url`` honoured), a ``gateway`` job only
while ``video_gen`` is still routed through the gateway (its handle names the relay). Nothing is submitted.
"""

from __future__ import annotations

from typing import Any

from hermes.errors import SelectionError, ToolError
from hermes.plugins.video_gen.base import Connection, VideoBackend
from hermes.plugins.video_gen.discovery import find_backends
from hermes.store.video_jobs import VideoJob, VideoJobStore
from hermes.tools.routed.context import RoutedContext, http_client
from hermes.tools.video.backend import plugin_secret
from hermes.tools.video.jobs import Call, Pace, follow

_HINT = "Run 'hermes tools' to change it."


def _connection(ctx: RoutedContext, job: VideoJob, backend: VideoBackend, http: Any) -> Connection:
    from hermes.routing import Route
    from hermes.routing.categories import CATEGORIES
    from hermes.vendors.base import same_origin

    vendor = CATEGORIES["video_gen"].vendor(job.backend)
    if job.route == "gateway":
        route = ctx.route("video_gen")
        if route.kind != "gateway":
            raise SelectionError(f"video job {job.id} was paid through the Tool Gateway, but video_gen is now routed "
                                 f"to {route.vendor}; route it through nous again to resume it. {_HINT}")
    elif vendor is None:  # a plugin backend
        origin = (ctx.get_str(f"video_gen.{backend.name}.base_url") or backend.api_origin or "").rstrip("/")
        return Connection(http, origin, plugin_secret(ctx, backend), same_origin(origin))
    else:
        route = Route("byok", "video_gen", "video_gen", vendor.name, vendor.api_origin, vendor.env[0][0],
                      "", None, None)
    access = ctx.access(route)
    return Connection(http, access.origin, access.secret, access.allow_url, access.gateway)


async def resume_jobs(ctx: RoutedContext, job_id: str | None, kw: dict[str, Any]) -> list[dict[str, Any]]:
    """Follow ``job_id`` (or every unfinished job) until each ends or ``video_gen.wait_seconds`` pass."""
    store = VideoJobStore.in_home(ctx.home)
    results: list[dict[str, Any]] = []
    try:
        if job_id is not None:
            job = store.find(job_id)
            if job is None:
                raise ToolError(f"no video job {job_id!r} (see 'hermes video jobs')")
            jobs = [job]
        else:
            jobs = [j for j in store.unfinished() if j.state != "submitting"]
        found = find_backends(ctx.settings.paths.plugins)
        for job in jobs:
            if job.finished:
                results.append({"job_id": job.id, "state": job.state, "path": job.result_path, "error": job.error})
                continue
            backend = found.get(job.backend)
            if backend is None:
                results.append({"job_id": job.id, "error": f"the video backend {job.backend!r} is not installed"})
                continue
            try:
                async with http_client(120.0) as http:
                    conn = _connection(ctx, job, backend, http)
                    results.append(await follow(ctx, store, job, backend, conn, Call("hermes video resume", kw, None),
                                                Pace.of(ctx)))
            except (ToolError, SelectionError) as exc:
                results.append({"job_id": job.id, "error": str(exc)})
    finally:
        store.close()
    return results
