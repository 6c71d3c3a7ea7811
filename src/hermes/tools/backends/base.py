"""The execution-backend interface every plugin implements, and what all of them share.

A backend runs ``bash -c COMMAND`` somewhere (:meth:`Backend.exec`: raw bytes, a wall-clock limit that
kills the command's whole process group there, stdin given up front or end-of-file), and reads, writes
and stats files *of that same place* (:meth:`Backend.stat`, :meth:`Backend.read_bytes`,
:meth:`Backend.write_bytes`, atomic). On top of these primitives the base class gives every backend

* :meth:`Backend.run` — the ``terminal`` result fields: output decoded, capped (head and tail kept
  around a marker), exit code, duration, ``timed_out``, ``connection_lost``;
* :meth:`Backend.upload` / :meth:`Backend.download` — a local file to the backend and back;
* background processes (:mod:`.procs`) — a detached process group whose output, exit status and stdin
  live in a private folder on the backend, so they survive a dropped connection.

A backend object belongs to one task (:mod:`.session`) and is closed with it (:meth:`Backend.close`).
"""

from __future__ import annotations

import shlex
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from hermes.errors import ToolError

#: characters of output a foreground command returns by default (the terminal tool's cap)
DEFAULT_MAX_CHARS = 40_000
OUTPUT_MARKER = "[hermes: output truncated"
#: extra seconds the client waits past a command's own limit before it gives up on the connection
CLIENT_GRACE = 10.0


class BackendError(ToolError):
    """The backend could not be reached or refused the request (the message says which and why)."""


class ConnectionLost(BackendError):
    """The connection dropped while a request was under way; the next call reconnects."""


@dataclass(frozen=True)
class FileStat:
    """What the file tools need of a file on a backend (``mode`` is the full ``st_mode``)."""

    size: int
    mtime_ns: int
    mode: int


@dataclass(frozen=True)
class ExecResult:
    """One finished command: its output (stdout and stderr merged, at most the cap asked for: head and
    tail), the total bytes it wrote, the exit status (None when unknown) and why it ended early."""

    output: bytes
    total_bytes: int
    exit_code: int | None
    duration_s: float
    timed_out: bool = False
    connection_lost: bool = False


def cap_bytes(head: bytes, tail: bytes, total: int) -> bytes:
    """Glue a captured head and tail back together with the truncation marker between them."""
    omitted = total - len(head) - len(tail)
    if omitted <= 0:
        return head + tail
    marker = (f"\n\n{OUTPUT_MARKER}: {omitted} of {total} bytes omitted from the middle; redirect to a file "
              "and read it in pages, or filter with grep/head/tail]\n\n")
    return head + marker.encode() + tail


class ByteCap:
    """Keeps the head and tail of a byte stream within ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.head_limit = limit * 2 // 5
        self.tail_limit = limit - self.head_limit
        self.head = b""
        self.tail = b""
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail = (self.tail + data)[-self.tail_limit:]

    def value(self) -> bytes:
        return cap_bytes(self.head, self.tail, self.total)


def shell_script(command: str, cwd: str | None, env: Mapping[str, str]) -> str:
    """The script a backend's ``bash`` runs: change to ``cwd``, export ``env``, merge stderr into stdout,
    then ``command``."""
    prologue = []
    if cwd:
        prologue.append(f"cd {shlex.quote(cwd)} || exit 126")
    if env:
        prologue.append("export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()))
    prologue.append("exec 2>&1")
    return "\n".join(prologue) + "\n" + command


def shell_line(command: str, cwd: str | None, env: Mapping[str, str], timeout: float | None) -> str:
    """The one ``sh`` line a backend runs: ``bash -c`` of :func:`shell_script` under coreutils ``timeout``
    (it runs in a process group of its own and kills that whole group at the limit: exit status 124)."""
    run = f"bash -c {shlex.quote(shell_script(command, cwd, env))}"
    if timeout is not None:
        run = f"timeout -k 2 {max(1, round(timeout))} {run}"
    return run


class Backend(ABC):
    """One place where commands run and files live (see the module docstring)."""

    #: the ``terminal.backend`` value
    name: ClassVar[str] = ""
    #: commands run inside an isolation boundary (a container, a managed sandbox): the approval flow
    #: treats them like commands in the local OS sandbox (unproven ones run unasked)
    isolated: ClassVar[bool] = False
    #: the tools use their own local path (the OS sandbox, local path rules) instead of this object
    local: ClassVar[bool] = False

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = dict(settings)
        self.created = time.time()
        self._home: str | None = None
        #: leave a container or sandbox running at close (``terminal.keep_sandbox``)
        self.keep = False
        #: process groups started by :mod:`.procs`, stopped when the backend closes
        self.groups: list[int] = []
        self.closed = False

    # -- what every plugin implements ------------------------------------------------------------------
    @abstractmethod
    def describe(self) -> str:
        """Where commands run, for results and status lines (``ssh alice@host:22``); no secret in it."""

    @abstractmethod
    def exec(self, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None,
             timeout: float = 60.0, stdin: bytes | None = None, max_bytes: int = 4 * DEFAULT_MAX_CHARS) -> ExecResult:
        """Run ``bash -c command`` to its end or ``timeout``; stdin is ``stdin`` then end-of-file."""

    @abstractmethod
    def stat(self, path: str) -> FileStat | None:
        """The file at ``path`` (symlinks followed); None when nothing is there."""

    @abstractmethod
    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        """The whole file (a :class:`BackendError` when larger than ``max_bytes`` or unreadable)."""

    @abstractmethod
    def write_bytes(self, path: str, data: bytes, mode: int | None = None) -> FileStat:
        """Replace or create ``path`` atomically (a temporary file beside it, then a rename); missing parent
        folders are created; ``mode`` None keeps an existing file's permission bits (new: 0644)."""

    def close(self) -> None:  # noqa: B027 - optional hook: most backends hold a connection
        """Release the connection or sandbox (the session ends)."""

    # -- shared on top of the primitives ---------------------------------------------------------------
    def home(self) -> str:
        """The login's home folder there (asked once)."""
        if self._home is None:
            result = self.exec('printf %s "$HOME"', timeout=30)
            self._home = result.output.decode("utf-8", "replace").strip() or "/"
        return self._home

    def default_cwd(self) -> str:
        """Where commands start when no ``workdir`` is given: the backend's ``cwd`` setting, else the home."""
        configured = self.settings.get("cwd")
        return str(configured) if isinstance(configured, str) and configured else self.home()

    def run(self, command: str, *, cwd: str | None, env: Mapping[str, str], timeout: float,
            max_chars: int = DEFAULT_MAX_CHARS) -> dict[str, Any]:
        """Run a foreground command; returns the ``terminal`` result fields."""
        result = self.exec(command, cwd=cwd, env=env, timeout=timeout, max_bytes=max_chars)
        text = result.output.decode("utf-8", errors="replace")
        out: dict[str, Any] = {"output": text, "exit_code": result.exit_code,
                               "duration_s": round(result.duration_s, 3)}
        if result.total_bytes > max_chars:
            out["truncated"] = True
            out["output_chars"] = result.total_bytes
        if result.timed_out:
            out["timed_out"] = True
            out["note"] = (f"timed out after {timeout:g} s; the command's process group was killed. Raise "
                           "'timeout' (max 600) or run it with background=true and follow it with process_manage.")
        if result.connection_lost:
            out["connection_lost"] = True
            out["note"] = (f"the connection to {self.describe()} dropped while the command ran; its outcome is "
                           "unknown (it may have finished or been stopped). hermes reconnects on the next call: "
                           "check the command's effects before running it again.")
        return out

    def upload(self, local: Path, remote: str, mode: int | None = None) -> FileStat:
        """Copy a local file to ``remote`` (atomic there)."""
        return self.write_bytes(remote, local.read_bytes(), mode)

    def download(self, remote: str, local: Path, max_bytes: int = 1 << 30) -> int:
        """Copy ``remote`` to a local file; returns the bytes written."""
        from hermes.config.atomic import atomic_write

        data = self.read_bytes(remote, max_bytes)
        atomic_write(local, data)
        return len(data)

    def temp_dir(self) -> str:
        """A private folder on the backend for this task's run files (created on first use)."""
        folder = self.settings.get("_temp_dir")
        if isinstance(folder, str):
            return folder
        result = self.exec('d=$(mktemp -d "${TMPDIR:-/tmp}/hermes-XXXXXXXX") && printf %s "$d"', timeout=30)
        made = result.output.decode("utf-8", "replace").strip()
        if result.exit_code != 0 or not made.startswith("/"):
            raise BackendError(f"could not create a private folder on {self.describe()}: {made[:200]}")
        self.settings["_temp_dir"] = made
        return made

    def remove_temp_dir(self) -> None:
        """Delete :meth:`temp_dir` (the session ends)."""
        folder = self.settings.pop("_temp_dir", None)
        line = "".join(f"kill -TERM -- -{pid} 2>/dev/null; " for pid in self.groups)
        self.groups.clear()
        if isinstance(folder, str) and folder.startswith("/") and "hermes-" in folder:
            line += f"rm -rf -- {shlex.quote(folder)}"
        if line:
            self.exec(line + "; true", timeout=30)
