"""The ``delegate_task`` handler: child agents with their own budget, run in parallel (requirement T-DEL).

A child is a fresh :class:`~hermes.agent.loop.Agent` on the parent's model with

* the parent's frozen tools, narrowed to the toolsets the call names, minus the tools a child never
  gets (``clarify``, ``memory``, ``execute_code``, ``cronjob_manage``, and ``delegate_task`` unless the
  depth limit ``delegation.max_depth`` allows a grandchild);
* its own iteration budget (``delegation.max_iterations``) and nobody to ask: its sink answers every
  request with ``None``, so approvals are denied and questions undelivered;
* its own stored session whose ``parent_id`` is the parent's session.

At most ``delegation.max_concurrent_children`` children run at once. Interrupting the parent
(Ctrl-C or ``Agent.interrupt``) interrupts every running child; a child past
``delegation.child_timeout_seconds`` is interrupted and reported as ``timeout``.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes.agent.events import Event, Notice, Request, ToolFinished, ToolStarted
from hermes.agent.prompt import build_system_prompt
from hermes.errors import HermesError, ToolArgumentError
from hermes.tools.results import fit_result
from hermes.tools.toolsets import TOOLSETS, resolve_toolsets

if TYPE_CHECKING:
    from hermes.agent.loop import Agent

NEVER_FOR_CHILDREN = frozenset({"clarify", "memory", "execute_code", "cronjob_manage", "send_message"})
SUMMARY_CAP = 24_000


@dataclass(frozen=True)
class DelegationLimits:
    max_iterations: int = 20
    max_concurrent: int = 3
    max_depth: int = 1
    child_timeout: float | None = None

    @classmethod
    def from_agent(cls, agent: Agent) -> DelegationLimits:
        get = agent.settings.get if agent.settings is not None else (lambda _k, d=None: d)
        timeout = get("delegation.child_timeout_seconds")
        return cls(
            max_iterations=int(get("delegation.max_iterations", 20) or 20),
            max_concurrent=max(1, int(get("delegation.max_concurrent_children", 3) or 3)),
            max_depth=int(get("delegation.max_depth", 1) or 0),
            child_timeout=float(timeout) if timeout else None,
        )


class ChildSink:
    """Shows a child's tool activity in the parent's sink, prefixed; nobody answers its requests."""

    def __init__(self, parent: Agent, label: str) -> None:
        self.parent = parent
        self.label = label

    def emit(self, event: Event) -> None:
        if isinstance(event, ToolStarted):
            self.parent.sink.emit(Notice("info", f"[{self.label}] ⚙ {event.name}"))
        elif isinstance(event, ToolFinished) and event.is_error:
            self.parent.sink.emit(Notice("info", f"[{self.label}] ✗ {event.name}"))

    def ask(self, request: Request) -> Any | None:
        return None


def _tasks(args: dict[str, Any]) -> list[dict[str, Any]]:
    if args.get("tasks") and args.get("goal"):
        raise ToolArgumentError("give either 'goal' or 'tasks', not both")
    if args.get("tasks"):
        return list(args["tasks"])
    if not args.get("goal"):
        raise ToolArgumentError("missing required argument 'goal' (or 'tasks' for a batch)")
    return [{"goal": args["goal"], "context": args.get("context", ""), "toolsets": args.get("toolsets")}]


def child_tools(parent: Agent, toolsets: list[str] | None, depth_allows: bool) -> tuple[str, ...]:
    allowed = set(parent.tools)
    if toolsets:
        resolved = resolve_toolsets(parent.surface, toolsets, registered=parent.registry.toolsets())
        allowed &= set(resolved.tools)
    blocked = set(NEVER_FOR_CHILDREN)
    if not depth_allows:
        blocked.add("delegate_task")
    return tuple(t for t in parent.tools if t in allowed and t not in blocked)


def _check_toolsets(parent: Agent, toolsets: list[str] | None, index: int) -> None:
    known = set(TOOLSETS) | set(parent.registry.toolsets())
    for name in toolsets or []:
        if name not in known and name != "all":
            raise ToolArgumentError(f"'tasks[{index}].toolsets' names an unknown toolset {name!r}")


def _child_prompt(parent: Agent, tools: tuple[str, ...], goal: str, context: str) -> str:
    section = (
        "You are a sub-agent working on one delegated task for another agent. Nobody can answer "
        "questions: work autonomously with the tools you have. When done, answer with a concise, "
        "self-contained summary of what you did and found (facts, file paths, numbers), because that "
        f"summary is all the other agent will see.\n\nGoal: {goal}"
    )
    if context:
        section += f"\n\nContext:\n{context}"
    return build_system_prompt(parent.surface, tools, sections=[section])


def run_delegation(args: dict[str, Any], parent: Agent) -> str:
    from hermes.agent.loop import Agent, AgentConfig

    limits = DelegationLimits.from_agent(parent)
    if parent.depth >= limits.max_depth:
        raise HermesError(f"delegation depth limit reached (delegation.max_depth is {limits.max_depth})")
    tasks = _tasks(args)
    for i, task in enumerate(tasks):
        _check_toolsets(parent, task.get("toolsets"), i)
    iterations = min(int(args.get("max_iterations") or limits.max_iterations), limits.max_iterations)
    depth_allows = parent.depth + 1 < limits.max_depth

    children: list[Agent] = []
    for i, task in enumerate(tasks):
        tools = child_tools(parent, task.get("toolsets"), depth_allows)
        session_id = None
        if parent.store is not None:
            session_id = parent.store.create_session(
                surface=parent.surface.value, model=parent.provider.model, toolsets=list(task.get("toolsets") or []),
                tools=list(tools), title=f"delegated: {task['goal'][:60]}", parent_id=parent.session_id,
                meta={"delegated": True},
            )
        child = Agent(
            provider=parent.provider, registry=parent.registry, sink=ChildSink(parent, f"child {i + 1}"),
            surface=parent.surface, tools=tools, messages=[], config=AgentConfig(
                max_iterations=iterations, max_parallel_tools=parent.config.max_parallel_tools),
            store=parent.store, session_id=session_id,
            settings=parent.settings, depth=parent.depth + 1,
        )
        child.append({"role": "system", "content": _child_prompt(parent, tools, task["goal"], task.get("context", ""))})
        children.append(child)

    started = time.monotonic()
    results: list[dict[str, Any]] = [{} for _ in tasks]
    timed_out: set[int] = set()

    def work(i: int) -> None:
        t0 = time.monotonic()
        try:
            try:
                outcome = children[i].run_turn(tasks[i]["goal"])
            finally:
                children[i].close()
            status = {"answered": "completed", "budget_exhausted": "completed",
                      "interrupted": "timeout" if i in timed_out else "interrupted"}.get(outcome.reason, "failed")
            results[i] = {"status": status, "summary": outcome.final, "iterations": outcome.iterations,
                          "tool_calls": outcome.tool_calls, "stop_reason": outcome.reason}
        except HermesError as exc:
            results[i] = {"status": "error", "summary": "", "error": str(exc)}
        results[i].update(goal=tasks[i]["goal"], session_id=children[i].session_id,
                          duration_seconds=round(time.monotonic() - t0, 2))

    pool = ThreadPoolExecutor(max_workers=min(limits.max_concurrent, len(tasks)), thread_name_prefix="hermes-child")
    futures: dict[Future[None], int] = {pool.submit(work, i): i for i in range(len(tasks))}
    try:
        pending = set(futures)
        while pending:
            _done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            if parent.interrupted:
                for child in children:
                    child.interrupt()
            if limits.child_timeout is not None and time.monotonic() - started > limits.child_timeout:
                for fut in pending:
                    timed_out.add(futures[fut])
                    children[futures[fut]].interrupt()
    except BaseException:
        for child in children:
            child.interrupt()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    for i, r in enumerate(results):
        if not r:  # cancelled before it started
            r.update(status="interrupted", summary="", goal=tasks[i]["goal"], session_id=children[i].session_id)

    cap = max(1000, SUMMARY_CAP // len(tasks))
    for r in results:
        r["summary"] = fit_result(r.get("summary") or "", cap, tool="delegate_task",
                                  spill_dir=parent.session.context.spill_dir)
    return json.dumps({"results": results, "total_duration_seconds": round(time.monotonic() - started, 2)},
                      ensure_ascii=False)


