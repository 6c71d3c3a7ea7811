"""``terminal`` and ``process_manage`` on a remote execution backend (``terminal.backend`` not ``local``).

The approval flow runs first, exactly as for a local command (:func:`.confine.prepare_remote`: the hard
floor always refuses, dangerous commands need approval; unproven ones need it too unless the backend is
an isolation boundary — a container or a managed sandbox). Then the command runs on the backend
(:meth:`~hermes.tools.backends.base.Backend.run`) in its ``workdir`` (default: the backend's ``cwd``
setting or the login's home), with only ``PAGER``-style defaults and the ``terminal.env_passthrough``
variables exported — hermes's own environment never goes there.

Background processes are :class:`RemoteProcess` records in the same process manager as local ones, so
``process_manage`` treats both alike; their output, exit status and stdin live on the backend
(:mod:`hermes.tools.backends.procs`).
"""

from __future__ import annotations

import codecs
import os
import posixpath
import stat
import threading
import time
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError
from hermes.redact import redact, secret_values
from hermes.tools.backends import procs
from hermes.tools.backends.base import Backend, BackendError
from hermes.tools.terminal.processes import POLL_CHARS, BackgroundProcess, RingBuffer, manager
from hermes.tools.terminal.runner import CHILD_DEFAULTS

if TYPE_CHECKING:
    from collections.abc import Iterable

#: bytes of output fetched per status request
FETCH_BYTES = 256 * 1024


def remote_env(passthrough: Iterable[str]) -> dict[str, str]:
    """What a remote command gets from here: the pager defaults and the named ``env_passthrough`` values."""
    env = dict(CHILD_DEFAULTS)
    for name in passthrough:
        if name in os.environ and "*" not in name and "?" not in name:
            env[name] = os.environ[name]
    return env


def lexical_workdir(backend: Backend, raw: object) -> str:
    """Where the command will start, as far as it is known without asking the backend (the classifier's
    working directory): an absolute ``workdir``, else it under the backend's ``cwd`` setting (or ``~``)."""
    configured = backend.settings.get("cwd")
    base = str(configured) if isinstance(configured, str) and configured.startswith("/") else "~"
    text = str(raw) if raw is not None else base
    return text if text.startswith(("/", "~")) else posixpath.join(base, text)


def remote_workdir(backend: Backend, raw: object) -> str:
    """``workdir`` on the backend (``~`` is its home, a relative path is taken from its default cwd)."""
    base = backend.default_cwd()
    text = str(raw) if raw is not None else base
    if text == "~" or text.startswith("~/"):
        text = backend.home() + text[1:]
    path = posixpath.normpath(posixpath.join(base, text))
    found = backend.stat(path)
    if found is None or not stat.S_ISDIR(found.mode):
        raise ToolError(f"'workdir' {text!r} is not an existing directory on {backend.describe()}")
    return path


def run_foreground(backend: Backend, command: str, cwd: str, env: dict[str, str], timeout: int) -> dict[str, Any]:
    try:
        result = backend.run(command, cwd=cwd, env=env, timeout=timeout)
    except BackendError as exc:
        raise ToolError(str(exc)) from None
    result["output"] = redact(result["output"], secret_values())
    return result


class RemoteProcess(BackgroundProcess):
    """A background process on a backend; each look at it is one request there."""

    def __init__(self, pid_label: str, task_id: str, command: str, cwd: str, backend: Backend, folder: str,
                 pid: int) -> None:  # no super().__init__: there is no local Popen to read from
        self.id = pid_label
        self.sandbox = backend.describe() if backend.isolated else f"off ({backend.describe()})"
        self.task_id = task_id
        self.command = command
        self.cwd = cwd
        self.backend = backend
        self.folder = folder
        self.pid = pid
        self.started = time.time()
        self.ended: float | None = None
        self.output = RingBuffer()
        self.read_offset = 0
        self.killed = False
        self.done_reading = threading.Event()
        self.exit_code: int | None = None
        self._fetched = 0
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._lock = threading.Lock()
        self._running = True

    def refresh(self) -> None:
        """Fetch the new output and the state (nothing to ask once it ended and everything was read)."""
        if self.done_reading.is_set() or self.backend.closed:
            return
        with self._lock:
            while True:
                try:
                    state = procs.look(self.backend, self.folder, self.pid, self._fetched, FETCH_BYTES)
                except BackendError as exc:
                    raise ToolError(str(exc)) from None
                self._fetched += len(state.data)
                text = self._decoder.decode(state.data)
                if text:
                    self.output.add(text)
                if len(state.data) < FETCH_BYTES or self._fetched >= state.size:
                    break
            if not state.running and self._fetched >= state.size:
                self._running = False
                self.exit_code = state.exit_code
                self.ended = self.ended or time.time()
                rest = self._decoder.decode(b"", final=True)
                if rest:
                    self.output.add(rest)
                self.done_reading.set()

    @property
    def running(self) -> bool:
        return self._running

    def summary(self) -> dict[str, Any]:
        self.refresh()
        info: dict[str, Any] = {
            "process_id": self.id,
            "command": self.command if len(self.command) <= 200 else self.command[:197] + "...",
            "pid": self.pid,
            "status": "running" if self._running else ("killed" if self.killed else "exited"),
            "workdir": self.cwd,
            "sandbox": self.sandbox,
            "runtime_s": round((self.ended or time.time()) - self.started, 1),
            "output_chars": self.output.total,
        }
        if not self._running:
            info["exit_code"] = self.exit_code
        return info

    def new_output(self, limit: int = POLL_CHARS) -> dict[str, Any]:
        self.refresh()
        return super().new_output(limit)

    def write(self, data: str, eof: bool) -> int:
        self.refresh()
        if not self._running:
            raise ToolError(f"process '{self.id}' has exited; nothing reads its stdin")
        raw = data.encode("utf-8")
        try:
            procs.write_stdin(self.backend, self.folder, raw, eof, 10.0)
        except BackendError as exc:
            raise ToolError(f"process '{self.id}': {exc}") from None
        return len(raw)

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            self.refresh()
            if not self._running:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 1.0)

    def kill(self, grace: float = 2.0) -> None:
        self.refresh()
        if not self._running or self.backend.closed:
            return
        self.killed = True
        try:
            procs.signal_group(self.backend, self.pid, "TERM")
            if not self.wait(grace):
                procs.signal_group(self.backend, self.pid, "KILL")
                self.wait(2.0)
        except (BackendError, ToolError):
            return

    def close_stdin(self) -> None:
        return None


def start_background(backend: Backend, task: str, command: str, cwd: str, env: dict[str, str]) -> RemoteProcess:
    """Start ``command`` detached on the backend and track it in the process manager."""

    def make(label: str) -> RemoteProcess:
        try:
            folder, pid = procs.start_detached(backend, label, command, cwd, env)
        except BackendError as exc:
            raise ToolError(str(exc)) from None
        return RemoteProcess(label, task, command, cwd, backend, folder, pid)

    record = manager.adopt(task, make)
    assert isinstance(record, RemoteProcess)
    return record
