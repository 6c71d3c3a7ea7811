"""What running one job means, independent of who runs it: the :class:`JobRunner` shape, its
:class:`RunOutcome`, and the prompt a run receives.

The real runner (a fresh agent session on the cron surface) lives above the tools, in
:mod:`hermes.agent.cron`; anything with the :class:`JobRunner` shape can stand in (tests use fakes).
The prompt is the job's prompt, preceded by the text of each skill the job lists, read straight from
``HERMES_HOME/skills/<name>/SKILL.md`` (its YAML front matter left out). A runner reports failures in
its :class:`RunOutcome`; the scheduler also turns any exception into an ``error`` record, so a bad job
never stops the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from hermes.errors import ToolError
from hermes.tools.cron.jobs import NAME_PATTERN

if TYPE_CHECKING:
    from hermes.store.cron import CronJob


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
