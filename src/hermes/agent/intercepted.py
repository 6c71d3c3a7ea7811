"""The tools the agent loop answers itself because they need the session's state (SPEC REG-7).

Their schemas live in the registry like every other tool's; this module maps their names to
handlers that receive the parsed arguments and the :class:`~hermes.agent.loop.Agent`. Families that
add an intercepted tool (memory, session_search, delegate_task) add their handler here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes.tools.todo.tool import TodoList

if TYPE_CHECKING:
    from hermes.agent.loop import Agent, InterceptHandler


def _todo(args: dict[str, Any], agent: Agent) -> str:
    todo = agent.state.get("todo_list")
    if not isinstance(todo, TodoList):
        todo = TodoList()
        agent.state["todo_list"] = todo
    return todo.apply(args)


def _delegate(args: dict[str, Any], agent: Agent) -> str:
    from hermes.agent.delegation import run_delegation

    return run_delegation(args, agent)


def _memory(args: dict[str, Any], agent: Agent) -> str:
    from hermes.tools.memory.tool import handle_memory

    return handle_memory(args, agent)


def _session_search(args: dict[str, Any], agent: Agent) -> str:
    from hermes.tools.sessions.tool import handle_session_search

    return handle_session_search(args, agent)


def default_intercepts() -> dict[str, InterceptHandler]:
    return {"todo_list": _todo, "delegate_task": _delegate, "memory": _memory, "session_search": _session_search}
