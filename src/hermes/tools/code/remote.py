"""``execute_code`` on a remote execution backend: the script runs there, its tool calls come back here.

The script and the generated ``hermes_tools`` module go to a private folder in the backend's temp dir;
``python3 script.py`` runs there in the backend's working directory with a minimal environment (no
hermes variable, no key), stderr into a file of that folder. The RPC server runs here as for a local run
and every tool call runs here through the calling session's dispatch — with its approvals and its
backend, so ``read_file`` in the script reads the same server's or container's files. The way back:

* a backend that can forward a Unix socket back to this machine (``ssh``: OpenSSH stream-local
  forwarding) gives the stub ``rpc.sock`` in the run folder there;
* any other (``docker``, ``modal``, a plugin's) carries the same messages through files of the run
  folder, moved by commands hermes runs there (:mod:`.mailbox`).
"""

from __future__ import annotations

import contextlib
import secrets
import shlex
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from hermes.redact import redact, secret_values
from hermes.tools.backends.base import Backend, BackendError, ExecResult
from hermes.tools.code.limits import CodeLimits
from hermes.tools.code.mailbox import Mailbox
from hermes.tools.code.rpc import Dispatcher, RpcServer
from hermes.tools.code.stub import render_module
from hermes.tools.registry import ToolEntry

SCRIPT_NAME = "script.py"
MODULE_NAME = "hermes_tools.py"


def _cut(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    head = limit * 2 // 3
    omitted = len(text) - limit
    return text[:head] + f"\n[... {omitted} characters omitted ...]\n" + text[-(limit - head):], True


@contextlib.contextmanager
def _channel(backend: Backend, server: RpcServer, remote_dir: str) -> Iterator[str | None]:
    """The socket path the stub uses there, or None when the backend forwards no socket (then: a mailbox)."""
    tunnel = getattr(backend, "tunnel_unix", None)
    if tunnel is None or server.transport != "unix":
        yield None
        return
    with tunnel(f"{remote_dir}/rpc.sock", str(server.address)) as path:
        yield path


def run_remote(backend: Backend, code: str, *, timeout: float, entries: Sequence[ToolEntry],
               dispatcher: Dispatcher, limits: CodeLimits) -> dict[str, Any]:
    """Run ``code`` on ``backend`` (see the module docstring); the same result keys as a local run."""
    started = time.monotonic()
    run_dir = Path(tempfile.mkdtemp(prefix="hermes-code-"))
    remote_dir = f"{backend.temp_dir()}/code-{secrets.token_hex(6)}"
    q = shlex.quote
    server = RpcServer(run_dir, dispatcher, [e.name for e in entries], max_calls=limits.max_tool_calls,
                       max_message_bytes=limits.max_message_bytes)
    notes: list[str] = []
    try:
        backend.exec(f"mkdir -m 700 -p {q(remote_dir)}", timeout=30)
        server.start()
        with _channel(backend, server, remote_dir) as socket_path:
            mailbox = Mailbox(backend, server, f"{remote_dir}/mail") if socket_path is None else None
            address: str | dict[str, Any] = socket_path or {}
            if mailbox is not None:
                mailbox.install()
                address = {**mailbox.address, "wait": timeout + 60}
            module = render_module(entries, address, server.token, limits.max_message_bytes)
            backend.write_bytes(f"{remote_dir}/{MODULE_NAME}", module.encode("utf-8"), 0o600)
            backend.write_bytes(f"{remote_dir}/{SCRIPT_NAME}", code.encode("utf-8"), 0o600)
            env = {"PYTHONPATH": remote_dir, "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8",
                   "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": remote_dir}
            line = f"exec python3 {q(remote_dir + '/' + SCRIPT_NAME)} 2> {q(remote_dir + '/stderr')}"
            if mailbox is not None:  # the pump stops waiting once the script has ended
                line = f"{line[5:]}; code=$?; : > {q(mailbox.done_marker)}; exit $code"

            def script() -> ExecResult:
                return backend.exec(line, cwd=backend.default_cwd(), env=env, timeout=timeout,
                                    max_bytes=limits.max_output_chars * 4)

            result = mailbox.serve_while(script) if mailbox is not None else script()
        try:
            err = backend.read_bytes(f"{remote_dir}/stderr", limits.max_stderr_chars * 64)
        except BackendError:
            err = b""
    finally:
        server.stop()
        shutil.rmtree(run_dir, ignore_errors=True)
        with contextlib.suppress(BackendError):
            backend.exec(f"rm -rf -- {q(remote_dir)}", timeout=30)
    hidden = secret_values(extra=[server.token])

    def clean(data: bytes) -> str:
        text = data.decode("utf-8", "replace").replace(f"{remote_dir}/", "")
        return redact(text, hidden)

    stdout, stdout_cut = _cut(clean(result.output), limits.max_output_chars)
    stderr, stderr_cut = _cut(clean(err), limits.max_stderr_chars)
    if result.timed_out:
        notes.append(f"the script ran past its {timeout:g}s timeout; its process group was killed")
    if result.connection_lost:
        notes.append(f"the connection to {backend.describe()} dropped while the script ran; its outcome is unknown")
    if result.exit_code == 127 and "python3" in stderr + stdout:
        notes.append(f"python3 is not installed on {backend.describe()}")
    if server.limit_hit:
        notes.append(f"the tool call limit ({limits.max_tool_calls}) was reached; later calls were refused")
    out: dict[str, Any] = {
        "stdout": stdout, "stderr": stderr, "exit_code": result.exit_code, "tool_calls_made": server.calls_made,
        "duration_seconds": round(time.monotonic() - started, 3), "stdout_truncated": stdout_cut or
        result.total_bytes > len(result.output), "stderr_truncated": stderr_cut, "timed_out": result.timed_out,
        "tool_call_limit_reached": server.limit_hit,
        "sandbox": backend.describe() if backend.isolated else f"off ({backend.describe()})",
    }
    if notes:
        out["notes"] = notes
    return out
