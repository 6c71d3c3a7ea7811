"""The scheduler's tick: run what is due, apply the missed-run policy, record every outcome.

``Scheduler.tick(now)`` looks at each enabled job whose ``next_run_at`` is at or before ``now``. The
fire times between ``next_run_at`` and ``now`` are the ones that came due since the last tick; when no
scheduler was running they may be many. Only the most recent one matters:

* if it is within the job's grace window (``grace_seconds``, else ``cron.grace_seconds``, default
  3600 s) the job runs **once**, for that fire time; older fire times in the backlog are logged as one
  ``skipped_missed`` record;
* if it is older than the grace window nothing runs, and the whole backlog is logged as one
  ``skipped_missed`` record.

Either way ``next_run_at`` moves to the first fire time after ``now`` *before* the run starts
(at-most-once: a crash mid-run never repeats it), with a compare-and-swap so two schedulers never run
the same fire time. A job that has no fire time left (a one-shot) or that reached its repeat limit is
disabled. Time comes from an injected clock, so the policy is tested without waiting.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Literal

from hermes.errors import HermesError
from hermes.tools.cron.jobs import DEFAULT_GRACE_SECONDS, fmt_time
from hermes.tools.cron.runner import JobRunner, RunOutcome
from hermes.tools.cron.schedule import Schedule, schedule_from_stored

if TYPE_CHECKING:
    from hermes.store.cron import CronJob, CronRun, CronStore

logger = logging.getLogger(__name__)

Action = Literal["ran", "skipped_missed", "invalid", "taken"]


def local_now() -> datetime:
    """The current time, timezone-aware, in the local zone."""
    return datetime.now().astimezone()


@dataclass(frozen=True)
class TickOutcome:
    """What one tick did with one due job."""

    job: str
    action: Action
    message: str
    status: str | None = None
    run_id: int | None = None
    session_id: str | None = None


class Scheduler:
    """Decides and runs due jobs (see the module docstring).

    ``min_grace`` raises every job's grace window to at least that many seconds; the long-running
    scheduler passes a little more than its tick interval, so a job is never skipped merely because
    it came due between two ticks.
    """

    def __init__(
        self, store: CronStore, runner: JobRunner, *, grace_seconds: int = DEFAULT_GRACE_SECONDS,
        min_grace: float = 0.0, tz: tzinfo | None = None, clock: Callable[[], datetime] = local_now,
        stop: threading.Event | None = None,
    ) -> None:
        self.store = store
        self.runner = runner
        self.grace_seconds = grace_seconds
        self.min_grace = min_grace
        self.tz = tz
        self.clock = clock
        self.stop = stop or threading.Event()

    def _dt(self, ts: float) -> datetime:
        return datetime.fromtimestamp(ts, self.tz).astimezone(self.tz)

    def _fmt(self, dt: datetime | None) -> str:
        return (fmt_time(dt.timestamp(), self.tz) if dt is not None else None) or "never"

    # -- a pass -----------------------------------------------------------------------------------

    def tick(self, now: datetime | None = None) -> list[TickOutcome]:
        """Handle every job due at ``now`` (default: the clock), one after the other."""
        fixed = now
        now = now or self.clock()
        outcomes: list[TickOutcome] = []
        for job in self.store.due_jobs(now.timestamp()):
            if self.stop.is_set():
                break
            try:
                outcome = self._process(job, fixed or self.clock())
            except HermesError as exc:
                logger.error("cron job %s could not be handled: %s", job.name, exc)
                outcome = TickOutcome(job.name, "invalid", f"could not be handled: {exc}")
            except Exception as exc:
                logger.exception("cron job %s could not be handled", job.name)
                outcome = TickOutcome(job.name, "invalid", f"could not be handled: {type(exc).__name__}: {exc}")
            outcomes.append(outcome)
        return outcomes

    def _process(self, job: CronJob, now: datetime) -> TickOutcome:
        assert job.next_run_at is not None
        first = self._dt(job.next_run_at)
        try:
            schedule = schedule_from_stored(job.schedule_kind, job.schedule, tz=self.tz)
        except HermesError as exc:
            return self._invalid(job, str(exc))
        latest = schedule.last_at_or_before(now, anchor=first)
        if latest is None or latest < first:
            latest = first
        nxt = schedule.next_after(now, anchor=first)
        grace = max(job.grace_seconds if job.grace_seconds is not None else self.grace_seconds, self.min_grace)
        late = (now - latest).total_seconds()
        will_run = late <= grace
        count = job.repeat_count + (1 if will_run else 0)
        finished = nxt is None or (job.repeat_limit is not None and count >= job.repeat_limit)
        if not self.store.claim(job.id, expected_next=job.next_run_at,
                                next_run_at=None if finished else nxt.timestamp() if nxt else None,
                                enabled=not finished, repeat_count=count):
            return TickOutcome(job.name, "taken", "already handled by another scheduler, paused or removed")
        next_text = "none (the job is finished)" if finished else self._fmt(nxt)
        if not will_run:
            span = self._fmt(first) if latest == first else f"{self._fmt(first)} to {self._fmt(latest)}"
            note = (f"Missed while no scheduler was running: fire time(s) {span}. The latest was {late:.0f} s late, "
                    f"beyond the grace window of {grace:.0f} s, so nothing was run. Next run: {next_text}.")
            run_id = self._skipped(job, first, now, note)
            logger.warning("cron job %s: %s", job.name, note)
            return TickOutcome(job.name, "skipped_missed", note, "skipped_missed", run_id)
        if latest > first:
            older = self._previous(schedule, latest, first)
            span = self._fmt(first) if older == first else f"{self._fmt(first)} to {self._fmt(older)}"
            note = (f"Missed while no scheduler was running: fire time(s) {span}. Only the latest, "
                    f"{self._fmt(latest)}, was run (never a burst of catch-up runs).")
            self._skipped(job, first, now, note)
            logger.warning("cron job %s: %s", job.name, note)
        run_id, outcome = self.execute(job, scheduled_for=latest, trigger="schedule")
        text = f"ran ({outcome.status}); next run: {next_text}"
        if outcome.error:
            text += f"; error: {outcome.error}"
        return TickOutcome(job.name, "ran", text, outcome.status, run_id, outcome.session_id)

    @staticmethod
    def _previous(schedule: Schedule, latest: datetime, first: datetime) -> datetime:
        before = schedule.last_at_or_before(latest - timedelta(seconds=1), anchor=first)
        return before if before is not None and before >= first else first

    def _skipped(self, job: CronJob, first: datetime, now: datetime, note: str) -> int:
        return self.store.add_run(job.id, status="skipped_missed", scheduled_for=first.timestamp(),
                                  started_at=now.timestamp(), finished_at=now.timestamp(), output=note)

    def _invalid(self, job: CronJob, reason: str) -> TickOutcome:
        message = f"the stored schedule cannot be read ({reason}); the job is paused until it is updated"
        self.store.claim(job.id, expected_next=job.next_run_at, next_run_at=job.next_run_at, enabled=False,
                         repeat_count=job.repeat_count)
        run_id = self.store.add_run(job.id, status="error", scheduled_for=job.next_run_at,
                                    finished_at=self.clock().timestamp(), error=message)
        self.store.set_last_run(job.id, at=self.clock().timestamp(), status="error")
        return TickOutcome(job.name, "invalid", message, "error", run_id)

    # -- one run ----------------------------------------------------------------------------------

    def execute(self, job: CronJob, *, scheduled_for: datetime | None, trigger: str) -> tuple[int, RunOutcome]:
        """Run ``job`` now and record the run; an exception from the runner becomes an ``error`` record."""
        started = self.clock().timestamp()
        run_id = self.store.add_run(job.id, status="running", trigger=trigger, started_at=started,
                                    scheduled_for=scheduled_for.timestamp() if scheduled_for else None)
        try:
            outcome = self.runner.run(job)
        except Exception as exc:
            logger.exception("cron job %s failed", job.name)
            outcome = RunOutcome("error", error=f"{type(exc).__name__}: {exc}")
        except BaseException:
            self.store.finish_run(run_id, status="error", error="the scheduler was stopped during the run")
            self.store.set_last_run(job.id, at=started, status="error")
            raise
        self.store.finish_run(run_id, status=outcome.status, finished_at=self.clock().timestamp(),
                              session_id=outcome.session_id, output=outcome.output, error=outcome.error)
        self.store.set_last_run(job.id, at=started, status=outcome.status)
        return run_id, outcome

    def run_now(self, ref: str) -> CronRun:
        """Run a job at once, whatever its schedule or state; its schedule is not changed."""
        job = self.store.get_job(ref)
        run_id, _ = self.execute(job, scheduled_for=None, trigger="manual")
        return self.store.get_run(run_id)
