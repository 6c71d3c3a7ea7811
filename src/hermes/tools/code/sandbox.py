"""The child process side of ``execute_code``: its environment, its process group and its output.

The child never inherits the parent's environment. :func:`child_env` builds a minimal one from an
allow-list of harmless names (plus ``code_execution.env_passthrough``); every name that looks like a
secret (:func:`hermes.redact.is_secret_name`) and every ``HERMES_*`` variable is dropped whatever
the lists say.

The child runs in its own session / process group, so a timeout kills it together with everything it
started (:func:`kill_group`). Its stdout and stderr are read by threads into :class:`CappedOutput`
buffers that keep only a bounded head and tail in memory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING

from hermes.redact import is_secret_name

if TYPE_CHECKING:
    from hermes.tools.sandbox import Process

#: copied from the parent environment when set (and not secret-looking)
BASE_ENV_NAMES: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES",
    "TERM", "TZ", "SYSTEMROOT", "COMSPEC",
)
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def is_forbidden_env_name(name: str) -> bool:
    """Names never copied into the child: secret-looking ones and hermes' own ``HERMES_*`` variables."""
    return is_secret_name(name) or name.upper().startswith("HERMES_")


def child_env(run_dir: Path, tmp_dir: Path, passthrough: Iterable[str] = (),
              source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The complete environment of the child process (see the module docstring)."""
    parent = os.environ if source is None else source
    env: dict[str, str] = {}
    for name in (*BASE_ENV_NAMES, *passthrough):
        value = parent.get(name)
        if value is not None and not is_forbidden_env_name(name):
            env[name] = value
    env.setdefault("PATH", _DEFAULT_PATH)
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        TMPDIR=str(tmp_dir),
        PYTHONPATH=str(run_dir),
        PYTHONUNBUFFERED="1",
        PYTHONIOENCODING="utf-8",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


class CappedOutput:
    """Collects a byte stream, keeping at most ``limit`` bytes of its head and of its tail."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.limit:
                del self.tail[: len(self.tail) - self.limit]

    def text(self, max_chars: int, clean: Callable[[str], str] | None = None) -> tuple[str, bool]:
        """The decoded output cut to ``max_chars`` (head and tail with a marker); ``(text, truncated)``.

        ``clean`` (e.g. secret masking) is applied to the decoded head and tail *before* they are cut,
        so a cut can never split a secret and leave part of it readable.
        """
        clean = clean or (lambda s: s)
        complete = self.total == len(self.head)
        head = clean(self.head.decode("utf-8", errors="replace"))
        if complete and len(head) <= max_chars:
            return head, False
        keep_head = max_chars * 2 // 3
        keep_tail = max_chars - keep_head
        if complete:  # everything is in memory: exact count
            omitted = f"{len(head) - keep_head - keep_tail} characters"
            tail = head[-keep_tail:]
        else:
            # bytes between the kept head and tail were never stored: count the skipped text in bytes
            tail_all = clean(self.tail.decode("utf-8", errors="replace"))
            tail = tail_all[-keep_tail:]
            skipped = self.total - len(self.head) - len(self.tail)
            hidden = len(head) - keep_head + len(tail_all) - len(tail)
            omitted = f"{hidden} characters and {skipped} bytes" if skipped else f"{hidden} characters"
        marker = f"\n[hermes: output truncated: {omitted} omitted from the middle]\n"
        return head[:keep_head] + marker + tail, True


def _pump(stream: IO[bytes], sink: CappedOutput) -> None:
    try:
        while True:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not chunk:
                break
            sink.feed(chunk)
    except (OSError, ValueError):
        pass
    finally:
        stream.close()


class ChildProcess:
    """A started child with its output readers; always call :meth:`close`.

    Each reader thread owns its pipe and closes it at end of file.
    """

    def __init__(self, argv: list[str], *, cwd: str, env: dict[str, str], out_limit: int, err_limit: int,
                 start: Callable[..., Process] | None = None) -> None:
        """``start``: how the command line is started (:meth:`hermes.tools.sandbox.Launch.start`: in the OS
        sandbox); None: a plain child process."""
        self.stdout = CappedOutput(out_limit)
        self.stderr = CappedOutput(err_limit)
        self.proc: Process
        if start is not None:
            self.proc = start(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        else:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
        self._closed: int | None = None
        self._readers: list[threading.Thread] = []
        for stream, sink in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr)):
            assert stream is not None
            reader = threading.Thread(target=_pump, args=(stream, sink), name="execute_code-output", daemon=True)
            reader.start()
            self._readers.append(reader)

    def wait(self, timeout: float) -> int | None:
        """Wait for the child to exit; its exit status, or None when ``timeout`` passed first."""
        try:
            return self.proc.wait(timeout=max(timeout, 0.0))
        except subprocess.TimeoutExpired:
            return None

    def kill_group(self) -> None:
        """SIGKILL the child's whole process group (the child and everything it started)."""
        kill_group(self.proc.pid)

    def close(self) -> int:
        """Kill what is left of the group, reap the child and finish reading (idempotent)."""
        if self._closed is not None:
            return self._closed
        self.kill_group()
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
            self.proc.kill()
            code = self.proc.wait()
        for reader in self._readers:
            # a process that left the group (setsid) may still hold the pipe: do not wait for it
            # forever; the reader then closes its pipe itself when that process lets go
            reader.join(timeout=2.0)
        self._closed = code
        return code


def kill_group(pgid: int) -> None:
    """Send SIGKILL to a process group, ignoring a group that is already gone."""
    killpg = getattr(os, "killpg", None)
    if killpg is None:  # pragma: no cover - not POSIX
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        killpg(pgid, signal.SIGKILL)
