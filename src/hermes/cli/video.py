"""``hermes video jobs|resume|models``: the stored video renders, and the models of a video backend.

``jobs`` lists what ``HERMES_HOME/video_jobs.db`` holds, newest first: id, state, backend and model, the
cost estimate, the queue position or progress, and the saved file or the error. ``resume`` polls an
unfinished job (or all of them) again until it ends or ``video_gen.wait_seconds`` pass, and saves the
result like the tool does; nothing is submitted or paid again. ``models [BACKEND] [--refresh]`` lists a
backend's models and what each accepts (a live catalog, OpenRouter's, is fetched and cached). Only
argparse is imported at module level.
"""

from __future__ import annotations

import argparse
import time
from typing import Any


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="video_command", metavar="SUBCOMMAND")
    jobs = sub.add_parser("jobs", help="list stored video jobs, newest first")
    jobs.add_argument("--json", action="store_true", help="print JSON instead of text")
    jobs.add_argument("--limit", type=int, default=50, help="how many jobs to show (default: 50)")
    resume = sub.add_parser("resume", help="poll an unfinished video job (or all of them) again; pays nothing")
    resume.add_argument("job", nargs="?", metavar="JOB", help="a job id from 'hermes video jobs' (default: all "
                                                              "unfinished)")
    resume.add_argument("--json", action="store_true", help="print JSON instead of text")
    models = sub.add_parser("models", help="the models of a video backend and what each accepts (live catalogs "
                                           "are fetched and cached)")
    models.add_argument("backend", nargs="?", metavar="BACKEND",
                        help="fal, xai, openrouter or a plugin (default: video_gen.provider, else fal)")
    models.add_argument("--refresh", action="store_true", help="read a live catalog again")
    models.add_argument("--json", action="store_true", help="print JSON instead of text")


def _age(seconds: float) -> str:
    ago = max(0.0, time.time() - seconds)
    if ago < 120:
        return f"{ago:.0f}s ago"
    if ago < 7200:
        return f"{ago / 60:.0f}m ago"
    return f"{ago / 3600:.0f}h ago" if ago < 172_800 else f"{ago / 86_400:.0f}d ago"


def _line(job: dict[str, Any]) -> str:
    state = str(job["state"])
    if state == "queued" and job["queue_position"] is not None:
        state += f" (position {job['queue_position']})"
    elif state == "running" and job["progress"] is not None:
        state += f" ({job['progress']}%)"
    cost = f"~${job['cost_estimate_usd']:.2f}" if job["cost_estimate_usd"] is not None else "cost unknown"
    where = job["path"] or job["error"] or ""
    return (f"{job['id']}  {state:<22} {job['kind']:<8} {job['backend']}/{job['model']}  {cost}  "
            f"{_age(job['created_at'])}  {where}").rstrip()


def _models(settings: Any, args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    from hermes.tools.asyncbridge import run_sync
    from hermes.tools.routed.context import RoutedContext
    from hermes.tools.video.backend import backend_models

    ctx = RoutedContext(settings)
    provider = ctx.get_str("video_gen.provider")
    name = args.backend or (provider if provider and provider != "nous" else "fal")
    backend, models = run_sync(backend_models(ctx, name, refresh=args.refresh))
    if args.json:
        print(json.dumps([{"id": m.id, "name": m.display, "capabilities": asdict(m.capabilities),
                           "price_per_second_usd": m.price_per_second} for m in models], indent=2))
        return 0
    chosen = ctx.get_str("video_gen.model") if provider == name else None
    print(f"{backend.display} ({name}) — {len(models)} models" + (" (live catalog)" if backend.live_catalog else ""))
    for m in models:
        mark = "*" if m.id == (chosen or backend.default_model) else " "
        print(f" {mark} {m.id}  {m.display}\n     {m.capabilities.summary()}")
    return 0


def run(args: argparse.Namespace) -> int:
    import json

    from hermes.config.settings import Settings

    command = getattr(args, "video_command", None) or "jobs"
    settings = Settings.load()
    if command == "models":
        return _models(settings, args)
    if command == "resume":
        from hermes.tools.asyncbridge import run_sync
        from hermes.tools.routed.context import RoutedContext
        from hermes.tools.video.resume import resume_jobs

        results = run_sync(resume_jobs(RoutedContext(settings), args.job, {}))
        if args.json:
            print(json.dumps(results, indent=2, ensure_ascii=False))
        elif not results:
            print("No unfinished video jobs.")
        for item in results if not args.json else []:
            if item.get("success"):
                print(f"{item['job_id']}: done — {item['path']}")
            elif item.get("status") == "pending":
                print(f"{item['job_id']}: still rendering ({item['state']}); run it again later")
            else:
                print(f"{item['job_id']}: {item.get('state') or 'error'} — {item.get('error') or item.get('path')}")
        return 1 if any("error" in i and i.get("state") != "failed" for i in results) else 0
    from hermes.store.video_jobs import FILE_NAME, VideoJobStore

    path = settings.paths.home / FILE_NAME
    jobs: list[dict[str, Any]] = []
    if path.exists():
        with VideoJobStore(path) as store:
            jobs = [j.to_json() for j in store.recent(max(1, args.limit))]
    if args.json:
        print(json.dumps(jobs, indent=2, ensure_ascii=False))
    elif not jobs:
        print("No video jobs yet (video_generate stores each render here).")
    else:
        print("\n".join(_line(j) for j in jobs))
    return 0
