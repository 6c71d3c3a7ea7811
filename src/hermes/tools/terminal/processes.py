"""Background processes started by ``terminal(background=true)`` and driven by ``process_manage``.

Processes are tracked per session (the ``task_id`` of the call): a session sees and controls only its
own. Output (stdout and stderr merged) goes into a ring buffer of the last :data:`BUFFER_CHARS`
characters; ``poll`` returns what arrived since the previous ``poll``/``wait``, ``log`` pages through
what the buffer holds. Every process runs in its own process group; ``kill`` and the exit handler
signal the whole group. When the hermes process exits normally, every background process still
running is killed (an ``atexit`` handler); a hermes killed with SIGKILL cannot do that.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError
from hermes.tools.terminal.runner import Starter, describe_exit, kill_group, pump, signal_group, spawn

if TYPE_CHECKING:
    from hermes.tools.sandbox import Process

BUFFER_CHARS = 1_000_000
MAX_PER_SESSION = 16
KEEP_FINISHED = 32
POLL_CHARS = 20_000
WRITE_TIMEOUT = 10.0


class RingBuffer:
    """The last ``capacity`` characters of a stream, addressed by absolute character offsets."""

    def __init__(self, capacity: int = BUFFER_CHARS) -> None:
        self.capacity = capacity
        self.text = ""
        self.dropped = 0  # characters that fell off the front
        self._lock = threading.Lock()

    def add(self, text: str) -> None:
        with self._lock:
            self.text += text
            if len(self.text) > 2 * self.capacity:
                cut = len(self.text) - self.capacity
                self.text = self.text[cut:]
                self.dropped += cut

    @property
    def total(self) -> int:
        with self._lock:
            return self.dropped + len(self.text)

    def since(self, offset: int) -> tuple[str, int, int]:
        """Text from absolute ``offset`` on: (text, start actually returned, new end offset)."""
        with self._lock:
            view = self.text[-self.capacity:]
            begin = self.dropped + len(self.text) - len(view)
            start = max(offset, begin)
            return view[start - begin:], start, begin + len(view)

    def snapshot(self) -> tuple[str, int]:
        """The retained text and how many characters before it were dropped."""
        with self._lock:
            view = self.text[-self.capacity:]
            return view, self.dropped + len(self.text) - len(view)


class BackgroundProcess:
    """One tracked process."""

    def __init__(self, pid_label: str, task_id: str, command: str, cwd: str, proc: Process,
                 sandbox: str = "off") -> None:
        self.id = pid_label
        self.sandbox = sandbox  # the sandbox it runs in, as terminal's result names it ("off": none)
        self.task_id = task_id
        self.command = command
        self.cwd = cwd
        self.proc = proc
        self.started = time.time()
        self.ended: float | None = None
        self.output = RingBuffer()
        self.read_offset = 0
        self.killed = False
        self._stdin_lock = threading.Lock()
        self.done_reading = threading.Event()
        assert proc.stdout is not None
        self.reader = threading.Thread(target=pump, args=(proc.stdout, self.output, self.done_reading.set),
                                       name=f"process-{pid_label}", daemon=True)
        self.reader.start()

    def refresh(self) -> None:
        """Bring the output up to date (a local process's output is read continuously: nothing to do)."""

    @property
    def running(self) -> bool:
        if self.proc.poll() is None:
            return True
        if self.ended is None:
            self.ended = time.time()
        return False

    def summary(self) -> dict[str, Any]:
        running = self.running
        info: dict[str, Any] = {
            "process_id": self.id,
            "command": self.command if len(self.command) <= 200 else self.command[:197] + "...",
            "pid": self.proc.pid,
            "status": "running" if running else ("killed" if self.killed else "exited"),
            "workdir": self.cwd,
            "sandbox": self.sandbox,
            "runtime_s": round((self.ended or time.time()) - self.started, 1),
            "output_chars": self.output.total,
        }
        if not running:
            info.update(describe_exit(self.proc.returncode))
        return info

    def new_output(self, limit: int = POLL_CHARS) -> dict[str, Any]:
        """Output since the last poll/wait (at most ``limit`` characters, the latest ones)."""
        text, start, end = self.output.since(self.read_offset)
        skipped = start - self.read_offset
        if len(text) > limit:
            skipped += len(text) - limit
            text = text[-limit:]
        self.read_offset = end
        out: dict[str, Any] = {"output": text}
        if skipped:
            out["skipped_chars"] = skipped
        return out

    def write(self, data: str, eof: bool) -> int:
        """Send ``data`` to stdin; gives up after :data:`WRITE_TIMEOUT` seconds if nothing reads it."""
        stdin = self.proc.stdin
        if not self.running:
            raise ToolError(f"process '{self.id}' has exited; nothing reads its stdin")
        if stdin is None or stdin.closed:
            raise ToolError(f"the stdin of process '{self.id}' is closed (eof=true was sent)")
        raw = data.encode("utf-8")
        with self._stdin_lock:
            fd = stdin.fileno()
            os.set_blocking(fd, False)
            sent = 0
            deadline = time.monotonic() + WRITE_TIMEOUT
            try:
                while sent < len(raw):
                    _, ready, _ = select.select([], [fd], [], max(0.0, deadline - time.monotonic()))
                    if not ready:
                        raise ToolError(f"process '{self.id}' is not reading its stdin: {sent} of {len(raw)} bytes "
                                        f"were written in {WRITE_TIMEOUT:g} s")
                    with contextlib.suppress(BlockingIOError):
                        sent += os.write(fd, raw[sent : sent + 65536])
                if eof:
                    stdin.close()
            except OSError as exc:
                raise ToolError(f"could not write to process '{self.id}': {exc}") from None
        return sent

    def wait(self, timeout: float) -> bool:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        self.done_reading.wait(0.5)
        return True

    def kill(self, grace: float = 2.0) -> None:
        """Stop the process group: SIGTERM, then SIGKILL after ``grace`` seconds.

        After the leader exited the group is still signalled while something holds its output (a
        child it left in the background)."""
        if self.running:
            self.killed = True
            kill_group(self.proc, grace)
        elif not self.done_reading.is_set():
            signal_group(self.proc.pid, signal.SIGKILL)
        self.done_reading.wait(0.5)
        self.close_stdin()

    def close_stdin(self) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.closed:
            with self._stdin_lock, contextlib.suppress(OSError):
                stdin.close()


class ProcessManager:
    """All background processes of this hermes process, grouped by session."""

    def __init__(self) -> None:
        self._by_task: dict[str, dict[str, BackgroundProcess]] = {}
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._atexit = False

    def start(self, task_id: str, command: str, cwd: str, env: Mapping[str, str], *,
              start: Starter | None = None, sandbox: str = "off") -> BackgroundProcess:
        def spawned(label: str) -> BackgroundProcess:
            proc = spawn(command, cwd, env, stdin=subprocess.PIPE, start=start)
            return BackgroundProcess(label, task_id, command, cwd, proc, sandbox)

        return self.adopt(task_id, spawned)

    def adopt(self, task_id: str, make: Callable[[str], BackgroundProcess]) -> BackgroundProcess:
        """Track the process ``make(label)`` starts (local, or on an execution backend) under ``task_id``."""
        with self._lock:
            mine = self._by_task.setdefault(task_id, {})
            running = [p for p in mine.values() if p.running]
            if len(running) >= MAX_PER_SESSION:
                raise ToolError(f"this session already runs {len(running)} background processes (the limit is "
                                f"{MAX_PER_SESSION}); kill some with process_manage(action='kill') first")
            finished = [p for p in mine.values() if not p.running]
            for old in finished[: max(0, len(finished) - KEEP_FINISHED + 1)]:
                old.close_stdin()
                del mine[old.id]
            label = f"proc_{next(self._ids)}_{os.getpid() % 10000}"
            if not self._atexit:
                atexit.register(self.shutdown)
                self._atexit = True
        record = make(label)
        with self._lock:
            self._by_task.setdefault(task_id, {})[label] = record
        return record

    def get(self, task_id: str, process_id: str) -> BackgroundProcess:
        with self._lock:
            record = self._by_task.get(task_id, {}).get(process_id)
        if record is None:
            raise ToolError(f"no background process '{process_id}' in this session; "
                            "process_manage(action='list') shows this session's processes")
        return record

    def list(self, task_id: str) -> list[BackgroundProcess]:
        with self._lock:
            return list(self._by_task.get(task_id, {}).values())

    def kill_session(self, task_id: str) -> int:
        """Kill every running process of one session (e.g. when it ends); returns how many were running."""
        records = [p for p in self.list(task_id) if p.running]
        for record in records:
            record.kill(grace=1.0)
        return len(records)

    def shutdown(self) -> None:
        """Kill every process group still running: SIGTERM to all, a short grace, then SIGKILL."""
        with self._lock:
            records = [p for mine in self._by_task.values() for p in mine.values() if hasattr(p, "proc")]
        alive = [p for p in records if p.running or not p.done_reading.is_set()]
        for record in alive:
            signal_group(record.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 1.0
        for record in alive:
            with contextlib.suppress(subprocess.TimeoutExpired):
                record.proc.wait(max(0.0, deadline - time.monotonic()))
            signal_group(record.proc.pid, signal.SIGKILL)
        for record in records:
            if record.proc.poll() is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    record.proc.wait(1.0)
            record.close_stdin()


#: the process-wide manager used by the tools
manager = ProcessManager()
