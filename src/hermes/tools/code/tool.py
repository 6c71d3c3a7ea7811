"""``execute_code`` — run a Python script that can call the agent's tools (requirement T-CODE).

The handler works out which tools the script may call (:func:`~hermes.tools.code.limits.allowed_tools`),
then :func:`~hermes.tools.code.runner.run_script` runs it. Each tool call of the script comes back to
this process and goes through a child of the calling session's dispatch — with the same validation, availability checks,
approvals and redaction as a direct call — under a task id derived from the caller's,
``"<task_id>:execute_code"``. That distinct id is what keeps the script's file writes from creating
``write_file`` baselines for the calling task (requirement T-FILE).
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError
from hermes.tools.backends.availability import backend_check
from hermes.tools.code import DEFAULT_ALLOWED_TOOLS, MAX_CODE_CHARS, MAX_TIMEOUT, TOOL_NAME
from hermes.tools.context import SessionView, on_session_end, session_of
from hermes.tools.registry import ToolEntry, ToolRegistry, registry

if TYPE_CHECKING:
    from hermes.tools.session import ToolSession

#: key of this tool family's entry in ``session.state``
STATE_KEY = "execute_code"
TASK_SUFFIX = ":execute_code"

EXECUTE_CODE_SCHEMA: dict[str, Any] = {
    "name": TOOL_NAME,
    "description": (
        "Run a Python 3 script in a child process. The script can call the agent's tools through the "
        "generated module `hermes_tools` (`import hermes_tools`): one function per tool, named like the "
        "tool, taking the tool's parameters as keyword arguments and returning the tool's result as a "
        "dict ({'error': ...} when the tool failed), e.g. `hermes_tools.read_file(path='setup.py')`. "
        "Available by default, when enabled in this session: " + ", ".join(DEFAULT_ALLOWED_TOOLS) + " "
        "(`print(hermes_tools.TOOLS)` lists them; `help(hermes_tools.<name>)` shows the arguments). Use it "
        "to batch many tool calls, loop over files, or process results in code instead of in the "
        "conversation; print what you need to see — only stdout and stderr come back. The working "
        "directory is the agent's; the environment holds no API keys; the standard library and the "
        "agent's installed packages are importable. Limits: `timeout` seconds of wall time (default "
        "120, at most 600; the script and everything it started are killed), 50 tool calls per run, "
        "50,000 characters of stdout (head and tail kept)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "The Python script to run (it may `import hermes_tools`).",
                "minLength": 1,
                "maxLength": MAX_CODE_CHARS,
            },
            "timeout": {
                "type": "integer",
                "description": "Wall-clock limit in seconds (default 120, at most 600).",
                "minimum": 1,
                "maximum": MAX_TIMEOUT,
            },
        },
        "required": ["code"],
    },
}


def _script_state(parent: SessionView) -> dict[str, Any]:
    """The state the script's tool calls share across runs, kept apart from the caller's (it lives in the
    caller's ``state["execute_code"]``), so per-task state of other tools, such as file baselines, never
    mixes with the caller's."""
    mine = parent.state.setdefault(STATE_KEY, {})
    if not isinstance(mine, dict):
        return {}
    found = mine.setdefault("script_state", {})
    return found if isinstance(found, dict) else {}


def _session_tools(session: SessionView | None) -> tuple[str, ...] | None:
    tools = getattr(session, "tools", None)
    if session is None or tools is None:
        return None
    if isinstance(tools, str) or not hasattr(tools, "__iter__"):
        raise ToolError("the calling session's enabled tools could not be read")
    return tuple(str(t) for t in tools)


def _script_session(caller: SessionView | None, reg: ToolRegistry, task_id: str,
                    names: tuple[str, ...]) -> ToolSession:
    """The session the script's tool calls run in: the caller's context with its own task id and state."""
    from hermes.tools.session import SessionContext, ToolSession

    if isinstance(caller, ToolSession):
        return caller.child(task_id=task_id, tools=names, state=_script_state(caller))
    if caller is None:
        return ToolSession(reg, names, SessionContext(task_id=task_id), standalone=True)
    context = SessionContext(surface=caller.surface, sink=caller.sink, settings=caller.settings, task_id=task_id,
                             cancelled=lambda: bool(getattr(caller, "interrupted", False)))
    return ToolSession(reg, names, context, state=_script_state(caller), parent=caller)


def execute_code(args: dict[str, Any], **kw: Any) -> str:
    """The handler: run ``args["code"]`` and return the run's result as JSON."""
    code = args["code"]
    if not isinstance(code, str) or not code.strip():
        raise ToolError("'code' must be a non-empty Python script")
    session = session_of(kw)
    from hermes.tools.code.limits import allowed_tools, load_limits  # first call, not discovery
    from hermes.tools.sandbox import load_policy

    limits = load_limits(session.settings if session is not None else None)
    policy = load_policy(session.settings if session is not None and session.settings is not None else None)
    raw_timeout = args.get("timeout")
    timeout = limits.default_timeout if raw_timeout is None else int(raw_timeout)
    timeout = max(1, min(timeout, MAX_TIMEOUT))

    reg = getattr(session, "registry", None)
    if not isinstance(reg, ToolRegistry):
        reg = registry
    names = allowed_tools(reg, limits.allowed_tools, _session_tools(session))
    entries: list[ToolEntry] = [e for e in (reg.get(n) for n in names) if e is not None]

    parent_task = kw.get("task_id") or (session.task_id if session is not None else None) or "default"
    task_id = f"{parent_task}{TASK_SUFFIX}"
    script = _script_session(session, reg, task_id, names)

    def dispatcher(name: str, call_args: dict[str, Any]) -> str:
        return script.dispatch(name, call_args).text

    from hermes.tools.backends.session import for_call

    backend = for_call(kw)
    if not backend.local:  # the script runs on the execution backend; its tool calls come back here
        from hermes.tools.code.remote import run_remote

        remote = run_remote(backend, code, timeout=timeout, entries=entries, dispatcher=dispatcher, limits=limits)
        remote["tools_available"] = list(names)
        return json.dumps(remote, ensure_ascii=False)

    from hermes.tools.code.runner import run_script  # subprocess, sockets, tempfile: loaded on first use

    def cancelled() -> bool:  # the running turn was interrupted (Ctrl-C, or a parent stopping a child agent)
        return bool(getattr(session, "interrupted", False))

    sandbox_session = f"{parent_task}:execute_code"
    on_session_end(kw, f"execute_code-sandbox:{sandbox_session}", lambda: _end_sandbox(sandbox_session))
    result = run_script(code, timeout=timeout, entries=entries, dispatcher=dispatcher, limits=limits,
                        cancelled=cancelled, policy=policy, session=sandbox_session)
    result["tools_available"] = list(names)
    return json.dumps(result, ensure_ascii=False)


def _end_sandbox(sandbox_session: str) -> None:
    """The session ended: stop its long-lived sandbox for scripts and remove its private folder."""
    from hermes.tools import sandbox, sandbox_pool

    sandbox_pool.drop(sandbox_session)
    sandbox.drop_session_temp(sandbox_session)


def check_execute_code() -> tuple[bool, str | None]:
    """Available on POSIX systems with a Python interpreter to start (instant, offline)."""
    if os.name != "posix":
        return False, "needs a POSIX system (Linux or macOS)"
    return bool(sys.executable), None if sys.executable else "no Python interpreter to start (sys.executable is empty)"


registry.register(
    name=TOOL_NAME,
    toolset="code_execution",
    schema=EXECUTE_CODE_SCHEMA,
    handler=execute_code,
    check_fn=backend_check(check_execute_code),
    # stdout (50,000) + stderr (10,000) characters plus JSON escaping must fit without a second cut
    max_result_chars=100_000,
)
