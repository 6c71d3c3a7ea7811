"""``terminal`` and ``process_manage``: shell commands and the background processes they start (T-TERM).

Each ``terminal`` call runs in a fresh ``bash -c`` (a ``cd`` does not carry over: use ``workdir``), with
a timeout that kills the whole process group, stdout and stderr merged and capped (head and tail kept
around a marker), and an environment without hermes's secrets (``terminal.env_passthrough`` lists the
exceptions). Every command goes through the dangerous-command approval of
:mod:`~hermes.tools.terminal.gate` first. See docs/tools/terminal.md.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError
from hermes.redact import redact, secret_values
from hermes.tools.backends.availability import backend_check
from hermes.tools.context import SessionView, on_session_end, session_of
from hermes.tools.registry import registry

if TYPE_CHECKING:
    from hermes.tools.backends.base import Backend
    from hermes.tools.terminal.processes import BackgroundProcess

# The detector, the approval flow and the process manager are imported by the handlers on first use,
# so discovering the tools (every session start) costs only this module.

DEFAULT_TIMEOUT = 180
MAX_TIMEOUT = 600
MAX_COMMAND_CHARS = 1_000_000
LOG_LIMIT = 200
MAX_LOG_LIMIT = 2000

TERMINAL_SCHEMA: dict[str, Any] = {
    "name": "terminal",
    "description": (
        "Run a shell command with bash and return its output (stdout and stderr merged, long output cut in "
        "the middle), exit code and duration. Each call is a fresh shell: use 'workdir' instead of cd. "
        "Commands that wait for input get end-of-file. Long-running commands (servers, watchers) should use "
        "background=true and be followed with process_manage. Commands run in an OS sandbox (where one can "
        "be set up; the result's 'sandbox' says which): the working directory, the session's workspace and "
        "/tmp (private to the session) are writable, everything else is read-only, hermes's secrets, ~/.ssh "
        "and other credential files are hidden, and there is no network. network=true asks the person to "
        "let this command reach the network; sandbox=false asks the person to run it outside the sandbox "
        "(use it only when a command fails because of the sandbox). Dangerous commands (recursive deletes, "
        "force pushes, curl | sh, ...) need the person's approval; a few (rm -rf /, mkfs, fork bombs, ...) "
        "are never run."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1, "maxLength": MAX_COMMAND_CHARS,
                        "description": "The bash command line to run."},
            "timeout": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT, "default": DEFAULT_TIMEOUT,
                        "description": "Seconds before the command's process group is killed (foreground only)."},
            "workdir": {"type": "string", "minLength": 1,
                        "description": "Directory to run in (default: the session's working directory)."},
            "background": {"type": "boolean", "default": False,
                           "description": "Start the command in the background and return its process_id."},
            "network": {"type": "boolean", "default": False,
                        "description": "Let the command reach the network from inside the sandbox (the person "
                                       "is asked unless network is allowed for the session)."},
            "sandbox": {"type": "boolean", "default": True,
                        "description": "false: run this one command outside the sandbox (always asks the "
                                       "person)."},
        },
        "required": ["command"],
        "additionalProperties": False,
    },
}

PROCESS_SCHEMA: dict[str, Any] = {
    "name": "process_manage",
    "description": (
        "Manage background processes started with terminal(background=true) in this session. "
        "list: all of them; poll: status and output since the last poll; log: page through the output "
        "(offset/limit in lines, negative offset counts from the end); wait: block until it exits or "
        "'timeout' seconds pass; kill: stop it and everything it started; write: send 'input' to its stdin "
        "(include \\n to press Enter; eof=true closes stdin)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["list", "poll", "log", "wait", "kill", "write"]},
            "process_id": {"type": "string", "minLength": 1, "description": "Id returned by terminal."},
            "input": {"type": "string", "maxLength": MAX_COMMAND_CHARS, "description": "Text for 'write'."},
            "eof": {"type": "boolean", "default": False, "description": "write: close stdin after the input."},
            "timeout": {"type": "integer", "minimum": 0, "maximum": MAX_TIMEOUT, "default": 30,
                        "description": "wait: seconds to wait at most."},
            "offset": {"type": "integer", "description": "log: first line (0-based; negative: from the end)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LOG_LIMIT, "default": LOG_LIMIT,
                      "description": "log: number of lines."},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
}


def check_terminal_requirements() -> tuple[bool, str | None]:
    """The tools need bash (and a POSIX system for process groups)."""
    if os.name != "posix":
        return False, "needs a POSIX system (Linux or macOS)"
    found = any(os.access(os.path.join(d, "bash"), os.X_OK) for d in os.environ.get("PATH", "").split(os.pathsep) if d)
    return found, None if found else "needs the program bash on PATH"


def _task_id(kw: dict[str, Any]) -> str:
    return str(kw.get("task_id") or "default")


def _workdir(args: dict[str, Any], session: SessionView | None) -> str:
    """The directory the command runs in: ``workdir``, else the session's workspace. A ``workdir`` outside
    the workspace is only where the command starts: the sandbox keeps it read-only and the classifier
    proves no write there (see :mod:`.confine`)."""
    from hermes.tools.terminal import confine

    raw = args.get("workdir")
    if raw is None:
        raw = confine.session_workspace(session)
    path = os.path.abspath(os.path.expanduser(str(raw)))
    if not os.path.isdir(path):
        raise ToolError(f"'workdir' {raw!r} is not an existing directory")
    return path


def _env(session: SessionView | None) -> dict[str, str]:
    from hermes.tools.terminal import gate
    from hermes.tools.terminal.runner import child_env

    passthrough = gate.string_list(gate.config_for(session).get("terminal.env_passthrough"))
    return child_env(passthrough)


def terminal(args: dict[str, Any], **kw: Any) -> str:
    """Handler of ``terminal``."""
    from hermes.tools.terminal import confine
    from hermes.tools.terminal.processes import manager
    from hermes.tools.terminal.runner import run_foreground

    command = str(args["command"])
    if not command.strip():
        raise ToolError("'command' is empty")
    if "\x00" in command:
        raise ToolError("'command' contains a NUL character")
    session = session_of(kw)
    task = _task_id(kw)
    from hermes.tools.backends.session import for_call

    backend = for_call(kw)
    if not backend.local:
        return _terminal_remote(args, kw, command, task, backend)
    cwd = _workdir(args, session)
    launch = confine.prepare(command, args, kw, session, cwd, task)
    env = _env(session)
    if args.get("background"):
        record = manager.start(task, command, cwd, env, start=launch.start, sandbox=launch.label())
        on_session_end(kw, f"terminal:{task}", lambda: manager.kill_session(task))
        return json.dumps({
            "process_id": record.id,
            "pid": record.proc.pid,
            "status": "running",
            "workdir": cwd,
            "sandbox": record.sandbox,
            "hint": "follow it with process_manage (poll, log, wait, write, kill) and this process_id",
        })
    timeout = int(args.get("timeout") or DEFAULT_TIMEOUT)
    result = run_foreground(command, cwd=cwd, env=env, timeout=min(max(timeout, 1), MAX_TIMEOUT), start=launch.start)
    result["workdir"] = cwd
    result["sandbox"] = launch.label()
    if launch.note():
        result["sandbox_note"] = launch.note()
    return json.dumps(result, ensure_ascii=False)


def _terminal_remote(args: dict[str, Any], kw: dict[str, Any], command: str, task: str, backend: Backend) -> str:
    """``terminal`` on a remote execution backend (:mod:`.remote`)."""
    from hermes.tools.terminal import confine, gate, remote
    from hermes.tools.terminal.processes import manager

    # the approvals run before the backend is contacted at all (nothing starts for a refused command)
    confine.prepare_remote(command, kw, backend.isolated, remote.lexical_workdir(backend, args.get("workdir")))
    cwd = remote.remote_workdir(backend, args.get("workdir"))
    env = remote.remote_env(gate.string_list(gate.config_for(session_of(kw)).get("terminal.env_passthrough")))
    if args.get("background"):
        record = remote.start_background(backend, task, command, cwd, env)
        on_session_end(kw, f"terminal:{task}", lambda: manager.kill_session(task))
        return json.dumps({"process_id": record.id, "pid": record.pid, "status": "running", "workdir": cwd,
                           "sandbox": record.sandbox,
                           "hint": "follow it with process_manage (poll, log, wait, write, kill) and this process_id"})
    timeout = min(max(int(args.get("timeout") or DEFAULT_TIMEOUT), 1), MAX_TIMEOUT)
    result = remote.run_foreground(backend, command, cwd, env, timeout)
    result["workdir"] = cwd
    result["sandbox"] = backend.describe() if backend.isolated else f"off ({backend.describe()})"
    return json.dumps(result, ensure_ascii=False)


def _log(record: BackgroundProcess, args: dict[str, Any]) -> dict[str, Any]:
    record.refresh()
    text, dropped = record.output.snapshot()
    lines = text.splitlines()
    limit = int(args.get("limit") or LOG_LIMIT)
    offset = args.get("offset")
    if offset is None:
        start = max(0, len(lines) - limit)
    elif offset < 0:
        start = max(0, len(lines) + int(offset))
    else:
        start = min(int(offset), len(lines))
    chosen = lines[start : start + limit]
    out: dict[str, Any] = {
        "process_id": record.id,
        "status": record.summary()["status"],
        "lines": redact("\n".join(chosen), secret_values()),
        "offset": start,
        "returned_lines": len(chosen),
        "total_lines": len(lines),
    }
    if dropped:
        out["dropped_chars"] = dropped
        out["note"] = f"the first {dropped} characters of output are no longer kept; line numbers start after them"
    return out


def process_manage(args: dict[str, Any], **kw: Any) -> str:
    """Handler of ``process_manage``."""
    from hermes.tools.terminal import confine, gate
    from hermes.tools.terminal.approval import classify_input, stdin_kind
    from hermes.tools.terminal.processes import manager

    action = args["action"]
    task = _task_id(kw)
    if action == "list":
        return json.dumps({"processes": [p.summary() for p in manager.list(task)]})
    process_id = args.get("process_id")
    if not process_id:
        raise ToolError(f"process_manage(action='{action}') needs 'process_id'")
    record = manager.get(task, str(process_id))
    if action == "log":
        return json.dumps(_log(record, args), ensure_ascii=False)
    if action == "write":
        data = args.get("input")
        eof = bool(args.get("eof"))
        if data is None and not eof:
            raise ToolError("process_manage(action='write') needs 'input' (or eof=true to close stdin)")
        data = str(data or "")
        kind = stdin_kind(record.command)
        if kind is not None and data.strip():
            found = classify_input(kind, data, record.cwd, gate.safe_programs(kw),
                                   workspace=confine.session_workspace(session_of(kw)))
            gate.check(data, found, kw, what="input",
                       sandboxed=not record.sandbox.startswith("off"))
        sent = record.write(data, eof)
        return json.dumps({"process_id": record.id, "written_bytes": sent, "stdin_closed": eof})
    if action == "wait":
        wait_s = args.get("timeout")
        finished = record.wait(30.0 if wait_s is None else float(wait_s))
        out = record.summary()
        out.update(record.new_output())
        if not finished:
            out["timed_out"] = True
    elif action == "kill":
        was_running = record.running
        record.kill()
        out = record.summary()
        out["was_running"] = was_running
        out.update(record.new_output())
    else:  # poll
        out = record.summary()
        out.update(record.new_output())
    out["output"] = redact(out.get("output", ""), secret_values())
    return json.dumps(out, ensure_ascii=False)


#: bash for the local backend, else whether terminal.backend can run (tools list tells the truth)
_READY = backend_check(check_terminal_requirements)

registry.register(
    name="terminal",
    toolset="terminal",
    schema=TERMINAL_SCHEMA,
    handler=terminal,
    check_fn=_READY,
    requires_env=[],
)

registry.register(
    name="process_manage",
    toolset="terminal",
    schema=PROCESS_SCHEMA,
    handler=process_manage,
    check_fn=_READY,
    requires_env=[],
)
