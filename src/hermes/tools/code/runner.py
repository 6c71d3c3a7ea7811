"""One ``execute_code`` run: private temp dir, RPC server, child process, result.

The steps, all undone in ``finally`` whatever happens (timeout, exception, interrupted dispatch):

1. ``tempfile.mkdtemp`` creates a private (0700) run dir holding ``script.py``, the generated
   ``hermes_tools.py``, the Unix socket and a ``tmp/`` folder used as the child's ``TMPDIR``;
2. the :class:`~hermes.tools.code.rpc.RpcServer` starts in a thread of the parent;
3. ``sys.executable script.py`` runs in its own process group with a scrubbed environment and the
   parent's working directory as its cwd (so relative paths mean what they mean to the file tools);
4. on timeout the whole process group is killed; after a normal exit the group is killed too, so
   nothing the script started outlives the run;
5. the server stops, the run dir is removed, and stdout/stderr are cut to their caps and redacted.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hermes.redact import redact, secret_values
from hermes.tools import sandbox as os_sandbox
from hermes.tools.code.limits import CodeLimits
from hermes.tools.code.rpc import Dispatcher, RpcServer
from hermes.tools.code.sandbox import ChildProcess, child_env
from hermes.tools.code.stub import render_module
from hermes.tools.registry import ToolEntry

RUN_DIR_PREFIX = "hermes-code-"
SCRIPT_NAME = "script.py"
MODULE_NAME = "hermes_tools.py"


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as fh:
        fh.write(text)


def _working_dir(fallback: Path) -> str:
    try:
        cwd = os.getcwd()
    except OSError:  # the process cwd was deleted
        return str(fallback)
    return cwd if os.path.isdir(cwd) else str(fallback)


def _clean_output(text: str, run_dir: Path, secrets: list[str]) -> str:
    """Show the run's files by name instead of their temp paths, and mask secrets (and the run's token)."""
    for name in (SCRIPT_NAME, MODULE_NAME):
        text = text.replace(str(run_dir / name), name)
    return redact(text, secrets)


def run_script(
    code: str,
    *,
    timeout: float,
    entries: Sequence[ToolEntry],
    dispatcher: Dispatcher,
    limits: CodeLimits,
    cwd: str | None = None,
    use_tcp: bool = False,
    cancelled: Callable[[], bool] | None = None,
    policy: os_sandbox.Policy | None = None,
    session: str | None = None,
) -> dict[str, Any]:
    """Run ``code`` as a script that may call ``entries`` through ``dispatcher``; the result dict.

    Keys: ``stdout``, ``stderr``, ``exit_code`` (negative: killed by that signal), ``tool_calls_made``,
    ``duration_seconds``, ``stdout_truncated``, ``stderr_truncated``, ``timed_out``,
    ``tool_call_limit_reached``, ``sandbox`` and, when something needs saying, ``notes``.

    The script runs in the OS sandbox (:mod:`hermes.tools.sandbox`) per ``policy`` (None: HERMES_HOME's
    ``sandbox.*`` settings): its working directory and the run folder are writable, ``/tmp`` is the run's
    own temp folder. The RPC socket lives
    in the run folder, so it is reached whatever the network setting; over loopback TCP (no Unix sockets)
    the script needs the network namespace, so it keeps the host's.

    With ``session`` the script runs in that session's long-lived sandbox (:mod:`hermes.tools.sandbox_pool`):
    the run folder then lies in the session's private folder (writable as a whole, so every run has the
    same sandbox), whose ``tmp/`` is ``/tmp`` inside; TMPDIR is still the run's own.
    """
    started = time.monotonic()
    policy = policy or os_sandbox.load_policy()
    shared = os_sandbox.session_temp(session) if session is not None and policy.enabled else None
    run_dir = Path(tempfile.mkdtemp(prefix=RUN_DIR_PREFIX, dir=shared))
    server: RpcServer | None = None
    child: ChildProcess | None = None
    try:
        tmp_dir = run_dir / "tmp"
        tmp_dir.mkdir(mode=0o700)
        private_tmp = tmp_dir
        if shared is not None:
            private_tmp = shared / "tmp"
            private_tmp.mkdir(mode=0o700, exist_ok=True)
        server = RpcServer(
            run_dir, dispatcher, [e.name for e in entries], max_calls=limits.max_tool_calls,
            max_message_bytes=limits.max_message_bytes, use_tcp=use_tcp,
        )
        _write_private(run_dir / MODULE_NAME,
                       render_module(entries, server.address, server.token, limits.max_message_bytes))
        _write_private(run_dir / SCRIPT_NAME, code)
        server.start()
        workdir = cwd or _working_dir(run_dir)
        launch = os_sandbox.launch(policy, workdir=workdir, temp_dir=private_tmp, workspaces=[workdir],
                                   extra_writable=[str(shared or run_dir)], network=server.transport == "tcp",
                                   tmpdir=str(tmp_dir), session=session)
        child = ChildProcess(
            [sys.executable, str(run_dir / SCRIPT_NAME)],
            cwd=workdir,
            env=child_env(run_dir, tmp_dir, limits.env_passthrough),
            out_limit=limits.max_output_chars * 4,
            err_limit=limits.max_stderr_chars * 4,
            start=launch.start,
        )
        deadline = started + timeout
        interrupted = False
        while True:
            step = min(0.2, max(deadline - time.monotonic(), 0.0)) if cancelled is not None else timeout
            if child.wait(step) is not None:
                timed_out = False
                break
            if cancelled is not None and cancelled():
                interrupted, timed_out = True, False
                break
            if time.monotonic() >= deadline:
                timed_out = True
                break
        exit_code = child.close()
        duration = time.monotonic() - started
        secrets = secret_values(extra=[server.token])

        def clean(text: str) -> str:
            return _clean_output(text, run_dir, secrets)

        stdout, stdout_cut = child.stdout.text(limits.max_output_chars, clean)
        stderr, stderr_cut = child.stderr.text(limits.max_stderr_chars, clean)
        notes: list[str] = []
        if timed_out:
            notes.append(f"the script ran past its {timeout:g}s timeout; its process group was killed")
        if interrupted:
            notes.append("the turn was interrupted; the script's process group was killed")
        if server.limit_hit:
            notes.append(f"the tool call limit ({limits.max_tool_calls}) was reached; later calls were refused")
        if server.rejected:
            notes.append(f"{server.rejected} unauthenticated RPC request(s) were refused")
        result: dict[str, Any] = {
            "stdout": stdout,
            "stderr": stderr,
            "exit_code": exit_code,
            "tool_calls_made": server.calls_made,
            "duration_seconds": round(duration, 3),
            "stdout_truncated": stdout_cut,
            "stderr_truncated": stderr_cut,
            "timed_out": timed_out,
            "tool_call_limit_reached": server.limit_hit,
            "sandbox": launch.label(),
        }
        if notes:
            result["notes"] = notes
        return result
    finally:
        if child is not None:
            child.close()
        if server is not None:
            server.stop()
        shutil.rmtree(run_dir, ignore_errors=True)
