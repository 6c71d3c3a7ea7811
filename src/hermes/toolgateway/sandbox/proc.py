"""One sandbox command as a child process: environment, resource limits, process group, output.

:class:`ExecProcess` starts ``/bin/sh -c COMMAND`` through the event loop's own subprocess support
(:meth:`asyncio.loop.subprocess_exec` with a small protocol), so nothing blocks the loop:

* **its own session** (``start_new_session``): the shell and everything it starts share one process
  group, which :meth:`ExecProcess.kill_group` ends with ``SIGKILL`` (a command that calls ``setsid``
  itself leaves the group and is not reached — see the security notes in ``docs/gateway/server.md``);
* **another Unix user** when the gateway runs as root: the child drops root's supplementary groups and
  switches group and user before ``exec``, and only then changes into the working directory;
* **resource limits** applied in the child before ``exec`` (:class:`Rlimits`): address space, CPU
  seconds, largest file, number of processes (only with a separate user: the kernel counts it per
  user), no core files, a lower priority; umask 077;
* **a scrubbed environment** built from nothing (:func:`child_env`): no variable of the gateway's own
  environment reaches the command, so no vendor key, admin token or database address can;
* **stdout and stderr merged** into one pipe, in the order written, kept in a :class:`CappedOutput`
  (the first and last halves of ``max_output_bytes``); **stdin** is ``stdinData`` or ``/dev/null``.

The user switch, umask and limits all happen in one ``preexec_fn`` (:meth:`Rlimits.preexec`), not through
the ``user=``, ``group=``, ``extra_groups=`` and ``umask=`` arguments of :class:`subprocess.Popen`:
uvloop's ``subprocess_exec`` (which uvicorn uses whenever uvloop is installed, as with
``uvicorn[standard]``) refuses those arguments, and every command would fail to start. A failure in the
child before ``exec`` (for example the user switch) aborts the command on both loops; it never runs as
the gateway's user.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

SHELL = "/bin/sh"
DRAIN_SECONDS = 0.5


class CappedOutput:
    """A byte stream of which at most ``limit`` bytes are kept: the first half and the latest half."""

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.half:
                del self.tail[: len(self.tail) - self.half]

    @property
    def size(self) -> int:
        """Bytes held."""
        return len(self.head) + len(self.tail)

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def compact(self) -> None:
        """Hold no more memory than the bytes kept (for output that is complete)."""
        self.head = bytearray(self.head)
        self.tail = bytearray(self.tail)

    def release(self) -> None:
        """Forget every byte kept (``total`` stays, so the output counts as truncated)."""
        self.head = bytearray()
        self.tail = bytearray()

    def text(self) -> str:
        """The output as text (UTF-8, undecodable bytes replaced), with a marker where bytes were dropped."""
        head = self.head.decode("utf-8", errors="replace")
        if not self.tail:
            return head
        tail = self.tail.decode("utf-8", errors="replace")
        dropped = self.total - len(self.head) - len(self.tail)
        if dropped <= 0:
            return (self.head + self.tail).decode("utf-8", errors="replace")
        return f"{head}\n[sandbox: {dropped} bytes of output omitted]\n{tail}"


@dataclass(frozen=True)
class Rlimits:
    """Limits of one command: bytes of address space, CPU seconds, bytes per file, processes (0: unset)."""

    address_space: int
    cpu_seconds: int
    file_size: int
    processes: int = 0
    nice: int = 0

    def preexec(self, identity: Identity | None = None, cwd: Path | None = None) -> Callable[[], None]:
        """The function the child runs before ``exec``: ``setrlimit``, ``nice`` and ``umask(077)``, then,
        when ``identity.switch``, no supplementary groups, ``setgid`` and ``setuid`` (in that order), and
        last ``chdir(cwd)`` — as the new user, so a symbolic link the sandbox user planted in the path
        is followed with that user's rights only, never root's.

        Each wanted limit is lowered to the gateway's own hard limit first (the child cannot raise it).
        """
        wanted = [(resource.RLIMIT_AS, self.address_space), (resource.RLIMIT_CPU, self.cpu_seconds),
                  (resource.RLIMIT_FSIZE, self.file_size), (resource.RLIMIT_CORE, 0)]
        if self.processes > 0:
            wanted.append((resource.RLIMIT_NPROC, self.processes))
        pairs: list[tuple[int, tuple[int, int]]] = []
        for which, value in wanted:
            hard = resource.getrlimit(which)[1]
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            pairs.append((which, (value, value)))
        nice = self.nice
        switch = (identity.uid, identity.gid) if identity is not None and identity.switch else None
        folder = str(cwd) if cwd is not None else None

        def apply() -> None:
            for which, pair in pairs:
                resource.setrlimit(which, pair)
            if nice:
                os.nice(nice)
            os.umask(0o077)
            if switch is not None:
                os.setgroups([])
                os.setgid(switch[1])
                os.setuid(switch[0])
            if folder is not None:
                os.chdir(folder)

        return apply


@dataclass(frozen=True)
class Identity:
    """Who commands run as: a user to switch to (``uid``/``gid``), or None for the gateway's own user."""

    name: str
    uid: int
    gid: int
    switch: bool


def child_env(home: Path, cwd: Path, identity: Identity, path: str) -> dict[str, str]:
    """The whole environment of a command; nothing is copied from the gateway's environment."""
    return {"PATH": path, "HOME": str(home), "PWD": str(cwd), "USER": identity.name, "LOGNAME": identity.name,
            "SHELL": SHELL, "LANG": "C.UTF-8", "TERM": "dumb", "TMPDIR": str(home / ".tmp")}


def shell_returncode(code: int) -> int:
    """An exit status as a shell reports it: ``128 + N`` for a process killed by signal N."""
    return 128 - code if code < 0 else code


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, sink: CappedOutput, loop: asyncio.AbstractEventLoop) -> None:
        self.sink = sink
        self.exited: asyncio.Future[None] = loop.create_future()
        self.eof: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.sink.feed(data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.eof.done():
            self.eof.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


class ExecProcess:
    """A started command; :meth:`wait`, maybe :meth:`kill_group`, then always :meth:`close`."""

    def __init__(self, transport: asyncio.SubprocessTransport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self.pid: int = transport.get_pid()

    @classmethod
    async def start(cls, command: str, *, cwd: Path, env: Mapping[str, str], identity: Identity,
                    limits: Rlimits, stdin: bytes | None, output: CappedOutput) -> ExecProcess:
        """Start the command (OSError or :class:`subprocess.SubprocessError` when it cannot start)."""
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.subprocess_exec(
            lambda: _Protocol(output, loop), SHELL, "-c", command,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(env),
            start_new_session=True, close_fds=True, preexec_fn=limits.preexec(identity, cwd))
        proc = cls(transport, protocol)
        if stdin is not None:
            pipe = transport.get_pipe_transport(0)
            if pipe is not None:  # uvloop's pipe transports write like asyncio's but do not subclass them
                writer = cast(asyncio.WriteTransport, pipe)
                writer.write(stdin)
                writer.close()  # flushes what the child has not read yet, then gives it end of file
        return proc

    async def wait(self, timeout: float | None) -> int | None:
        """The shell's exit status (``128+N`` for signal N), or None when ``timeout`` passed first."""
        done, _ = await asyncio.wait({self._protocol.exited}, timeout=timeout)
        if not done:
            return None
        code = self._transport.get_returncode()
        return shell_returncode(code) if code is not None else None

    async def drain(self, seconds: float = DRAIN_SECONDS) -> None:
        """Read what is still in the pipe; stop after ``seconds`` if a background process holds it open."""
        await asyncio.wait({self._protocol.eof}, timeout=seconds)

    def kill_group(self) -> None:
        """SIGKILL the command's process group (the shell and everything left in its group)."""
        kill_group(self.pid)

    def close(self) -> None:
        """Release the pipes (writers still holding them get EPIPE) and the transport."""
        self._transport.close()


def kill_group(pgid: int) -> bool:
    """SIGKILL a process group; False when it no longer exists."""
    try:
        os.killpg(pgid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


async def stop(proc: ExecProcess) -> None:
    """Kill the group, wait briefly for the shell, read the rest of the pipe."""
    proc.kill_group()
    await proc.wait(5.0)
    await proc.drain()


__all__ = ["DRAIN_SECONDS", "SHELL", "CappedOutput", "ExecProcess", "Identity", "Rlimits", "child_env",
           "kill_group", "shell_returncode", "stop"]
