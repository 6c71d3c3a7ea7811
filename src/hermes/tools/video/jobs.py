"""One paid render from submit to saved file, resumable across processes (T-VGEN; hermes.store.video_jobs).

:func:`run_job` first looks for an unfinished job of the same call (same backend, model, kind and request,
created in the last :data:`RESUME_WINDOW` seconds): found, it is polled again — nothing is paid twice.
Otherwise the job is stored (``submitting``), submitted, stored again with the vendor's job id and handle,
and then polled by :func:`follow`:

* each poll updates the stored state; a change of state, queue position or progress is reported to the
  session as a :class:`~hermes.tools.progress.ToolProgress` event;
* ``done``: the video is downloaded (without credentials), checked by its magic bytes and saved under
  ``HERMES_HOME/media/<session id>/`` with a ``.json`` file of its metadata beside it;
* ``failed``: the vendor's error;
* still rendering after ``video_gen.wait_seconds`` (or when the turn is interrupted): the result says
  ``pending`` with the job id; calling
  the tool again with the same arguments, or ``hermes video resume``, keeps waiting for the same job.

A vendor that cannot be reached while polling leaves the job stored as it was, so it can be resumed.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from hermes.config.atomic import atomic_write
from hermes.errors import ToolError
from hermes.plugins.video_gen.base import Connection, Progress, Submitted, VideoBackend, VideoRequest
from hermes.store.video_jobs import VideoJob, VideoJobStore
from hermes.tools.progress import report_progress
from hermes.tools.routed.context import RoutedContext
from hermes.tools.routed.media import mp4_duration, save_media, sniff_video
from hermes.tools.routed.source import allow_private_urls
from hermes.vendors.base import VendorError, download

#: an unfinished job this recent with the same fingerprint is resumed instead of submitted again (seconds)
RESUME_WINDOW = 24 * 3600.0
RESULT_MAX_BYTES = 512 * 1024 * 1024
_FOLDER = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class Pace:
    """How often to poll and how long one call waits before answering ``pending`` (seconds)."""

    poll_interval: float = 5.0
    wait_seconds: float = 600.0

    @classmethod
    def of(cls, ctx: RoutedContext) -> Pace:
        return cls(ctx.get_number("video_gen.poll_seconds", 5.0, low=0.001, high=300.0),
                   ctx.get_number("video_gen.wait_seconds", 600.0, low=0.0, high=86_400.0))


@dataclass(frozen=True)
class Call:
    """What a job runs for: the tool, its handler keywords (for progress events) and its session's id."""

    tool: str
    kw: dict[str, Any]
    session_id: str | None


def session_id_of(kw: dict[str, Any]) -> str | None:
    session = kw.get("session")
    value = getattr(session, "session_id", None)
    return value if isinstance(value, str) and value else None


async def run_job(ctx: RoutedContext, *, backend: VideoBackend, model: str, route: str, kind: str,
                  request: VideoRequest, cost: float | None, conn: Connection,
                  submit: Callable[[], Awaitable[Submitted]], call: Call, pace: Pace) -> dict[str, Any]:
    """Resume the same unfinished call or submit a new job, then follow it (see the module docstring)."""
    store = VideoJobStore.in_home(ctx.home)
    try:
        fingerprint = request.fingerprint(backend.name, model, kind, route)
        unfinished = store.unfinished(fingerprint, since=time.time() - RESUME_WINDOW)
        for lost in (j for j in unfinished if j.state == "submitting"):
            # a process died between storing the job and the vendor's answer: nothing to poll
            store.finish(lost.id, error="the process ended while submitting; the vendor may have started (and "
                                        "billed) it without hermes learning its id — check the vendor's dashboard")
        waiting = [j for j in unfinished if j.state != "submitting"]
        if waiting:
            job = waiting[0]
            report_progress(call.kw, call.tool, f"resuming job {job.id} (already paid; not submitted again)")
        else:
            job = store.create(fingerprint=fingerprint, kind=kind, backend=backend.name, route=route, model=model,
                               request=request.to_data(), cost_estimate=cost, session_id=call.session_id)
            try:
                submitted = await submit()
            except VendorError as exc:
                store.finish(job.id, error=str(exc))
                raise
            store.submitted(job.id, submitted.job_id, submitted.handle)
            job = store.get(job.id)
            report_progress(call.kw, call.tool, f"submitted job {job.id} to {backend.display}")
        return await follow(ctx, store, job, backend, conn, call, pace)
    finally:
        store.close()


def _words(progress: Progress) -> str:
    if progress.state == "queued":
        where = f" at position {progress.queue_position}" if progress.queue_position is not None else ""
        return f"waiting in the queue{where}"
    return "rendering" + (f": {progress.message}" if progress.message else "")


async def follow(ctx: RoutedContext, store: VideoJobStore, job: VideoJob, backend: VideoBackend, conn: Connection,
                 call: Call, pace: Pace) -> dict[str, Any]:
    """Poll ``job`` until it ends or ``pace.wait_seconds`` pass (see the module docstring)."""
    if job.handle is None:
        raise ToolError(f"video job {job.id} was never accepted by {job.backend}; it cannot be resumed")
    give_up = time.monotonic() + pace.wait_seconds
    shown: tuple[str, int | None] | None = None
    while True:
        try:
            progress = await backend.poll(conn, job.handle)
        except VendorError as exc:
            raise ToolError(f"video job {job.id} is kept (already paid), but {backend.display} could not be asked "
                            f"about it: {exc}. Call the tool again with the same arguments, or run "
                            f"'hermes video resume {job.id}', to keep waiting.") from None
        if progress.state == "done" and progress.video_url is not None:
            return await _save(ctx, store, job, backend, conn, progress)
        if progress.state in ("done", "failed"):
            error = progress.error or "the vendor reported a failure"
            store.finish(job.id, error=error)
            raise ToolError(f"video job {job.id} failed on {backend.display}: {error}")
        store.polled(job.id, progress.state, queue_position=progress.queue_position, progress=progress.percent,
                     message=progress.message)
        now = (_words(progress), progress.percent)
        if now != shown:
            report_progress(call.kw, call.tool, f"job {job.id} {now[0]}", progress.percent)
            shown = now
        session = call.kw.get("session")
        if time.monotonic() >= give_up or getattr(session, "interrupted", False):
            return {"success": False, "status": "pending", "job_id": job.id, "state": progress.state,
                    "queue_position": progress.queue_position, "progress": progress.percent,
                    "backend": backend.name, "model": job.model, "cost_estimate_usd": job.cost_estimate,
                    "message": "the video is still rendering (already paid). Call the tool again with the same "
                               f"arguments to keep waiting (it is not submitted again), or run 'hermes video "
                               f"resume {job.id}'."}
        await asyncio.sleep(pace.poll_interval)


async def _save(ctx: RoutedContext, store: VideoJobStore, job: VideoJob, backend: VideoBackend, conn: Connection,
                progress: Progress) -> dict[str, Any]:
    url = progress.video_url or ""
    try:
        data, _ctype = await download(conn.http, url, vendor=backend.display, max_bytes=RESULT_MAX_BYTES,
                                      timeout=300.0, trusted_origin=conn.origin,
                                      allow_private=allow_private_urls(ctx))
    except VendorError as exc:
        raise ToolError(f"video job {job.id} finished but the video could not be downloaded from {url}: {exc}. "
                        f"Run 'hermes video resume {job.id}' to try again.") from None
    kind = sniff_video(data)
    if kind is None:
        store.finish(job.id, error="the result is not a video (checked by its first bytes)")
        raise ToolError(f"{backend.display} returned a file that is not a video (checked by its first bytes)")
    folder = _FOLDER.sub("_", job.session_id)[:80] if job.session_id else None
    path = save_media(ctx.home, data, prefix="video", ext=kind.ext, folder=folder)
    seconds = mp4_duration(data) if kind.ext in ("mp4", "mov") else None
    metadata: dict[str, Any] = {
        "job_id": job.id, "kind": job.kind, "backend": job.backend, "route": job.route, "model": job.model,
        "vendor_job_id": job.vendor_job_id, "request": job.request, "cost_estimate_usd": job.cost_estimate,
        "session_id": job.session_id, "source_url": None if url.startswith("data:") else url,
        "format": kind.name, "bytes": len(data), "duration_seconds": seconds, "created_at": job.created_at,
        "finished_at": time.time(), **{k: v for k, v in progress.extra.items() if v is not None},
    }
    atomic_write(path.with_name(path.name + ".json"),
                 json.dumps(metadata, ensure_ascii=False, indent=2).encode("utf-8"), mode=0o600)
    store.finish(job.id, path=str(path), url=metadata["source_url"])
    return {"success": True, "path": str(path), "url": metadata["source_url"], "metadata_path": f"{path}.json",
            "job_id": job.id, "backend": job.backend, "model": job.model, "route": job.route,
            "format": kind.name, "bytes": len(data), "duration_seconds": seconds,
            "cost_estimate_usd": job.cost_estimate, "prompt": job.request.get("prompt")}
