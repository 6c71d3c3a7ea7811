"""The scheduler's tick with an injected clock: due runs, the missed-run policy, pause/resume, one-shots,
repeat limits, failing runners, concurrent schedulers, the lock file and the job runner's prompt."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.cron import AgentRunner
from hermes.errors import ToolArgumentError
from hermes.store.cron import CronJob, CronStore
from hermes.tools.cron import jobs
from hermes.tools.cron.runner import RunOutcome, build_prompt
from hermes.tools.cron.scheduler import Scheduler
from hermes.tools.cron.service import SchedulerBusy, SchedulerLock, serve


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


class Clock:
    """A clock that only moves when the test says so."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def set(self, *parts: int) -> datetime:
        self.now = utc(*parts)
        return self.now


class FakeRunner:
    """Records the jobs it was asked to run; fails for jobs named in ``fail`` or ``crash``."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.fail: set[str] = set()
        self.crash: set[str] = set()
        self.interrupted = False

    def run(self, job: CronJob) -> RunOutcome:
        self.ran.append(job.name)
        if job.name in self.crash:
            raise RuntimeError("runner exploded")
        if job.name in self.fail:
            return RunOutcome("error", error="model unreachable", session_id="s-fail")
        return RunOutcome("ok", output=f"output of {job.name} #{len(self.ran)}", session_id=f"s-{len(self.ran)}")

    def interrupt(self) -> None:
        self.interrupted = True


@pytest.fixture
def store(tmp_path: Path) -> Iterator[CronStore]:
    with CronStore(tmp_path / "state.db") as s:
        yield s


@pytest.fixture
def clock() -> Clock:
    return Clock(utc(2026, 1, 1, 10, 5))


@pytest.fixture
def runner() -> FakeRunner:
    return FakeRunner()


@pytest.fixture
def scheduler(store: CronStore, runner: FakeRunner, clock: Clock) -> Scheduler:
    return Scheduler(store, runner, grace_seconds=3600, tz=UTC, clock=clock)


def add(store: CronStore, clock: Clock, name: str, schedule: str, **kw: Any) -> CronJob:
    return jobs.create_job(store, name=name, prompt=f"do {name}", schedule=schedule, now=clock(), tz=UTC, **kw)


def statuses(store: CronStore, name: str) -> list[str]:
    return [r.status for r in reversed(store.runs(store.get_job(name).id, limit=100))]


def next_run(store: CronStore, name: str) -> datetime | None:
    ts = store.get_job(name).next_run_at
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


# -- on time -----------------------------------------------------------------------------------------

def test_due_job_runs_once_and_moves_on(store: CronStore, scheduler: Scheduler, runner: FakeRunner,
                                        clock: Clock) -> None:
    add(store, clock, "hourly", "0 * * * *")
    assert next_run(store, "hourly") == utc(2026, 1, 1, 11)
    assert scheduler.tick(clock.set(2026, 1, 1, 10, 59)) == []
    [outcome] = scheduler.tick(clock.set(2026, 1, 1, 11, 0, 10))
    assert (outcome.action, outcome.status, outcome.session_id) == ("ran", "ok", "s-1")
    assert runner.ran == ["hourly"]
    assert next_run(store, "hourly") == utc(2026, 1, 1, 12)
    [run] = store.runs(store.get_job("hourly").id)
    assert (run.status, run.trigger, run.output, run.session_id) == ("ok", "schedule", "output of hourly #1", "s-1")
    assert run.scheduled_for == utc(2026, 1, 1, 11).timestamp()
    job = store.get_job("hourly")
    assert (job.last_status, job.repeat_count, job.state) == ("ok", 1, "active")
    assert scheduler.tick(clock.set(2026, 1, 1, 11, 0, 40)) == []  # the same fire time never runs twice


# -- missed runs -------------------------------------------------------------------------------------

def test_missed_within_grace_runs_exactly_once(store: CronStore, scheduler: Scheduler, runner: FakeRunner,
                                               clock: Clock) -> None:
    add(store, clock, "hourly", "0 * * * *")
    # the scheduler was down from 10:05 to 11:40: one fire time (11:00) missed, 40 minutes ago
    [outcome] = scheduler.tick(clock.set(2026, 1, 1, 11, 40))
    assert outcome.action == "ran" and runner.ran == ["hourly"]
    assert statuses(store, "hourly") == ["ok"]
    assert next_run(store, "hourly") == utc(2026, 1, 1, 12)


def test_backlog_within_grace_runs_latest_once_and_logs_older(store: CronStore, scheduler: Scheduler,
                                                              runner: FakeRunner, clock: Clock) -> None:
    add(store, clock, "hourly", "0 * * * *")
    # down until 13:30: 11:00, 12:00 and 13:00 were missed; 13:00 is within the grace window
    scheduler.tick(clock.set(2026, 1, 1, 13, 30))
    assert runner.ran == ["hourly"]
    runs = list(reversed(store.runs(store.get_job("hourly").id)))
    assert [r.status for r in runs] == ["skipped_missed", "ok"]
    skipped, ran = runs
    assert ran.scheduled_for == utc(2026, 1, 1, 13).timestamp()
    assert skipped.scheduled_for == utc(2026, 1, 1, 11).timestamp()
    assert skipped.output is not None and "11:00" in skipped.output and "12:00" in skipped.output
    assert next_run(store, "hourly") == utc(2026, 1, 1, 14)


def test_misses_older_than_grace_are_skipped_and_logged(store: CronStore, scheduler: Scheduler,
                                                         runner: FakeRunner, clock: Clock) -> None:
    add(store, clock, "hourly", "0 * * * *", grace_seconds=600)  # per-job grace beats the default
    [outcome] = scheduler.tick(clock.set(2026, 1, 1, 13, 30))  # latest miss (13:00) is 30 min old
    assert outcome.action == "skipped_missed"
    assert runner.ran == []
    [record] = store.runs(store.get_job("hourly").id)
    assert record.status == "skipped_missed" and record.session_id is None
    assert record.output is not None and "beyond the grace window of 600 s" in record.output
    assert next_run(store, "hourly") == utc(2026, 1, 1, 14)
    assert store.get_job("hourly").last_status is None  # nothing ran
    scheduler.tick(clock.set(2026, 1, 1, 14, 0, 5))  # and from here on it runs normally
    assert runner.ran == ["hourly"]


def test_default_grace_applies(store: CronStore, runner: FakeRunner, clock: Clock) -> None:
    add(store, clock, "daily", "@daily")
    short = Scheduler(store, runner, grace_seconds=60, tz=UTC, clock=clock)
    [outcome] = short.tick(clock.set(2026, 1, 2, 0, 5))
    assert outcome.action == "skipped_missed" and runner.ran == []


def test_no_burst_after_long_downtime(store: CronStore, scheduler: Scheduler, runner: FakeRunner,
                                      clock: Clock) -> None:
    add(store, clock, "minutely", "* * * * *")
    add(store, clock, "interval", "every 1m")
    add(store, clock, "old", "*/5 * * * *", grace_seconds=0)
    started = time.perf_counter()
    scheduler.tick(clock.set(2027, 1, 1, 10, 5, 30))  # a year later: ~525,000 missed minutes each
    assert time.perf_counter() - started < 2.0
    assert sorted(runner.ran) == ["interval", "minutely"]
    for name in ("minutely", "interval"):
        assert statuses(store, name) == ["skipped_missed", "ok"]
    assert statuses(store, "old") == ["skipped_missed"]
    assert next_run(store, "minutely") == utc(2027, 1, 1, 10, 6)
    assert scheduler.tick() == []  # a second pass right after runs nothing more
    assert len(runner.ran) == 2


def test_min_grace_covers_the_tick_interval(store: CronStore, runner: FakeRunner, clock: Clock) -> None:
    add(store, clock, "strict", "0 * * * *", grace_seconds=0)
    relaxed = Scheduler(store, runner, tz=UTC, clock=clock, min_grace=65)
    relaxed.tick(clock.set(2026, 1, 1, 11, 0, 40))  # 40 s late because of the tick interval
    assert runner.ran == ["strict"]


# -- pause / resume, one-shots, repeat limits ---------------------------------------------------------

def test_pause_and_resume(store: CronStore, scheduler: Scheduler, runner: FakeRunner, clock: Clock) -> None:
    add(store, clock, "hourly", "0 * * * *")
    assert jobs.pause_job(store, "hourly").state == "paused"
    assert scheduler.tick(clock.set(2026, 1, 1, 11, 30)) == []
    assert scheduler.tick(clock.set(2026, 1, 1, 14, 30)) == []
    job = jobs.resume_job(store, "hourly", now=clock(), tz=UTC)
    assert job.state == "active"
    assert next_run(store, "hourly") == utc(2026, 1, 1, 15)  # time spent paused is not "missed"
    assert scheduler.tick() == []
    assert store.runs(job.id) == []
    scheduler.tick(clock.set(2026, 1, 1, 15, 0, 1))
    assert runner.ran == ["hourly"]
    assert jobs.resume_job(store, "hourly", now=clock(), tz=UTC).state == "active"  # resuming twice is fine


def test_once_job_disables_after_running(store: CronStore, scheduler: Scheduler, runner: FakeRunner,
                                         clock: Clock) -> None:
    job = add(store, clock, "reminder", "2026-01-01T12:00")
    assert (job.schedule_kind, job.repeat_limit) == ("once", 1)
    scheduler.tick(clock.set(2026, 1, 1, 12, 0, 30))
    job = store.get_job("reminder")
    assert runner.ran == ["reminder"]
    assert (job.enabled, job.next_run_at, job.state, job.last_status) == (False, None, "finished", "ok")
    assert scheduler.tick(clock.set(2026, 1, 2)) == []
    with pytest.raises(ToolArgumentError, match="repeat limit"):
        jobs.resume_job(store, "reminder", now=clock(), tz=UTC)
    with pytest.raises(ToolArgumentError, match="has finished"):
        jobs.pause_job(store, "reminder")
    # a new time makes it active again
    job = jobs.update_job(store, "reminder", now=clock(), tz=UTC, schedule="2026-01-03T08:00")
    assert job.state == "active" and job.repeat_count == 0
    scheduler.tick(clock.set(2026, 1, 3, 8, 0, 5))
    assert runner.ran == ["reminder", "reminder"]


def test_once_job_missed_beyond_grace_is_skipped_and_finished(store: CronStore, scheduler: Scheduler,
                                                              runner: FakeRunner, clock: Clock) -> None:
    add(store, clock, "reminder", "2026-01-01T12:00")
    [outcome] = scheduler.tick(clock.set(2026, 1, 2, 12))
    assert outcome.action == "skipped_missed" and runner.ran == []
    assert store.get_job("reminder").state == "finished"
    assert statuses(store, "reminder") == ["skipped_missed"]


def test_repeat_limit_finishes_the_job(store: CronStore, scheduler: Scheduler, runner: FakeRunner,
                                       clock: Clock) -> None:
    add(store, clock, "twice", "every 1h", repeat=2)
    for hour in (11, 12, 13, 14):
        scheduler.tick(clock.set(2026, 1, 1, hour, 5, 30))
    assert runner.ran == ["twice", "twice"]
    job = store.get_job("twice")
    assert (job.state, job.repeat_count) == ("finished", 2)
    job = jobs.update_job(store, "twice", now=clock(), tz=UTC, repeat=3)  # more runs allowed: active again
    assert job.state == "active"
    scheduler.tick(clock.set(2026, 1, 1, 15, 30))
    assert runner.ran == ["twice"] * 3 and store.get_job("twice").state == "finished"


# -- failures never stop the scheduler --------------------------------------------------------------

def test_failing_runner_is_recorded_and_others_continue(store: CronStore, scheduler: Scheduler,
                                                        runner: FakeRunner, clock: Clock) -> None:
    add(store, clock, "a-crashes", "0 * * * *")
    add(store, clock, "b-fails", "0 * * * *")
    add(store, clock, "c-works", "0 * * * *")
    runner.crash.add("a-crashes")
    runner.fail.add("b-fails")
    outcomes = scheduler.tick(clock.set(2026, 1, 1, 11, 0, 5))
    assert [(o.job, o.status) for o in outcomes] == [("a-crashes", "error"), ("b-fails", "error"),
                                                      ("c-works", "ok")]
    [crashed] = store.runs(store.get_job("a-crashes").id)
    assert crashed.status == "error" and crashed.error == "RuntimeError: runner exploded"
    assert crashed.finished_at is not None
    [failed] = store.runs(store.get_job("b-fails").id)
    assert (failed.error, failed.session_id) == ("model unreachable", "s-fail")
    assert store.get_job("a-crashes").last_status == "error"
    assert next_run(store, "a-crashes") == utc(2026, 1, 1, 12)  # a failure is not retried in a burst
    runner.crash.clear()
    scheduler.tick(clock.set(2026, 1, 1, 12, 0, 5))
    assert statuses(store, "a-crashes") == ["error", "ok"]


def test_unreadable_stored_schedule_pauses_only_that_job(store: CronStore, scheduler: Scheduler,
                                                          runner: FakeRunner, clock: Clock) -> None:
    broken = add(store, clock, "broken", "0 * * * *")
    add(store, clock, "fine", "0 * * * *")
    store.update_job(broken.id, schedule="99 * * * *")  # corrupted behind the scheduler's back
    outcomes = scheduler.tick(clock.set(2026, 1, 1, 11, 0, 5))
    assert {o.job: o.action for o in outcomes} == {"broken": "invalid", "fine": "ran"}
    assert store.get_job("broken").state == "paused"
    assert statuses(store, "broken") == ["error"]


def test_two_schedulers_never_run_the_same_fire_time(tmp_path: Path, runner: FakeRunner, clock: Clock) -> None:
    with CronStore(tmp_path / "state.db") as one, CronStore(tmp_path / "state.db") as two:
        add(one, clock, "hourly", "0 * * * *")
        first = Scheduler(one, runner, tz=UTC, clock=clock)
        second = Scheduler(two, runner, tz=UTC, clock=clock)
        clock.set(2026, 1, 1, 11, 0, 5)
        stale = two.due_jobs(clock().timestamp())  # the second scheduler looked before the first claimed
        first.tick()
        outcome = second._process(stale[0], clock())
        assert outcome.action == "taken"
        assert runner.ran == ["hourly"]


def test_run_now_keeps_the_schedule(store: CronStore, scheduler: Scheduler, runner: FakeRunner,
                                    clock: Clock) -> None:
    add(store, clock, "hourly", "0 * * * *")
    jobs.pause_job(store, "hourly")
    run = scheduler.run_now("hourly")
    assert (run.status, run.trigger, run.scheduled_for) == ("ok", "manual", None)
    job = store.get_job("hourly")
    assert (job.state, job.next_run_at, job.repeat_count) == ("paused", utc(2026, 1, 1, 11).timestamp(), 0)


def test_stop_event_ends_the_pass(store: CronStore, scheduler: Scheduler, runner: FakeRunner, clock: Clock) -> None:
    add(store, clock, "a", "0 * * * *")
    add(store, clock, "b", "0 * * * *")
    scheduler.stop.set()
    assert scheduler.tick(clock.set(2026, 1, 1, 11, 0, 5)) == []


def test_serve_ticks_until_stopped(store: CronStore, runner: FakeRunner) -> None:
    real = Scheduler(store, runner)  # real clock
    jobs.create_job(store, name="soon", prompt="p", schedule="every 1m", now=datetime.now().astimezone())
    store.update_job(store.get_job("soon").id, next_run_at=time.time() - 1)
    stop = threading.Event()
    seen: list[str] = []
    thread = threading.Thread(target=serve, args=(real,), kwargs={"interval": 0.01, "stop": stop,
                                                                  "report": lambda o: seen.append(o.job)})
    thread.start()
    deadline = time.time() + 5
    while not seen and time.time() < deadline:
        time.sleep(0.01)
    stop.set()
    thread.join(5)
    assert not thread.is_alive() and seen == ["soon"] and runner.ran == ["soon"]


# -- the lock file --------------------------------------------------------------------------------------

def test_lock_allows_one_scheduler(tmp_path: Path) -> None:
    path = tmp_path / "cron" / "scheduler.lock"
    first, second = SchedulerLock(path), SchedulerLock(path)
    assert first.acquire()
    assert not second.acquire()
    assert second.holder() == str(__import__("os").getpid())
    with pytest.raises(SchedulerBusy, match="another scheduler is running"), second:
        pass
    first.release()
    with second:
        assert not first.acquire()
    assert first.acquire()
    first.release()


# -- validation and the runner's prompt -------------------------------------------------------------------

def test_job_validation_names_the_field(store: CronStore, clock: Clock) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"name": "bad name"}, "'name' must be"),
        ({"prompt": "  "}, "'prompt' must be a non-empty string"),
        ({"schedule": "0 25 * * *"}, "'schedule': cron expression '0 25 * * *': hour field: 25 is out of range"),
        ({"schedule": "2025-01-01T00:00"}, "'schedule': 2025-01-01T00:00:00+00:00 is in the past"),
        ({"skills": ["ok", "../etc"]}, "'skills[1]' must be"),
        ({"toolsets": ["web", "nope"]}, "'toolsets[1]': unknown toolset 'nope'"),
        ({"repeat": -1}, "'repeat' must be"),
        ({"grace_seconds": True}, "'grace_seconds' must be"),
        ({"schedule": "2026-02-01T00:00", "repeat": 3}, "'repeat': a one-shot job runs once"),
    ]
    for change, message in cases:
        fields: dict[str, Any] = {"name": "job", "prompt": "p", "schedule": "@daily", **change}
        with pytest.raises(ToolArgumentError) as info:
            jobs.create_job(store, now=clock(), tz=UTC, **fields)
        assert message in str(info.value), (change, str(info.value))
    add(store, clock, "taken", "@daily")
    with pytest.raises(ToolArgumentError, match="'name': a cron job named 'taken' already exists"):
        add(store, clock, "taken", "@hourly")
    with pytest.raises(ToolArgumentError, match="nothing to update"):
        jobs.update_job(store, "taken", now=clock())
    job = jobs.update_job(store, "taken", now=clock(), tz=UTC, toolsets=[], skills=["s1"], schedule="every 2h")
    assert (job.toolsets, job.skills, job.schedule_kind, job.schedule) == (None, ["s1"], "interval", "every 2h")


def test_prompt_carries_skill_text(tmp_path: Path, store: CronStore, clock: Clock) -> None:
    skills = tmp_path / "skills"
    (skills / "report").mkdir(parents=True)
    (skills / "report" / "SKILL.md").write_text(
        "---\nname: report\ndescription: how to report\n---\n# Reporting\nAlways use bullet points.\n")
    job = add(store, clock, "with-skill", "@daily", skills=["report"])
    prompt = build_prompt(job, skills)
    assert '<skill name="report">\n# Reporting\nAlways use bullet points.\n</skill>' in prompt
    assert "description: how to report" not in prompt
    assert prompt.rstrip().endswith("do with-skill")
    plain = build_prompt(add(store, clock, "plain", "@daily"), skills)
    assert "<skill" not in plain and plain.endswith("do plain")


def test_agent_runner_reports_a_missing_skill(hermes_home: Path, store: CronStore, clock: Clock) -> None:
    from hermes.config.settings import Settings

    job = add(store, clock, "needs-skill", "@daily", skills=["absent"])
    outcome = AgentRunner(Settings.load()).run(job)
    assert outcome.status == "error"
    assert outcome.error is not None and "skill 'absent' is not installed" in outcome.error
