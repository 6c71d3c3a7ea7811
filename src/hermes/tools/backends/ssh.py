"""The ``ssh`` backend: commands and files on a server, over one asyncssh connection per task.

Settings (``terminal.ssh.*`` in config.yaml): ``host`` (required), ``port`` (22), ``user`` (the local
login name), ``key_file`` (a private key; without it the keys of the SSH agent at ``SSH_AUTH_SOCK`` and
the usual ``~/.ssh/id_*`` are tried), ``known_hosts`` (``~/.ssh/known_hosts``), ``host_key_check``
(true: the server's host key must be listed there — a server that is not listed, or whose key changed,
is refused; false turns the check off and is unsafe), ``connect_timeout`` (10 s), ``cwd`` (where
commands start: the home folder by default).

Commands run in one resident ``bash`` per connection (job control on): each is a forked subshell that
``eval``s the script of :func:`~.base.shell_script` (stderr merged into stdout) — a process group of its
own, which the client kills over a second channel at the time limit. No channel, login or program start
per command: the fast path. A command given stdin, or one started while another runs, gets a channel of
its own (``sh -c`` of :func:`~.base.shell_line`, under coreutils ``timeout``). Files go over SFTP on the
same connection; writes land in a temporary file beside the target, then a POSIX rename.

A dropped connection is noticed by the request that was under way: a command reports
``connection_lost`` (its outcome is unknown), a file request is retried once on a new connection; the
next request reconnects. Background processes (:mod:`.procs`) live on the server and survive the drop.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import posixpath
import secrets
import shlex
import stat
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from hermes.tools.asyncbridge import run_sync
from hermes.tools.backends.base import (
    CLIENT_GRACE,
    DEFAULT_MAX_CHARS,
    Backend,
    BackendError,
    ByteCap,
    ConnectionLost,
    ExecResult,
    FileStat,
    shell_line,
    shell_script,
)

if TYPE_CHECKING:
    import asyncssh

T = TypeVar("T")
NEW_FILE_MODE = 0o644


def _text(settings: Mapping[str, Any], key: str, default: str | None = None) -> str | None:
    value = settings.get(key, default)
    return str(value) if value not in (None, "") else default


class SSHBackend(Backend):
    """Commands and files on one SSH server (see the module docstring)."""

    name = "ssh"

    def __init__(self, settings: Mapping[str, Any]) -> None:
        super().__init__(settings)
        import importlib.util

        if importlib.util.find_spec("asyncssh") is None:
            raise BackendError("terminal.backend is ssh but asyncssh is not installed (pip install 'hermes[ssh]')")
        host = _text(settings, "host")
        if not host:
            raise BackendError("terminal.backend is ssh but terminal.ssh.host is not set; run 'hermes setup "
                               "terminal' or 'hermes config set terminal.ssh.host HOST'")
        self.host = host
        self.port = int(settings.get("port") or 22)
        self.user = _text(settings, "user") or getpass.getuser()
        self.timeout = float(settings.get("connect_timeout") or 10.0)
        self._conn: asyncssh.SSHClientConnection | None = None
        self._sftp: asyncssh.SFTPClient | None = None
        self._lock: asyncio.Lock | None = None
        self._shell: asyncssh.SSHClientProcess[bytes] | None = None
        self._shell_conn: asyncssh.SSHClientConnection | None = None
        self._shell_lock: asyncio.Lock | None = None
        self.reconnects = 0

    def describe(self) -> str:
        return f"ssh {self.user}@{self.host}:{self.port}"

    # -- the connection -------------------------------------------------------------------------------
    def _options(self) -> dict[str, Any]:
        check = self.settings.get("host_key_check", True)
        options: dict[str, Any] = {"host": self.host, "port": self.port, "username": self.user,
                                   "connect_timeout": self.timeout, "keepalive_interval": 15.0}
        if check is False or str(check).lower() in ("false", "no", "off", "0"):
            options["known_hosts"] = None
        else:
            known = os.path.expanduser(_text(self.settings, "known_hosts") or "~/.ssh/known_hosts")
            if not os.path.isfile(known):
                raise BackendError(
                    f"{self.describe()}: host key checking is on and {known} does not exist; add the server's key "
                    f"(ssh-keyscan -p {self.port} {self.host} >> {known}, after checking it) or name the file "
                    "in terminal.ssh.known_hosts")
            options["known_hosts"] = known
        key_file = _text(self.settings, "key_file")
        if key_file:
            path = os.path.expanduser(key_file)
            if not os.path.isfile(path):
                raise BackendError(f"terminal.ssh.key_file {key_file!r} does not exist")
            options["client_keys"] = [path]
        if self.settings.get("use_agent") is False:
            options["agent_path"] = None
        return options

    async def _connection(self) -> asyncssh.SSHClientConnection:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.closed:
                raise BackendError(f"{self.describe()}: this session's connection was closed")
            if self._conn is not None and not self._conn.is_closed():
                return self._conn
            import asyncssh

            self._conn, self._sftp, self._shell = None, None, None
            try:
                self._conn = await asyncssh.connect(**self._options())
            except asyncssh.HostKeyNotVerifiable as exc:
                raise BackendError(f"{self.describe()}: the server's host key is not trusted ({exc.reason}); "
                                   "check terminal.ssh.known_hosts") from None
            except asyncssh.PermissionDenied:
                raise BackendError(f"{self.describe()}: the server refused the login (no accepted key: set "
                                   "terminal.ssh.key_file or load the key into the SSH agent)") from None
            except (TimeoutError, OSError, asyncssh.Error) as exc:
                raise BackendError(f"{self.describe()}: cannot connect: {exc}") from None
            return self._conn

    def _dropped(self) -> None:
        self.reconnects += 1
        conn, self._conn, self._sftp, self._shell = self._conn, None, None, None
        if conn is not None:
            conn.abort()

    async def _sftp_client(self) -> asyncssh.SFTPClient:
        conn = await self._connection()
        if self._sftp is None:
            self._sftp = await conn.start_sftp_client()
        return self._sftp

    def _call(self, make: Callable[[], Awaitable[T]], timeout: float, retry: bool = True) -> T:
        """Run a request on the bridge loop; a file request that meets a dropped connection runs once more."""
        import asyncssh

        for attempt in (1, 2):
            try:
                return run_sync(asyncio.wait_for(make(), timeout), timeout + 1.0)
            except (asyncssh.ConnectionLost, asyncssh.DisconnectError, BrokenPipeError, ConnectionResetError,
                    asyncssh.ChannelOpenError) as exc:
                self._dropped()
                if not retry or attempt == 2:
                    raise ConnectionLost(f"{self.describe()}: the connection dropped ({exc})") from None
            except TimeoutError:
                self._dropped()
                raise BackendError(f"{self.describe()}: no answer within {timeout:g} s") from None
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self.closed:
            return
        with contextlib.suppress(Exception):
            self.remove_temp_dir()
        self.closed = True
        conn = self._conn
        if conn is None:
            return
        self._conn, self._sftp = None, None

        async def shut() -> None:
            conn.close()
            await conn.wait_closed()

        with contextlib.suppress(Exception):
            run_sync(asyncio.wait_for(shut(), 5.0), 6.0)

    # -- commands ------------------------------------------------------------------------------------
    async def _in_shell(self, conn: asyncssh.SSHClientConnection, script: str, timeout: float,
                        cap: ByteCap) -> tuple[int | None, bool]:
        """Run ``script`` in a forked subshell of the connection's resident shell — no channel, no login and no
        program start per command (the fast path). The resident shell has job control on, so the subshell
        is a process group of its own: at ``timeout`` the client kills that group over a second channel.
        The end is a marker line with the exit status, unique per request. Returns (status, timed out)."""
        import asyncssh

        if self._shell is None or self._shell_conn is not conn or self._shell.is_closing():
            self._shell = await conn.create_process("exec bash --noprofile --norc 2>/dev/null", encoding=None)
            self._shell.stdin.write(b"set -m\n")  # after start-up: without a terminal, `bash -m` turns it off
            self._shell_conn = conn
        shell = self._shell
        token = secrets.token_hex(8)
        marker = f"\n__hermes_end_{token}__ ".encode()
        shell.stdin.write((f"( eval {shlex.quote(script)} ) </dev/null 2>&1 & "
                           f"printf '__hermes_pid_{token}__ %d\\n' $!; wait $!; "
                           f"printf '\\n__hermes_end_{token}__ %d\\n' $?\n").encode())
        deadline = time.monotonic() + timeout
        pid: int | None = None
        timed_out = False
        pending = b""
        pid_mark = f"__hermes_pid_{token}__ ".encode()
        while True:
            try:
                chunk = await asyncio.wait_for(shell.stdout.read(65536), max(0.01, deadline - time.monotonic()))
            except TimeoutError:
                if pid is None or timed_out:
                    raise
                timed_out = True
                deadline = time.monotonic() + CLIENT_GRACE
                await conn.run(f"kill -TERM -- -{pid} 2>/dev/null; for i in 1 2 3 4 5 6 7 8 9 10; do "
                               f"kill -0 -- -{pid} 2>/dev/null || exit 0; sleep 0.1; done; "
                               f"kill -KILL -- -{pid} 2>/dev/null; true", timeout=CLIENT_GRACE)
                continue
            if not chunk:
                self._shell = None
                raise asyncssh.ConnectionLost("the resident shell ended")
            pending += chunk
            if pid is None:
                at = pending.find(pid_mark)
                if at >= 0 and b"\n" in pending[at:]:
                    line, _, after = pending[at + len(pid_mark):].partition(b"\n")
                    pid = int(line) if line.strip().isdigit() else None
                    pending = pending[:at] + after
                else:
                    continue
            at = pending.find(marker)
            if at >= 0 and b"\n" in pending[at + len(marker):]:
                cap.add(pending[:at])
                status = pending[at + len(marker):].split(b"\n", 1)[0].strip()
                return (int(status) if status.lstrip(b"-").isdigit() else None), timed_out
            keep = len(marker) + 24
            if len(pending) > keep:
                cap.add(pending[:-keep])
                pending = pending[-keep:]

    def exec(self, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None,
             timeout: float = 60.0, stdin: bytes | None = None, max_bytes: int = 4 * DEFAULT_MAX_CHARS) -> ExecResult:
        import asyncssh

        line = shell_line(command, cwd, env or {}, timeout)
        cap = ByteCap(max_bytes)
        started = time.monotonic()
        killed = False

        async def go() -> int | None:
            nonlocal killed
            conn = await self._connection()
            if self._shell_lock is None:
                self._shell_lock = asyncio.Lock()
            if stdin is None and not self._shell_lock.locked():
                async with self._shell_lock:
                    try:
                        code, killed = await self._in_shell(conn, shell_script(command, cwd, env or {}), timeout, cap)
                        return code
                    except asyncio.CancelledError:
                        self._shell = None  # a request given up on leaves the shell in an unknown state
                        raise
            proc = await conn.create_process(f"exec {line} 2>&1", encoding=None)
            if stdin:
                proc.stdin.write(stdin)
            proc.stdin.write_eof()
            while True:
                chunk = await proc.stdout.read(65536)
                if not chunk:
                    break
                cap.add(chunk)
            await proc.wait_closed()
            if proc.exit_status is None and conn.is_closed():
                raise asyncssh.ConnectionLost("the connection closed before the command's exit status came")
            return proc.exit_status

        try:
            code = self._call(go, timeout + CLIENT_GRACE, retry=False)
        except ConnectionLost:
            return ExecResult(cap.value(), cap.total, None, time.monotonic() - started, connection_lost=True)
        elapsed = time.monotonic() - started
        timed_out = killed or (code == 124 and elapsed >= timeout - 0.5)
        return ExecResult(cap.value(), cap.total, code, elapsed, timed_out=timed_out)

    # -- files ---------------------------------------------------------------------------------------
    def stat(self, path: str) -> FileStat | None:
        import asyncssh

        async def go() -> FileStat | None:
            sftp = await self._sftp_client()
            try:
                attrs = await sftp.stat(path)
            except asyncssh.SFTPNoSuchFile:
                return None
            except asyncssh.SFTPError as exc:
                raise BackendError(f"cannot stat {path} on {self.describe()}: {exc.reason}") from None
            mtime_ns = attrs.mtime_ns if attrs.mtime_ns is not None else int(attrs.mtime or 0) * 1_000_000_000
            return FileStat(int(attrs.size or 0), int(mtime_ns), int(attrs.permissions or 0))

        return self._call(go, 60.0)

    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        import asyncssh

        async def go() -> bytes:
            sftp = await self._sftp_client()
            try:
                async with sftp.open(path, "rb") as fh:
                    attrs = await fh.stat()
                    if not stat.S_ISREG(attrs.permissions or 0):
                        raise BackendError(f"{path} on {self.describe()} is not a regular file")
                    if (attrs.size or 0) > max_bytes:
                        raise BackendError(f"{path} on {self.describe()} is {attrs.size:,} bytes, more than "
                                           f"the {max_bytes:,} bytes the file tools load")
                    data = await fh.read()
            except asyncssh.SFTPNoSuchFile:
                raise BackendError(f"{path} does not exist on {self.describe()}") from None
            except asyncssh.SFTPError as exc:
                raise BackendError(f"cannot read {path} on {self.describe()}: {exc.reason}") from None
            return data if isinstance(data, bytes) else data.encode()

        return self._call(go, 300.0)

    def write_bytes(self, path: str, data: bytes, mode: int | None = None) -> FileStat:
        import asyncssh

        folder, leaf = posixpath.split(path)
        temp = posixpath.join(folder, f".{leaf}.hermes-{secrets.token_hex(4)}.tmp")

        async def go() -> FileStat:
            sftp = await self._sftp_client()
            try:
                await sftp.makedirs(folder, exist_ok=True)
                keep = mode
                if keep is None:
                    try:
                        keep = stat.S_IMODE((await sftp.stat(path)).permissions or NEW_FILE_MODE)
                    except asyncssh.SFTPNoSuchFile:
                        keep = NEW_FILE_MODE
                async with sftp.open(temp, "wb", asyncssh.SFTPAttrs(permissions=keep)) as fh:
                    await fh.write(data)
                    with contextlib.suppress(asyncssh.SFTPError):
                        await fh.fsync()
                await sftp.chmod(temp, keep)
                await sftp.posix_rename(temp, path)
                attrs = await sftp.stat(path)
            except asyncssh.SFTPError as exc:
                with contextlib.suppress(asyncssh.SFTPError):
                    await sftp.remove(temp)
                raise BackendError(f"cannot write {path} on {self.describe()}: {exc.reason}") from None
            mtime_ns = attrs.mtime_ns if attrs.mtime_ns is not None else int(attrs.mtime or 0) * 1_000_000_000
            return FileStat(int(attrs.size or 0), int(mtime_ns), int(attrs.permissions or 0))

        return self._call(go, 300.0)

    # -- a way back to this machine (execute_code's tool calls) ---------------------------------------
    @contextlib.contextmanager
    def tunnel_unix(self, remote_path: str, local_path: str) -> Iterator[str]:
        """Forward connections to the Unix socket ``remote_path`` on the server to ``local_path`` here."""

        async def open_it() -> asyncssh.SSHListener:
            conn = await self._connection()
            return await conn.forward_remote_path(remote_path, local_path)

        listener = self._call(open_it, 30.0)
        try:
            yield remote_path
        finally:
            async def shut() -> None:
                listener.close()
                await listener.wait_closed()

            with contextlib.suppress(Exception):
                run_sync(asyncio.wait_for(shut(), 5.0), 6.0)
