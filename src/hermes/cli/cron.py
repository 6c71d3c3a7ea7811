"""``hermes cron``: manage scheduled agent jobs and run the scheduler (requirement T-CRON).

``list``, ``add``, ``update``, ``remove``, ``pause``, ``resume`` and ``runs`` manage jobs;
``tick`` runs one pass of the scheduler and exits 0; ``run`` is the long-running scheduler (a tick
every 30 s, one per HERMES_HOME, stopped by Ctrl-C or SIGTERM). See docs/tools/cron.md.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from hermes.cli.common import add_model_flags

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.store.cron import CronStore
    from hermes.tools.cron.scheduler import Scheduler, TickOutcome


def _job_fields(parser: argparse.ArgumentParser, *, create: bool) -> None:
    parser.add_argument("--name", required=create, help="unique job name (letters, digits, . _ -)"
                        + ("" if create else "; renames the job"))
    parser.add_argument("--schedule", required=create,
                        help="cron expression ('0 9 * * mon-fri'), macro ('@daily'), interval ('every 30m') "
                             "or ISO time ('2026-01-05T09:00')")
    parser.add_argument("--prompt", required=create, help="what the agent should do on each run")
    parser.add_argument("--skill", action="append", dest="skills", metavar="NAME",
                        help="load this skill's SKILL.md into each run (repeatable)")
    parser.add_argument("--toolsets", dest="job_toolsets", metavar="A,B",
                        help="toolsets for the runs (default: the cron surface's toolsets)")
    parser.add_argument("--repeat", type=int, metavar="N", help="finish after N runs (0: no limit)")
    parser.add_argument("--grace", type=int, dest="grace_seconds", metavar="SECONDS",
                        help="how late a missed run may still start (default cron.grace_seconds, 3600)")


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="cron_command", metavar="ACTION", required=True)
    sp = sub.add_parser("list", help="list jobs with their next and last runs")
    sp.add_argument("--json", action="store_true", help="print JSON")
    sp = sub.add_parser("add", help="add a job (refused when no model endpoint would run it)")
    _job_fields(sp, create=True)
    sp.add_argument("--no-endpoint-check", action="store_true",
                    help="add it even though no model endpoint is configured (the scheduler will get one "
                         "from its --base-url/--model flags)")
    sp = sub.add_parser("update", help="change a job's fields")
    sp.add_argument("job", help="job name or id")
    _job_fields(sp, create=False)
    for name, text in (("remove", "remove a job and its run records"), ("pause", "stop a job until resumed"),
                       ("resume", "let a paused job run again")):
        sub.add_parser(name, help=text).add_argument("job", help="job name or id")
    sp = sub.add_parser("runs", help="list a job's past runs with their output")
    sp.add_argument("job", help="job name or id")
    sp.add_argument("--limit", "-n", type=int, default=10, help="how many of the latest runs (default 10)")
    sp.add_argument("--full", action="store_true", help="print each run's whole output")
    sp.add_argument("--json", action="store_true", help="print JSON")
    sp = sub.add_parser("tick", help="run one scheduler pass: every due job, then exit 0")
    add_model_flags(sp)
    sp = sub.add_parser("run", help="run the scheduler until Ctrl-C or SIGTERM")
    sp.add_argument("--interval", type=float, default=30.0, metavar="SECONDS", help="seconds between ticks (30)")
    add_model_flags(sp)


def _print_json(data: Any) -> None:
    import json

    print(json.dumps(data, indent=2, ensure_ascii=False))


def _changes(args: argparse.Namespace) -> dict[str, Any]:
    toolsets = args.job_toolsets
    return {
        "name": args.name, "prompt": args.prompt, "schedule": args.schedule, "skills": args.skills,
        "toolsets": [t.strip() for t in toolsets.split(",") if t.strip()] if toolsets is not None else None,
        "repeat": args.repeat, "grace_seconds": args.grace_seconds,
    }


def _list(store: CronStore, args: argparse.Namespace) -> int:
    from hermes.tools.cron.jobs import job_view

    views = [job_view(j) for j in store.list_jobs()]
    if args.json:
        _print_json(views)
        return 0
    if not views:
        print("no cron jobs yet; add one with: hermes cron add --name N --schedule S --prompt P")
        return 0
    rows = [("NAME", "STATE", "SCHEDULE", "NEXT RUN", "LAST RUN", "LAST", "RUNS")]
    rows += [(v["name"], v["state"], v["schedule"], v["next_run_at"] or "-", v["last_run_at"] or "-",
              v["last_status"] or "-", str(v["runs"]) + (f"/{v['repeat']}" if v["repeat"] else "")) for v in views]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return 0


def _runs(store: CronStore, args: argparse.Namespace) -> int:
    from hermes.tools.cron.jobs import fmt_time, run_view

    job = store.get_job(args.job)
    views = [run_view(r, full=args.full or args.json) for r in store.runs(job.id, limit=args.limit)]
    if args.json:
        _print_json({"job": job.name, "runs": views})
        return 0
    if not views:
        print(f"{job.name}: no runs yet (next run: {fmt_time(job.next_run_at) or '-'})")
        return 0
    for v in views:
        when = v["scheduled_for"] or v["started_at"]
        head = f"#{v['id']} {when} {v['status']}" + (" (manual)" if v["trigger"] == "manual" else "")
        if v["session_id"]:
            head += f" session {v['session_id']}"
        print(head)
        if v["error"]:
            print(f"  error: {v['error']}")
        text = v.get("output") if args.full else v.get("output_preview")
        if text:
            print("  " + "\n  ".join(str(text).splitlines()))
    return 0


def _describe(outcome: TickOutcome) -> str:
    session = f" (session {outcome.session_id})" if outcome.session_id else ""
    return f"{outcome.job}: {outcome.message}{session}"


def _scheduler(settings: Settings, store: CronStore, **kw: Any) -> Scheduler:
    from hermes.agent.cron import AgentRunner
    from hermes.tools.cron.jobs import default_grace
    from hermes.tools.cron.scheduler import Scheduler

    return Scheduler(store, AgentRunner(settings), grace_seconds=default_grace(settings), **kw)


def _tick(settings: Settings, store: CronStore) -> int:
    from hermes.cli.common import eprint
    from hermes.tools.cron.service import SchedulerLock, lock_path

    lock = SchedulerLock(lock_path(settings.paths.home))
    if not lock.acquire():
        eprint(f"cron: another scheduler is running (pid {lock.holder()}); nothing done")
        return 0
    try:
        outcomes = _scheduler(settings, store).tick()
    finally:
        lock.release()
    for outcome in outcomes:
        print(_describe(outcome))
    if not outcomes:
        print("cron: nothing due")
    return 0


def _serve(settings: Settings, store: CronStore, interval: float) -> int:
    import os
    import signal
    import threading
    import time
    from types import FrameType

    from hermes.cli.common import eprint
    from hermes.tools.cron.service import SchedulerLock, lock_path, serve

    if interval <= 0:
        from hermes.errors import ConfigError

        raise ConfigError("--interval must be a positive number of seconds")
    stop = threading.Event()
    with SchedulerLock(lock_path(settings.paths.home)):
        closed = store.fail_stale_runs(message="the scheduler stopped before the run finished")
        if closed:
            eprint(f"cron: {closed} run(s) left unfinished by an earlier scheduler marked as errors")
        scheduler = _scheduler(settings, store, min_grace=interval * 2 + 5, stop=stop)

        def on_signal(signum: int, frame: FrameType | None) -> None:
            if stop.is_set() and signum == signal.SIGINT:
                raise KeyboardInterrupt
            stop.set()
            scheduler.runner.interrupt()

        previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        eprint(f"cron: scheduler started (pid {os.getpid()}, tick every {interval:g} s); "
               "Ctrl-C to stop")

        def report(outcome: TickOutcome) -> None:
            print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {_describe(outcome)}", flush=True)

        problems: list[str] = []

        def reload() -> None:
            """Pick up config.yaml changes (model, toolsets, grace) from the next run on."""
            from hermes.config.settings import Settings
            from hermes.errors import HermesError
            from hermes.tools.cron.jobs import default_grace

            try:
                fresh = Settings.load(paths=settings.paths, overrides=settings.overrides)
                scheduler.grace_seconds = default_grace(fresh)
            except HermesError as exc:  # keep the last good settings; say so once per new problem
                if str(exc) not in problems:
                    problems.append(str(exc))
                    eprint(f"cron: configuration not reloaded: {exc}")
                return
            problems.clear()
            if hasattr(scheduler.runner, "settings"):
                scheduler.runner.settings = fresh

        try:
            serve(scheduler, interval=interval, stop=stop, report=report, before_tick=reload,
                  on_error=lambda msg: eprint(f"cron: {msg}"))
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    eprint("cron: scheduler stopped")
    return 0


def run(args: argparse.Namespace) -> int:
    from datetime import datetime

    from hermes.cli.common import eprint, export_dotenv, load_settings
    from hermes.errors import UsageError
    from hermes.store.cron import CronStore
    from hermes.tools.cron import jobs

    settings = load_settings(args)
    command = args.cron_command
    now = datetime.now().astimezone()
    with CronStore(settings.paths.database) as store:
        if command == "list":
            return _list(store, args)
        if command == "runs":
            return _runs(store, args)
        if command == "add":
            problem = jobs.endpoint_problem(settings)
            if problem and not args.no_endpoint_check:
                raise UsageError(
                    f"the job was not added: {problem} Configure one first ('hermes setup'), or add the job "
                    "with --no-endpoint-check when the scheduler gets one on its command line "
                    "('hermes cron run --base-url URL --model NAME')."
                )
            job = jobs.create_job(store, now=now, **_changes(args))
            if problem:
                eprint(f"warning: {problem} Runs fail unless the scheduler is given an endpoint.")
            print(f"added {job.name} ({job.schedule}); first run at {jobs.fmt_time(job.next_run_at)}")
            for skill in jobs.missing_skills(job, settings.paths.home):
                eprint(f"warning: skill {skill!r} is not installed yet; runs fail until it is")
            return 0
        if command == "update":
            job = jobs.update_job(store, args.job, now=now, **_changes(args))
            print(f"updated {job.name} ({job.schedule}, {job.state}); next run at {jobs.fmt_time(job.next_run_at)}")
            return 0
        if command == "remove":
            job = store.get_job(args.job)
            store.delete_job(job.id)
            print(f"removed {job.name}")
            return 0
        if command in ("pause", "resume"):
            job = jobs.pause_job(store, args.job) if command == "pause" else jobs.resume_job(store, args.job, now=now)
            nxt = f", next run at {jobs.fmt_time(job.next_run_at)}" if job.enabled else ""
            print(f"{job.name}: {job.state}{nxt}")
            return 0
        export_dotenv(settings)
        if command == "tick":
            return _tick(settings, store)
        return _serve(settings, store, float(args.interval))
