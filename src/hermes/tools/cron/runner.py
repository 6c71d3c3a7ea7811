"""Running one job: a fresh agent session on the cron surface, stored in the SessionStore.

:class:`AgentRunner` is the real runner; anything with the :class:`JobRunner` shape can stand in (tests
use fakes). The prompt is the job's prompt, preceded by the text of each skill the job lists, read
straight from ``HERMES_HOME/skills/<name>/SKILL.md`` (its YAML front matter left out). The run's
output is the agent's final answer. A runner reports failures in its :class:`RunOutcome`; the
scheduler also turns any exception into an ``error`` record, so a bad job never stops the others.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from hermes.errors import HermesError, ToolError
from hermes.tools.cron.jobs import NAME_PATTERN

if TYPE_CHECKING:
    from hermes.agent.events import Event, Request
    from hermes.agent.loop import Agent
    from hermes.agent.provider import ChatProvider
    from hermes.config.settings import Settings
    from hermes.store.cron import CronJob

logger = logging.getLogger(__name__)

#: the most of one SKILL.md put into a prompt
MAX_SKILL_CHARS = 50_000
#: the most of a final answer kept in a run record
MAX_OUTPUT_CHARS = 200_000


@dataclass(frozen=True)
class RunOutcome:
    """How one run ended. ``output`` is the final answer; ``error`` says what went wrong."""

    status: Literal["ok", "error"]
    output: str = ""
    error: str | None = None
    session_id: str | None = None


class JobRunner(Protocol):
    """Runs one job to the end and says how it went."""

    def run(self, job: CronJob) -> RunOutcome: ...

    def interrupt(self) -> None:
        """Stop the run in progress, if any, as soon as possible (called from another thread)."""
        ...


def skill_text(skills_dir: Path, name: str) -> str:
    """The body of ``skills_dir/<name>/SKILL.md`` without its front matter; raises ToolError if missing."""
    if not NAME_PATTERN.match(name):
        raise ToolError(f"skill name {name!r} is not valid")
    path = skills_dir / name / "SKILL.md"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ToolError(f"skill {name!r} is not installed ({path}: {exc.strerror or exc})") from None
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        for end in range(1, len(lines)):
            if lines[end].strip() == "---":
                text = "\n".join(lines[end + 1:])
                break
    text = text.strip()
    if len(text) > MAX_SKILL_CHARS:
        text = text[:MAX_SKILL_CHARS] + f"\n[hermes: skill {name} cut at {MAX_SKILL_CHARS} characters]"
    return text


def build_prompt(job: CronJob, skills_dir: Path) -> str:
    """The text sent as the run's user message: the skills' instructions, then the job's prompt."""
    header = f"[Scheduled job {job.name!r}: nobody is watching; do the task and give the result as your answer.]"
    if not job.skills:
        return f"{header}\n\n{job.prompt}"
    parts = [header, "Skills loaded for this job (follow their instructions where they apply):"]
    for name in job.skills:
        parts.append(f'<skill name="{name}">\n{skill_text(skills_dir, name)}\n</skill>')
    parts.append(f"Task:\n{job.prompt}")
    return "\n\n".join(parts)


class _LogSink:
    """The event sink of a cron session: nobody can answer, tool activity goes to the debug log."""

    def __init__(self, job: str) -> None:
        self.job = job

    def emit(self, event: Event) -> None:
        from hermes.agent.events import Notice, ToolFinished

        if isinstance(event, ToolFinished):
            logger.debug("cron %s: %s %s (%.1fs)", self.job, event.name, "failed" if event.is_error else "ok",
                         event.seconds)
        elif isinstance(event, Notice):
            logger.info("cron %s: %s", self.job, event.message)

    def ask(self, request: Request) -> Any | None:
        return None


class AgentRunner:
    """Runs a job as a fresh agent session on :attr:`Surface.CRON`, stored in ``state.db``.

    ``provider_factory`` replaces the configured model endpoint (tests); the job's ``toolsets`` replace
    the cron surface's default toolsets. The session's meta records the job's id and name.
    """

    def __init__(self, settings: Settings, *, provider_factory: Callable[[], ChatProvider] | None = None) -> None:
        self.settings = settings
        self.provider_factory = provider_factory
        self._lock = threading.Lock()
        self._agent: Agent | None = None
        self._stop = threading.Event()

    def interrupt(self) -> None:
        self._stop.set()
        with self._lock:
            if self._agent is not None:
                self._agent.interrupt()

    def run(self, job: CronJob) -> RunOutcome:
        from hermes.agent.session import new_agent
        from hermes.store.sessions import SessionStore
        from hermes.tools.toolsets import Surface

        self._stop.clear()
        session_id: str | None = None
        try:
            prompt = build_prompt(job, self.settings.paths.home / "skills")
            provider = self.provider_factory() if self.provider_factory else None
            with SessionStore(self.settings.paths.database) as store:
                agent = new_agent(self.settings, Surface.CRON, _LogSink(job.name), requested=job.toolsets,
                                  provider=provider, store=store, title=f"cron: {job.name}")
                session_id = agent.session_id
                if session_id is not None:
                    store.update_meta(session_id, cron_job_id=job.id, cron_job=job.name)
                with self._lock:
                    if self._stop.is_set():
                        return RunOutcome("error", error="the run was interrupted before it started",
                                          session_id=session_id)
                    self._agent = agent
                try:
                    result = agent.run_turn(prompt)
                finally:
                    agent.close()
                    with self._lock:
                        self._agent = None
        except HermesError as exc:
            return RunOutcome("error", error=str(exc), session_id=session_id)
        final = result.final or ""
        if len(final) > MAX_OUTPUT_CHARS:
            final = final[:MAX_OUTPUT_CHARS] + "\n[hermes: output cut]"
        if result.reason == "interrupted":
            return RunOutcome("error", output=final, error="the run was interrupted", session_id=session_id)
        return RunOutcome("ok", output=final, session_id=session_id)
