"""The ``kanban`` toolset (requirements TS-7, T-KAN): 14 tools over the board in ``HERMES_HOME/kanban.db``.

Who the agent is decides what it gets (:func:`role`): a **worker** — started by the dispatcher with
``HERMES_KANBAN_TASK`` set — has the 9 lifecycle tools (:mod:`.lifecycle`), and only for its own task;
an **orchestrator** — a profile that enables the ``kanban`` toolset — also has the 5 board tools
(:mod:`.boardtools`). Documented in docs/tools/kanban.md.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError

if TYPE_CHECKING:
    from hermes.store.kanban.board import Board

TASK_ENV = "HERMES_KANBAN_TASK"

#: the lifecycle tools a worker has for its own task
WORKER_TOOLS = (
    "kanban_show", "kanban_complete", "kanban_block", "kanban_heartbeat", "kanban_comment", "kanban_attach",
    "kanban_attach_url", "kanban_attachments", "kanban_request_review",
)
#: the board tools only an orchestrator has
ORCHESTRATOR_TOOLS = ("kanban_list", "kanban_create", "kanban_link", "kanban_unblock", "kanban_review")
KANBAN_TOOLS = WORKER_TOOLS + ORCHESTRATOR_TOOLS


def worker_task() -> str | None:
    """The task this process works on (``HERMES_KANBAN_TASK``), or None for an orchestrator."""
    return os.environ.get(TASK_ENV) or None


def role() -> str:
    return "worker" if worker_task() else "orchestrator"


def author() -> str:
    """The name events and comments are recorded under: the profile, else the role."""
    return os.environ.get("HERMES_PROFILE") or role()


def not_a_worker() -> bool:
    """check_fn of the board tools: a worker never sees them."""
    return worker_task() is None


def require_orchestrator(tool: str) -> None:
    """Refuse a board tool to a worker (the schema list leaves them out; this holds at dispatch too)."""
    task = worker_task()
    if task is not None:
        raise ToolError(f"{tool} is an orchestrator tool; this agent is the worker of task {task} and may only"
                        " use the lifecycle tools on its own task")


def target_task(tool: str, args: dict[str, Any]) -> str:
    """The task a lifecycle tool acts on: a worker's own (another id is refused), else ``task_id``."""
    own = worker_task()
    given = args.get("task_id")
    if own is not None:
        if given and given != own:
            raise ToolError(f"{tool}: a worker may only act on its own task {own}, not {given}")
        return own
    if not given:
        raise ToolError(f"{tool}: task_id is required (this agent is not a kanban worker)")
    return str(given)


def open_board(kw: dict[str, Any]) -> Board:
    """The board this agent works on (:meth:`~hermes.store.kanban.config.KanbanConfig.open_board`)."""
    from hermes.store.kanban.config import KanbanConfig
    from hermes.tools.context import session_of

    session = session_of(kw)
    settings = session.settings if session is not None else None
    if settings is None:
        from hermes.config.settings import Settings

        settings = Settings.load()
    return KanbanConfig.from_config(settings.config.data or {}).open_board()
