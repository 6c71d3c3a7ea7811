"""Polling stored video jobs again from another process (``hermes video resume``; T-VGEN).

A job is followed on the backend it was paid on, over the kind of route it was submitted through: a
``byok`` job with that backend's key (``video_gen.<backend>.base_url`` honoured), a ``gateway`` job only
while ``video_gen`` is still routed through the gateway (its handle names the relay). Nothing is submitted.
"""

from __future__ import annotations

from typing import Any

from hermes.errors import SelectionError, ToolError
from hermes.plugins.video_gen.discovery import find_backends
from hermes.store.video_jobs import VideoJobStore
from hermes.tools.routed.context import RoutedContext, http_client
from hermes.tools.video.backend import backend_connection
from hermes.tools.video.jobs import Call, Pace, follow


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
                    conn = backend_connection(ctx, backend, job.route, http, job_id=job.id)
                    results.append(await follow(ctx, store, job, backend, conn, Call("hermes video resume", kw, None),
                                                Pace.of(ctx)))
            except (ToolError, SelectionError) as exc:
                results.append({"job_id": job.id, "error": str(exc)})
    finally:
        store.close()
    return results
