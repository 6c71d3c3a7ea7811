"""Running shell commands: the scrubbed child environment, output capture with caps, group kills.

Every command runs as ``bash -c COMMAND`` in a new session (its own process group), so a timeout or a
kill reaches everything it started. stdout and stderr are merged in the order they were written.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any

from hermes.redact import redact, secret_values

if TYPE_CHECKING:
    from hermes.tools.sandbox import Process

MAX_OUTPUT_CHARS = 40_000
OUTPUT_MARKER = "[hermes: output truncated"
#: set in every child so tools that page or prompt do not wait for a person
CHILD_DEFAULTS = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}


def child_env(passthrough: Iterable[str] = (), base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child: hermes's own, minus variables that hold secrets — by name
    (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``, ``DATABASE_URL``, ``*_DSN``) or by value (a URL
    with a password, a provider key; :func:`hermes.tools.sandbox.scrub_env`) — except those matching
    ``passthrough`` (names or shell-style patterns from ``terminal.env_passthrough``)."""
    from hermes.tools.sandbox import scrub_env

    env = scrub_env(os.environ if base is None else base, passthrough)
    env.update(CHILD_DEFAULTS)
    return env


class CappedOutput:
    """Keeps the head and the tail of a stream of text within ``limit`` characters (thread-safe)."""

    def __init__(self, limit: int = MAX_OUTPUT_CHARS) -> None:
        self.head_limit = limit * 2 // 5
        self.tail_limit = limit - self.head_limit
        self.head = ""
        self.tail = ""
        self.total = 0
        self._lock = threading.Lock()

    def add(self, text: str) -> None:
        with self._lock:
            self.total += len(text)
            room = self.head_limit - len(self.head)
            if room > 0:
                self.head += text[:room]
                text = text[room:]
            if text:
                self.tail += text
                if len(self.tail) > 2 * self.tail_limit:
                    self.tail = self.tail[-self.tail_limit:]

    def render(self) -> tuple[str, bool]:
        """The captured text (with a marker where the middle was dropped) and whether it was cut."""
        with self._lock:
            kept = len(self.head) + min(len(self.tail), self.tail_limit)
            if self.total <= kept:
                return self.head + self.tail, False
            tail = self.tail[-self.tail_limit:]
            omitted = self.total - len(self.head) - len(tail)
            marker = (f"\n\n{OUTPUT_MARKER}: {omitted} of {self.total} characters omitted from the middle; "
                      "redirect to a file and read it in pages, or filter with grep/head/tail]\n\n")
            return self.head + marker + tail, True


def pump(stream: IO[bytes], sink: Any, on_end: Any = None) -> None:
    """Read ``stream`` to its end, decoding UTF-8 (invalid bytes replaced), into ``sink.add``."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    fd = stream.fileno()
    with contextlib.closing(stream):
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            text = decoder.decode(chunk)
            if text:
                sink.add(text)
        rest = decoder.decode(b"", final=True)
        if rest:
            sink.add(rest)
    if on_end is not None:
        on_end()


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to a process group; False when the group no longer exists."""
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def kill_group(proc: Process, grace: float = 2.0) -> int | None:
    """SIGTERM the process group, wait up to ``grace`` seconds, then SIGKILL whatever is left."""
    pgid = proc.pid
    if proc.poll() is None:
        signal_group(pgid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    signal_group(pgid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5.0)
    return proc.returncode


def describe_exit(returncode: int | None) -> dict[str, Any]:
    """``exit_code`` as a shell reports it (128+N for signal N) and the signal's name when there was one."""
    if returncode is None:
        return {"exit_code": None}
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return {"exit_code": 128 - returncode, "signal": name}
    return {"exit_code": returncode}


#: starts a command line as :meth:`hermes.tools.sandbox.Launch.start` does (in the OS sandbox or not)
Starter = Callable[..., "Process"]


def spawn(command: str, cwd: str, env: Mapping[str, str], *, stdin: int,
          start: Starter | None = None) -> Process:
    """Start ``bash -c command`` (through ``start``: the sandbox) in its own session with stdout and stderr
    merged."""
    argv = ["bash", "-c", command]
    if start is not None:
        return start(argv, cwd=cwd, env=env, stdin=stdin, stderr=subprocess.STDOUT)
    return subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)


def run_foreground(command: str, *, cwd: str, env: Mapping[str, str], timeout: float,
                   max_chars: int = MAX_OUTPUT_CHARS, start: Starter | None = None) -> dict[str, Any]:
    """Run ``command`` to completion or until ``timeout``; returns the tool's result fields."""
    started = time.monotonic()
    proc = spawn(command, cwd, env, stdin=subprocess.DEVNULL, start=start)
    out = CappedOutput(max_chars)
    assert proc.stdout is not None
    reader = threading.Thread(target=pump, args=(proc.stdout, out), name="terminal-output", daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc, grace=1.0)
    reader.join(2.0 if timed_out else 1.0)
    text, truncated = out.render()
    result: dict[str, Any] = {"output": redact(text, secret_values())}
    result.update(describe_exit(proc.returncode))
    result["duration_s"] = round(time.monotonic() - started, 3)
    if truncated:
        result["truncated"] = True
        result["output_chars"] = out.total
    if timed_out:
        result["timed_out"] = True
        result["note"] = (f"timed out after {timeout:g} s; the command's process group was killed. Raise "
                          "'timeout' (max 600) or run it with background=true and follow it with process_manage.")
    elif reader.is_alive():
        result["note"] = ("the command exited but something it started in the background still holds its "
                          "output; use background=true for long-running processes")
    return result
