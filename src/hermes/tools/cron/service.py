"""The long-running scheduler: one instance per HERMES_HOME (a lock file), a tick every N seconds.

:class:`SchedulerLock` is an advisory lock on ``HERMES_HOME/cron/scheduler.lock`` (``flock`` on POSIX,
``msvcrt.locking`` on Windows) holding the owner's pid. The operating system drops it when the process
dies, so a crashed scheduler never blocks the next one. :func:`serve` ticks until its stop event is
set; the CLI sets it on Ctrl-C or SIGTERM and interrupts the job in progress.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO

from hermes.errors import HermesError
from hermes.tools.cron.scheduler import Scheduler, TickOutcome

DEFAULT_INTERVAL = 30.0


class SchedulerBusy(HermesError):
    """Another scheduler holds the lock of this HERMES_HOME."""


def lock_path(home: Path) -> Path:
    """Where the scheduler lock of a HERMES_HOME lives."""
    return home / "cron" / "scheduler.lock"


class SchedulerLock:
    """A non-blocking, process-wide lock file (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[str] | None = None

    def acquire(self) -> bool:
        """Take the lock; False (and nothing held) when another process has it."""
        if self._handle is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held until release()
        try:
            if sys.platform == "win32":
                import msvcrt

                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._handle = handle
        return True

    def holder(self) -> str:
        """The pid written by the current holder ('unknown' when unreadable)."""
        try:
            return self.path.read_text(encoding="utf-8").strip() or "unknown"
        except OSError:
            return "unknown"

    def release(self) -> None:
        handle, self._handle = self._handle, None
        if handle is None:
            return
        try:
            handle.seek(0)
            handle.truncate()
        except OSError:
            pass
        handle.close()  # closing the descriptor drops the lock

    def __enter__(self) -> SchedulerLock:
        if not self.acquire():
            raise SchedulerBusy(f"another scheduler is running (pid {self.holder()}; lock file {self.path})")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def serve(
    scheduler: Scheduler, *, interval: float = DEFAULT_INTERVAL, stop: threading.Event | None = None,
    report: Callable[[TickOutcome], None] | None = None, on_error: Callable[[str], None] | None = None,
    before_tick: Callable[[], None] | None = None,
) -> None:
    """Tick every ``interval`` seconds until ``stop`` is set; a failing tick is reported, not fatal.

    ``before_tick`` runs first on every pass (the CLI reloads the configuration there).
    """
    stop = stop or scheduler.stop
    while not stop.is_set():
        try:
            if before_tick is not None:
                before_tick()
            for outcome in scheduler.tick():
                if report is not None:
                    report(outcome)
        except HermesError as exc:
            if on_error is not None:
                on_error(f"tick failed: {exc}")
        except Exception as exc:  # never let one bad pass end the scheduler
            if on_error is not None:
                on_error(f"tick failed: {type(exc).__name__}: {exc}")
        stop.wait(interval)
