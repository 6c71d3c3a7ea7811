"""Running a cron job as an agent session: :class:`AgentRunner`, the real :class:`JobRunner`.

Each run is a fresh session on :attr:`Surface.CRON`, stored in ``state.db``, whose final answer is
the run's output. The scheduler (:mod:`hermes.tools.cron.scheduler`) and the ``cronjob_manage`` tool
get runners from here through the session context (``SessionContext.cron_runner``) or the CLI, so the
tools never import the agent package.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError
from hermes.tools.cron.runner import MAX_OUTPUT_CHARS, RunOutcome, build_prompt

if TYPE_CHECKING:
    from hermes.agent.events import Event, Request
    from hermes.agent.loop import Agent
    from hermes.agent.provider import ChatProvider
    from hermes.config.settings import Settings
    from hermes.store.cron import CronJob

logger = logging.getLogger(__name__)


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
