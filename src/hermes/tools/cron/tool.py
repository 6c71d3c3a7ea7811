"""``cronjob_manage`` — create, list, change, pause, resume, run and remove scheduled agent jobs.

One tool with an ``action`` argument (requirement T-CRON). Jobs live in ``state.db``; the scheduler
(``hermes cron run``, or ``hermes cron tick`` from a system timer) runs them, each run a fresh
session on the cron surface. Cron sessions never get this tool (a job cannot schedule jobs).
``action='run'`` runs a job at once, in the calling process, with the job runner the session's agent
lends it (``SessionContext.cron_runner``), and returns its output.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolArgumentError, ToolError
from hermes.tools.context import session_of
from hermes.tools.cron import MAX_GRACE_SECONDS, MAX_PROMPT, MAX_SKILLS, MAX_TOOLSETS
from hermes.tools.registry import registry

if TYPE_CHECKING:
    from datetime import datetime

    from hermes.config.settings import Settings
    from hermes.store.cron import CronStore
    from hermes.tools.cron.runner import JobRunner

RunnerFactory = Callable[["Settings"], "JobRunner"]

ACTIONS = ("create", "list", "update", "pause", "resume", "run", "remove", "runs")
_JOB_FIELDS = ("name", "prompt", "schedule", "skills", "toolsets", "repeat", "grace_seconds")
#: the arguments each action reads; others are refused so a misplaced field is noticed
ALLOWED: dict[str, frozenset[str]] = {
    "create": frozenset(_JOB_FIELDS),
    "list": frozenset(),
    "update": frozenset({"job", *_JOB_FIELDS}),
    "pause": frozenset({"job"}),
    "resume": frozenset({"job"}),
    "run": frozenset({"job"}),
    "remove": frozenset({"job"}),
    "runs": frozenset({"job", "limit", "full"}),
}

CRONJOB_SCHEMA: dict[str, Any] = {
    "name": "cronjob_manage",
    "description": (
        "Manage scheduled agent jobs. Each run of a job is a fresh agent session that receives the job's "
        "prompt (preceded by the listed skills' instructions); its final answer is kept as the run's output. "
        "Actions: create (name, prompt, schedule; optional skills, toolsets, repeat, grace_seconds), list, "
        "update (job plus the fields to change), pause, resume, run (run the job now and return its output), "
        "remove, runs (a job's past runs with output previews; full=true for whole outputs). Schedules: a "
        "5-field cron expression in local time ('0 9 * * mon-fri', '*/15 * * * *'), a macro ('@daily'), an "
        "interval ('every 30m', '2h', '1d') or an ISO time for a one-shot job ('2026-01-05T09:00'). Missed "
        "runs (no scheduler running) run once if the latest is within the grace window, else are skipped."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS), "description": "What to do."},
            "job": {"type": "string", "maxLength": 200,
                    "description": "The job's name or id (update, pause, resume, run, remove, runs)."},
            "name": {"type": "string", "maxLength": 64,
                     "description": "create: the job's unique name (letters, digits, . _ -); update: a new name."},
            "prompt": {"type": "string", "maxLength": MAX_PROMPT,
                       "description": "What the agent should do on each run."},
            "schedule": {"type": "string", "maxLength": 200,
                         "description": "Cron expression, macro, interval or ISO time (see above)."},
            "skills": {"type": "array", "maxItems": MAX_SKILLS, "items": {"type": "string"},
                       "description": "Skills whose SKILL.md is loaded into each run's prompt."},
            "toolsets": {"type": "array", "maxItems": MAX_TOOLSETS, "items": {"type": "string"},
                         "description": "Toolsets for the runs (default: the cron surface's toolsets)."},
            "repeat": {"type": "integer", "minimum": 0, "maximum": 1_000_000,
                       "description": "Finish the job after this many runs (0: no limit, the default)."},
            "grace_seconds": {"type": "integer", "minimum": 0, "maximum": MAX_GRACE_SECONDS,
                              "description": "How late a missed run may still start (default cron.grace_seconds)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100,
                      "description": "runs: how many of the latest runs to list (default 10)."},
            "full": {"type": "boolean", "description": "runs: include each run's whole output."},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
}

class _Call:
    """One tool call: its arguments, and settings loaded only when an action needs them."""

    def __init__(self, args: dict[str, Any], settings: Settings | None, runner: RunnerFactory | None) -> None:
        self.args = args
        self._settings = settings
        self._runner = runner

    def runner(self) -> JobRunner:
        """The session's job runner (the agent layer lends one to its sessions)."""
        if self._runner is None:
            raise ToolError("running a job now needs an agent session; outside one, use 'hermes cron run' "
                            "or 'hermes cron tick'")
        return self._runner(self.settings)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            from hermes.config.settings import Settings

            self._settings = Settings.load()
        return self._settings

    def get(self, key: str) -> Any:
        return self.args.get(key)

    def job_ref(self, action: str) -> str:
        ref = self.args.get("job")
        if not isinstance(ref, str) or not ref.strip():
            raise ToolArgumentError(f"missing required argument 'job' for action '{action}' (the job's name or id)")
        return ref.strip()


def _now() -> datetime:
    from datetime import datetime  # not at module level: discovery imports this module at start-up

    return datetime.now().astimezone()


def _create(store: CronStore, call: _Call) -> dict[str, Any]:
    from hermes.tools.cron import jobs

    for key in ("name", "prompt", "schedule"):
        if call.get(key) is None:
            raise ToolArgumentError(f"missing required argument '{key}' for action 'create'")
    job = jobs.create_job(store, now=_now(), **{k: call.get(k) for k in _JOB_FIELDS})
    message = f"Created cron job {job.name!r}; first run at {jobs.fmt_time(job.next_run_at)}."
    result: dict[str, Any] = {"success": True, "job": jobs.job_view(job), "message": message}
    warnings = [f"skill {s!r} is not installed yet; runs fail until it is"
                for s in jobs.missing_skills(job, call.settings.paths.home)]
    problem = jobs.endpoint_problem(call.settings)
    if problem:
        warnings.append(f"{problem} Every run fails until one is configured ('hermes setup').")
    if warnings:
        result["warnings"] = warnings
    return result


def _list(store: CronStore, call: _Call) -> dict[str, Any]:
    from hermes.tools.cron import jobs

    views = []
    for job in store.list_jobs():
        view = jobs.job_view(job)
        view["prompt"] = jobs.preview(job.prompt, 120)
        views.append(view)
    return {"count": len(views), "jobs": views}


def _update(store: CronStore, call: _Call) -> dict[str, Any]:
    from hermes.tools.cron import jobs

    job = jobs.update_job(store, call.job_ref("update"), now=_now(), **{k: call.get(k) for k in _JOB_FIELDS})
    return {"success": True, "job": jobs.job_view(job)}


def _pause(store: CronStore, call: _Call) -> dict[str, Any]:
    from hermes.tools.cron import jobs

    return {"success": True, "job": jobs.job_view(jobs.pause_job(store, call.job_ref("pause")))}


def _resume(store: CronStore, call: _Call) -> dict[str, Any]:
    from hermes.tools.cron import jobs

    return {"success": True, "job": jobs.job_view(jobs.resume_job(store, call.job_ref("resume"), now=_now()))}


def _run(store: CronStore, call: _Call) -> dict[str, Any]:
    from hermes.tools.cron import jobs
    from hermes.tools.cron.scheduler import Scheduler

    job = store.get_job(call.job_ref("run"))
    scheduler = Scheduler(store, call.runner(), grace_seconds=jobs.default_grace(call.settings))
    run = scheduler.run_now(job.id)
    return {"success": run.status == "ok", "job": job.name, "run": jobs.run_view(run, full=True)}


def _remove(store: CronStore, call: _Call) -> dict[str, Any]:
    job = store.get_job(call.job_ref("remove"))
    store.delete_job(job.id)
    return {"success": True, "removed": job.name, "id": job.id}


def _runs(store: CronStore, call: _Call) -> dict[str, Any]:
    from hermes.tools.cron import jobs

    job = store.get_job(call.job_ref("runs"))
    limit = call.get("limit") or 10
    runs = store.runs(job.id, limit=limit)
    return {"job": job.name, "count": len(runs),
            "runs": [jobs.run_view(r, full=bool(call.get("full"))) for r in runs]}


_HANDLERS: dict[str, Callable[[CronStore, _Call], dict[str, Any]]] = {
    "create": _create, "list": _list, "update": _update, "pause": _pause, "resume": _resume, "run": _run,
    "remove": _remove, "runs": _runs,
}


def _refuse_board_tools(toolsets: Any) -> None:
    """A job a model schedules never gets the kanban board tools: it would create tasks on every run,
    long after the session that scheduled it (a person can still give them with ``hermes cron``)."""
    if not isinstance(toolsets, list) or not all(isinstance(t, str) for t in toolsets):
        return  # the job checks report the malformed value
    from hermes.tools.toolsets import KANBAN_BOARD, TOOLSETS, Surface, resolve_toolsets

    known = [t for t in toolsets if t in TOOLSETS or t == "all"]
    tools = set(resolve_toolsets(Surface.CRON, known, registered=registry.toolsets()).tools) if known else set()
    if tools & set(KANBAN_BOARD):
        raise ToolError(f"toolsets {toolsets!r:.200} would give the scheduled job the kanban board tools "
                        "(kanban_create …); a job scheduled by an agent may not have them — leave out "
                        "'kanban' (and 'all'), or ask the person to add it with 'hermes cron'")


def cronjob_manage(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """The tool's handler: check the action's arguments, then act on the cron store of HERMES_HOME."""
    from hermes.config.paths import HermesPaths
    from hermes.store.cron import CronStore
    from hermes.tools.toolsets import Surface

    session = session_of(kw)
    if session is not None and session.surface == Surface.CRON:
        raise ToolError("cronjob_manage is not available inside a scheduled job")
    action = args["action"]
    extra = sorted(k for k, v in args.items() if v is not None and k != "action" and k not in ALLOWED[action])
    if extra:
        used = ", ".join(f"'{k}'" for k in sorted(ALLOWED[action])) or "no other arguments"
        raise ToolArgumentError(f"'{extra[0]}' is not used by action '{action}' (it takes {used})")
    if action in ("create", "update"):
        _refuse_board_tools(args.get("toolsets"))
    settings = session.settings if session is not None else None
    path = settings.paths.database if settings is not None else HermesPaths.current().database
    from hermes.tools.session import ToolSession

    caller = kw.get("session")
    runner = caller.context.cron_runner if isinstance(caller, ToolSession) else None
    with CronStore(path) as store:
        return _HANDLERS[action](store, _Call(args, settings, runner))


registry.register(
    name="cronjob_manage",
    toolset="cronjob",
    schema=CRONJOB_SCHEMA,
    handler=cronjob_manage,
    check_fn=lambda: True,
    requires_env=[],
    parallel_safe=False,
)
