"""Unfinished video jobs are followed again when a session starts (T-VGEN, ``video_gen.auto_resume``).

A render that was paid for but not yet saved — its process was killed, the machine restarted, the turn
gave up waiting — stays in ``HERMES_HOME/video_jobs.db``. When a session with ``video_generate`` starts
(new or resumed), :func:`resume_in_background` looks there (a file read; nothing is created, nothing is
sent when no job is waiting) and, for jobs accepted by their vendor in the last :data:`MAX_AGE` seconds,
polls them to the end in a daemon thread — exactly like ``hermes video resume``: nothing is submitted or
paid again, results land in the session media folder of the job's session with their metadata. The
person is told what is being resumed and, later, what came of it, through ``notify``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes.config.settings import Settings

#: jobs older than this are left to ``hermes video resume`` (a vendor keeps results for a day or so)
MAX_AGE = 86_400.0


def _outcome(item: dict[str, object]) -> str:
    if item.get("success"):
        return f"video job {item['job_id']} finished: saved {item.get('path')}"
    if item.get("status") == "pending":
        return f"video job {item['job_id']} is still rendering; 'hermes video resume {item['job_id']}' waits again"
    return f"video job {item['job_id']}: {item.get('error') or item.get('state')}"


def resume_in_background(settings: Settings, notify: Callable[[str], None]) -> threading.Thread | None:
    """Start following the waiting jobs (see the module docstring); None when there is nothing to do."""
    from hermes.config.reader import ConfigReader
    from hermes.errors import HermesError
    from hermes.store.video_jobs import FILE_NAME, VideoJobStore

    try:
        if not ConfigReader(settings.config.data).flag("video_gen.auto_resume", True):
            return None
    except HermesError:
        return None
    path = settings.paths.home / FILE_NAME
    if not path.exists():
        return None
    try:
        with VideoJobStore(path) as store:
            waiting = [j for j in store.unfinished(since=time.time() - MAX_AGE) if j.vendor_job_id]
    except HermesError:
        return None
    if not waiting:
        return None
    ids = ", ".join(j.id for j in waiting)
    notify(f"resuming {len(waiting)} unfinished video job{'s' if len(waiting) > 1 else ''} in the background "
           f"({ids}); already paid, not submitted again")

    def follow() -> None:
        from hermes.tools.asyncbridge import run_sync
        from hermes.tools.routed.context import RoutedContext
        from hermes.tools.video.resume import resume_jobs

        try:
            for job in waiting:
                for item in run_sync(resume_jobs(RoutedContext(settings), job.id, {})):
                    notify(_outcome(item))
        except Exception as exc:  # a background helper: say it, never raise into nowhere
            notify(f"resuming video jobs failed: {type(exc).__name__}: {exc}")

    thread = threading.Thread(target=follow, name="video-auto-resume", daemon=True)
    thread.start()
    return thread
