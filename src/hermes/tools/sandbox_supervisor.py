"""The supervisor that runs inside one long-lived sandbox and starts a session's commands there.

Started once per session (and sandbox shape) by :mod:`hermes.tools.sandbox_pool` as
``python -I -S sandbox_supervisor.py FD`` under ``bwrap``; FD is its end of a Unix socket pair to hermes.
It imports nothing but the standard library (no ``site``), so it is ready in a few milliseconds.

For every command hermes sends one message on that socket: a JSON header (argv, cwd, env) and, as
``SCM_RIGHTS``, a socket for this command and the command's stdin, stdout and stderr. The supervisor
forks; the child starts a new session (its own process group), makes itself a child subreaper
(``PR_SET_CHILD_SUBREAPER``, kept across ``exec``), moves to ``cwd``, puts the three descriptors on
0/1/2, sends one byte on the command socket — hermes reads the child's process id in its own PID
namespace from the kernel's ``SCM_CREDENTIALS`` on it, so it can signal the whole group itself — and
executes ``argv`` with exactly ``env``.

Nothing a command starts outlives it, ``setsid`` and double forks included: an orphan is handed to
the nearest subreaper above it — the command while it runs, then the supervisor (a subreaper too),
never the sandbox's init. So when a command ends, whatever is a child of the supervisor but no running
command is what an ended command left behind, and the supervisor kills it, its whole tree, before it
writes the command's wait status on the command socket and closes it. No daemon of one command can
read a later command's ``/proc/PID/environ``, as when every command had a sandbox (and PID namespace)
of its own. A background process (``process_manage``) is a command like any other: what it starts
lives while it runs and goes when it ends.
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
_PR_SET_CHILD_SUBREAPER = 36
_prctl: list[object] = []  # libc's prctl, looked up once by the supervisor (its children inherit it)


def _become_subreaper() -> bool:
    """Make this process the one orphans below it are handed to (Linux 3.4+); whether it could."""
    if not _prctl:
        import ctypes

        try:
            _prctl.append(ctypes.CDLL(None, use_errno=True).prctl)
        except (OSError, AttributeError):
            _prctl.append(None)
    call = _prctl[0]
    return callable(call) and call(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


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
        _become_subreaper()  # what the command starts and leaves stays below it while it runs
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


def _processes_by(field: int) -> dict[int, list[int]]:
    """Every process of the sandbox by a field of its ``stat`` after the state (1: its parent, 3: its
    session), from the sandbox's own ``/proc``."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > field:
            children.setdefault(int(fields[field]), []).append(int(name))
    return children


def _children(me: int) -> list[int]:
    """This process's children: one small file where the kernel has it, else a scan of ``/proc``."""
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as fh:
            return [int(pid) for pid in fh.read().split()]
    except OSError:
        return _processes_by(1).get(me, [])


def _end_session(leader: int) -> None:
    """Where no subreaper can be had: kill what stayed in the ended command ``leader``'s session."""
    for _ in range(20):
        members = _processes_by(3).get(leader, [])
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _end_strays(me: int, running: dict[int, int]) -> None:
    """Kill what ended commands left behind: every child of the supervisor that is no running command,
    with everything below it."""
    strays = [pid for pid in _children(me) if pid not in running]
    if not strays:
        return
    tree = _processes_by(1)
    while strays:
        pid = strays.pop()
        strays += tree.get(pid, [])
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
    me = os.getpid()
    contained = _become_subreaper()
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
        ended: list[tuple[int, int, int]] = []  # (pid, command socket, wait status)
        reaped = False
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            reaped = True
            command = running.pop(pid, None)
            if command is not None:
                ended.append((pid, command, status))
        if reaped and contained:  # a command or something it left ended: kill what is left over
            _end_strays(me, running)
        for pid, command, status in ended:
            if not contained:
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
