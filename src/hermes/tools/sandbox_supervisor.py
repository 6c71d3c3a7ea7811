"""The supervisor that runs inside one long-lived sandbox and starts a session's commands there.

Started once per session (and sandbox shape) by :mod:`hermes.tools.sandbox_pool` as
``python -I -S sandbox_supervisor.py FD`` under ``bwrap``; FD is its end of a Unix socket pair to hermes.
It imports nothing but the standard library (no ``site``), so it is ready in a few milliseconds.

For every command hermes sends one message on that socket: a JSON header (argv, cwd, env) and, as
``SCM_RIGHTS``, a socket for this command and the command's stdin, stdout and stderr. The supervisor
forks; the child starts a new session (its own process group), moves to ``cwd``, puts the three
descriptors on 0/1/2, sends one byte on the command socket — hermes reads the child's process id in its
own PID namespace from the kernel's ``SCM_CREDENTIALS`` on it, so it can signal the whole group itself —
and executes ``argv`` with exactly ``env``. When the child ends the supervisor kills what is left of its
session (what it started in the background: as when every command had a sandbox of its own, nothing a
command leaves behind outlives it, unless it started a session of its own with ``setsid``; that lives
until the session's sandbox is stopped), writes its wait status on the command socket and closes it.
When hermes closes its end of the control socket (or dies), the supervisor exits and bubblewrap takes
the whole sandbox down with it.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import select
import signal
import socket
import struct
import sys

_MAX_HEADER = 4 * 1024 * 1024
_FDS_PER_COMMAND = 4  # command socket, stdin, stdout, stderr


def _receive(control: socket.socket) -> tuple[dict[str, object], list[int]] | None:
    """One command from hermes: its header and descriptors (None: hermes closed the control socket)."""
    fds = array.array("i")
    chunks: list[bytes] = []
    size = -1
    got = 0
    while size < 0 or got < size:
        data, ancillary, _flags, _addr = control.recvmsg(65536, socket.CMSG_SPACE(_FDS_PER_COMMAND * fds.itemsize))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        if not data:
            for fd in fds:
                os.close(fd)
            return None
        chunks.append(data)
        got += len(data)
        if size < 0 and got >= 4:
            size = 4 + struct.unpack("!I", b"".join(chunks)[:4])[0]
            if size > _MAX_HEADER:
                raise SystemExit("hermes sandbox supervisor: oversized request")
    header = json.loads(b"".join(chunks)[4:size].decode("utf-8"))
    return header, list(fds)


def _child(header: dict[str, object], fds: list[int], keep: list[int]) -> None:
    """In the forked child: become the command (never returns)."""
    status = 127
    try:
        command, stdin, stdout, stderr = fds
        for fd in keep:
            os.close(fd)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD, signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        os.setsid()
        for target, fd in ((0, stdin), (1, stdout), (2, stderr)):
            os.dup2(fd, target)
        argv = [str(a) for a in header["argv"]]  # type: ignore[attr-defined]
        env = {str(k): str(v) for k, v in header["env"].items()}  # type: ignore[attr-defined]
        try:
            os.chdir(str(header["cwd"]))
        except OSError as exc:
            os.write(2, f"hermes sandbox: cannot enter {header['cwd']}: {exc.strerror}\n".encode())
            status = 1
            raise
        creds = struct.pack("3i", os.getpid(), os.getuid(), os.getgid())  # hermes reads its own view of the pid
        with socket.socket(fileno=command) as channel:
            channel.sendmsg([b"p"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, creds)])
        for fd in (stdin, stdout, stderr):
            if fd > 2:
                os.close(fd)
        try:
            os.execvpe(argv[0], argv, env)
        except OSError as exc:
            os.write(2, f"hermes sandbox: cannot run {argv[0]}: {exc.strerror}\n".encode())
            status = 126 if isinstance(exc, PermissionError) else 127
    except BaseException:
        pass
    os._exit(status)


def _session_members(leader: int) -> list[int]:
    """The processes of the sandbox still in the session ``leader`` started (its pid is the session id)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 3 and fields[3] == str(leader).encode("ascii"):
            found.append(int(name))
    return found


def _end_session(leader: int) -> None:
    """Kill what the command ``leader`` left behind in its session (background jobs, ``nohup``), as its
    own sandbox's PID namespace did when each command had one; repeated until none is left."""
    for _ in range(20):
        members = _session_members(leader)
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def main() -> int:
    control = socket.socket(fileno=int(sys.argv[1]))
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    os.set_blocking(wake_read, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    running: dict[int, int] = {}  # child pid -> its command socket
    control.sendall(b"r")  # ready
    while True:
        readable, _, _ = select.select([control.fileno(), wake_read], [], [])
        if wake_read in readable:
            while True:
                try:
                    if not os.read(wake_read, 512):
                        break
                except BlockingIOError:
                    break
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            command = running.pop(pid, None)
            if command is not None:
                _end_session(pid)
                with contextlib.suppress(OSError):
                    os.write(command, b"x" + str(status).encode("ascii"))
                os.close(command)
        if control.fileno() not in readable:
            continue
        received = _receive(control)
        if received is None:
            return 0
        header, fds = received
        if len(fds) != _FDS_PER_COMMAND:
            for fd in fds:
                os.close(fd)
            continue
        pid = os.fork()
        if pid == 0:
            _child(header, fds, [control.fileno(), wake_read, wake_write, *running.values()])
        for fd in fds[1:]:
            os.close(fd)
        running[pid] = fds[0]


if __name__ == "__main__":
    raise SystemExit(main())
