"""One long-lived sandbox per session: commands are forked inside an already built ``bwrap`` sandbox.

Starting ``bwrap`` costs about 10 ms on a quiet machine (and several times that under load): new
namespaces, a few dozen mounts, a fresh ``/proc``. A session's commands mostly get the same sandbox,
so the first one starts a small supervisor (:mod:`hermes.tools.sandbox_supervisor`) inside it and every
later one with the same sandbox shape is handed to that supervisor, which forks it there.

The *shape* is the whole ``bwrap`` command line but the working directory: mode, writable folders,
hidden folders and files, network, and the identity of every mounted folder (one removed and made
again is another). When any of it changes (another mode, a folder becomes writable, a secret file
appears, a command asks for the network) the next command gets a new supervisor and the one before is
retired: it stops as soon as no command of it runs any more (a background process keeps it until it ends).
A session's supervisors are killed with the session (:func:`drop`) and all of them when hermes exits;
``bwrap --die-with-parent`` takes a sandbox down if hermes dies.

Everything a sandboxed command had before still holds: the same mounts and namespaces, exactly the
environment hermes built for it, its own session and process group (hermes learns the command's process
id in its own PID namespace from the kernel, ``SCM_CREDENTIALS``, and signals the group itself), its
output through pipes hermes reads. Where a supervisor cannot be started the command runs in a
sandbox of its own, as before.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any

from hermes.errors import ToolError

#: supervisors kept per session: a new shape retires the one before (it stops once nothing runs in it)
MAX_PER_SESSION = 1
_START_TIMEOUT = 10.0
_SCRIPT = str(Path(__file__).with_name("sandbox_supervisor.py"))
_CREDS = struct.Struct("3i")


class SupervisorError(ToolError):
    """A supervisor could not be started or no longer answers (the caller falls back to a one-off sandbox)."""


class SandboxedProcess:
    """A command running under a supervisor, with the part of :class:`subprocess.Popen` the tools use.

    ``pid`` is the command's process id as hermes sees it; it leads its own process group, so
    ``os.killpg(pid, …)`` reaches everything it started."""

    def __init__(self, channel: socket.socket, stdin: IO[bytes] | None, stdout: IO[bytes] | None,
                 stderr: IO[bytes] | None, on_exit: Callable[[], None]) -> None:
        self._pid = 0
        self._pid_lock = threading.Lock()
        self._early: bytes | None = None
        self.args: list[str] = []
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._channel = channel
        self._lock = threading.Lock()
        self._on_exit = on_exit

    @property
    def pid(self) -> int:
        """The command's process id as hermes sees it (read from the first message of its channel: the
        child's credentials, translated by the kernel)."""
        if self._pid == 0:
            with self._pid_lock:
                self._read_pid()
        return self._pid

    def _read_pid(self) -> None:
        """Read the channel's first message (under ``_pid_lock``): ``p`` from the started command, whose
        credentials carry its pid, or at once the exit status when it could not start."""
        if self._pid != 0:
            return
        self._channel.settimeout(_START_TIMEOUT)
        try:
            data, ancillary, _flags, _addr = self._channel.recvmsg(64, socket.CMSG_SPACE(_CREDS.size))
        except OSError:
            data, ancillary = b"", []
        self._channel.settimeout(None)
        pid = next((_CREDS.unpack(payload[:_CREDS.size])[0] for level, kind, payload in ancillary
                    if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS), 0)
        if data == b"p" and pid > 0:
            self._pid = pid
        else:  # it never started: what came is the exit status (or nothing, when the sandbox died)
            self._pid, self._early = -1, data

    def _read_exit(self, timeout: float | None) -> bool:
        """Take the exit status from the supervisor when it comes within ``timeout``; whether it came."""
        if self.returncode is not None:
            return True
        if self._pid == 0:
            ready, _, _ = select.select([self._channel], [], [], timeout)
            if not ready:
                return False
            with self._pid_lock:
                self._read_pid()
        if self._early is not None:
            message = self._early
        else:
            ready, _, _ = select.select([self._channel], [], [], timeout)
            if not ready:
                return False
            try:
                message = self._channel.recv(64)
            except OSError:
                message = b""
        self._channel.close()
        if message.startswith(b"x") and message[1:].isdigit():
            self.returncode = os.waitstatus_to_exitcode(int(message[1:]))
        else:  # the supervisor went away (its sandbox was killed): so was the command
            self.returncode = -signal.SIGKILL
        self._on_exit()
        return True

    def poll(self) -> int | None:
        if self.returncode is None and self._lock.acquire(blocking=False):  # busy: another thread waits
            try:
                self._read_exit(0)
            finally:
                self._lock.release()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._lock.acquire(timeout=-1 if timeout is None else max(timeout, 0.0)):
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        try:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._read_exit(left):
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        finally:
            self._lock.release()
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None and self.pid > 0:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


# -- starting bwrap from one long-lived thread -------------------------------------------------------------
# ``bwrap --die-with-parent`` asks for a signal when the *thread* that started it ends, so a sandbox that
# outlives one tool call must be started by a thread that lives as long as hermes.
_jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
_launcher_lock = threading.Lock()
_launcher: threading.Thread | None = None


def _launcher_loop() -> None:
    while True:
        job, done = _jobs.get()
        try:
            done.set_result(job())
        except BaseException as exc:
            done.set_exception(exc)


def _in_launcher(job: Callable[[], Any]) -> Any:
    global _launcher
    with _launcher_lock:
        if _launcher is None or not _launcher.is_alive():
            _launcher = threading.Thread(target=_launcher_loop, name="sandbox-launcher", daemon=True)
            _launcher.start()
    done: Future[Any] = Future()
    _jobs.put((job, done))
    return done.result(_START_TIMEOUT + 5)


def _supervisor_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "LANG": "C.UTF-8"}


class Supervisor:
    """One sandbox (``bwrap`` with the shape ``shape``) and the supervisor inside it."""

    def __init__(self, shape: Sequence[str]) -> None:
        self.shape = tuple(shape)
        self.identity: tuple[tuple[int, int], ...] = ()
        self.active = 0
        self.retired = False
        self.used = time.monotonic()
        self._lock = threading.Lock()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._control = ours
        argv = [*self.shape, "--chdir", "/", "--", sys.executable, "-I", "-S", _SCRIPT, str(theirs.fileno())]

        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, env=_supervisor_env(), start_new_session=True,
                                    pass_fds=(theirs.fileno(),))

        try:
            self._bwrap: subprocess.Popen[bytes] = _in_launcher(start)
        finally:
            theirs.close()
        ours.settimeout(_START_TIMEOUT)
        try:
            ready = ours.recv(1)
        except OSError:
            ready = b""
        ours.settimeout(None)
        if ready != b"r":
            why = self._stop()
            raise SupervisorError(f"the sandbox supervisor did not start: {why or 'no answer'}")

    def alive(self) -> bool:
        return self._bwrap.poll() is None

    def start(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], stdin: int | None,
              stderr: int | None) -> SandboxedProcess:
        """Run ``argv`` in this sandbox. ``stdin``: ``subprocess.DEVNULL`` or ``PIPE``; stdout is a pipe;
        ``stderr``: ``subprocess.STDOUT`` or ``PIPE``."""
        header = json.dumps({"argv": list(argv), "cwd": cwd, "env": dict(env)}).encode("utf-8")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        sent: list[int] = [theirs.fileno()]
        kept: list[IO[bytes]] = []
        try:
            if stdin == subprocess.PIPE:
                child_in, host_in = os.pipe()
                writer = os.fdopen(host_in, "wb")
                kept.append(writer)
                stdin_file: IO[bytes] | None = writer
            else:
                child_in, stdin_file = os.open(os.devnull, os.O_RDONLY), None
            sent.append(child_in)
            host_out, child_out = os.pipe()
            stdout_file = os.fdopen(host_out, "rb")
            kept.append(stdout_file)
            sent.append(child_out)
            stderr_file: IO[bytes] | None = None
            if stderr == subprocess.PIPE:
                host_err, child_err = os.pipe()
                stderr_file = os.fdopen(host_err, "rb")
                kept.append(stderr_file)
                sent.append(child_err)
            else:
                sent.append(child_out)
            with self._lock:
                self.used = time.monotonic()
                self.active += 1
                try:
                    self._control.sendmsg([struct.pack("!I", len(header)), header],
                                          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(sent)}i", *sent))])
                except OSError as exc:
                    self.active -= 1
                    raise SupervisorError(f"the sandbox supervisor is gone: {exc}") from exc
        except BaseException:
            ours.close()
            for stream in kept:
                stream.close()
            raise
        finally:
            theirs.close()
            for fd in dict.fromkeys(sent[1:]):
                with contextlib.suppress(OSError):
                    os.close(fd)
        return SandboxedProcess(ours, stdin_file, stdout_file, stderr_file, self._finished)

    def _finished(self) -> None:
        with self._lock:
            self.active -= 1
            done = self.retired and self.active <= 0
        if done:
            self._stop()

    def retire(self) -> None:
        """Stop once no command of it runs any more."""
        with self._lock:
            self.retired = True
            idle = self.active <= 0
        if idle:
            self._stop()

    def _stop(self) -> str:
        """Kill the sandbox (everything in it dies with its PID namespace); what bwrap said on stderr."""
        with contextlib.suppress(OSError):
            self._control.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._bwrap.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._bwrap.wait(5.0)
        said = b""
        if self._bwrap.stderr is not None:
            with contextlib.suppress(OSError, ValueError):
                said = self._bwrap.stderr.read(4000) if self._bwrap.returncode is not None else b""
            self._bwrap.stderr.close()
        return said.decode("utf-8", "replace").strip()

    def kill(self) -> None:
        self._stop()


# -- the pool -----------------------------------------------------------------------------------------------
_pool: dict[str, list[Supervisor]] = {}
_retired: dict[str, list[Supervisor]] = {}  # still running a command; killed with the session all the same
_pool_lock = threading.Lock()
_exit_hook = False


def _identity(shape: Sequence[str]) -> tuple[tuple[int, int], ...]:
    """(device, inode) of every folder or file the sandbox mounts: a folder removed and made again under the
    same name is another folder, which a sandbox built before cannot show (its mount holds the old one)."""
    found = []
    for index, word in enumerate(shape[:-2]):
        if word in ("--bind", "--ro-bind"):
            try:
                st = os.stat(shape[index + 1])
                found.append((st.st_dev, st.st_ino))
            except OSError:
                found.append((-1, -1))
    return tuple(found)


def supervisor_for(session: str, shape: Sequence[str]) -> Supervisor:
    """The running supervisor of ``session`` for the sandbox ``shape``, started when there is none."""
    global _exit_hook
    key = tuple(shape)
    identity = _identity(key)
    with _pool_lock:
        mine = _pool.setdefault(session, [])
        for found in mine:
            if found.shape == key and found.identity == identity and found.alive() and not found.retired:
                found.used = time.monotonic()
                return found
        if not _exit_hook:
            atexit.register(drop_all)
            _exit_hook = True
    made = Supervisor(key)
    made.identity = identity
    with _pool_lock:
        mine = _pool.setdefault(session, [])
        dead = [s for s in mine if not s.alive()]  # its sandbox died (a command killed the supervisor)
        mine[:] = [s for s in mine if s.alive() and not s.retired]
        mine.append(made)
        mine.sort(key=lambda s: s.used)
        surplus = mine[: max(0, len(mine) - MAX_PER_SESSION)]
        del mine[: len(surplus)]
        waiting = _retired.setdefault(session, [])
        waiting[:] = [s for s in waiting if s.alive()] + surplus
    for old in surplus:
        old.retire()
    for gone in dead:
        gone.kill()  # closes what hermes held of it
    return made


def running(session: str) -> int:
    """How many supervisors ``session`` has (for tests and ``status``)."""
    with _pool_lock:
        return sum(1 for s in _pool.get(session, []) if s.alive())


def drop(session: str) -> None:
    """Kill the sandboxes of ``session`` and everything still running in them."""
    with _pool_lock:
        mine = _pool.pop(session, []) + _retired.pop(session, [])
    for found in mine:
        found.kill()


def drop_all() -> None:
    for session in {*_pool, *_retired}:
        drop(session)
