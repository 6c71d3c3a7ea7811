"""A remote backend: the same app server on another machine, reached by URL or through an SSH tunnel.

* :func:`by_url` — a server someone runs (``hermes serve --host 0.0.0.0`` or behind a proxy): its
  ``ws://``/``wss://`` URL and the token from a file or ``HERMES_SERVE_TOKEN``;
* :func:`over_ssh` — ``ssh HOST`` starts ``hermes serve --host 127.0.0.1 --port 0 --token-stdin`` there,
  with a fresh random token written to its standard input (never on a command line, where other users
  of either machine could read it); a second ``ssh -N -L`` forwards a local loopback port to it. The
  remote server requires that token from every client, its own machine's included, and stops when the
  SSH session ends (its standard input closes).

Both give a :class:`Backend`: the local URL clients connect to, the token they present, and ``close()``.
``ssh`` is OpenSSH's client: the host's aliases, keys and agent from ``~/.ssh/config`` apply; more
options come from ``serve.ssh_options`` (or the caller).
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from hermes.errors import HermesError, UsageError

_ANNOUNCED = re.compile(r"hermes app server on ws://127\.0\.0\.1:(\d+)(/\S*)")
START_TIMEOUT = 60.0


@dataclass
class Backend:
    """Where clients connect (``url``), what they present (``token``) and how to let go of it."""

    url: str
    token: str | None
    where: str
    _closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        while self._closers:
            with contextlib.suppress(Exception):
                self._closers.pop()()

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def by_url(url: str, token: str | None) -> Backend:
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise UsageError(f"--url must be the app server's WebSocket address, such as ws://host:8765/rpc; got {url!r}")
    return Backend(url if parts.path else url.rstrip("/") + "/rpc", token, url)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):
                pipe.close()


def over_ssh(target: str, *, ssh_options: list[str] | None = None, remote_command: str = "hermes",
             timeout: float = START_TIMEOUT) -> Backend:
    """Start the app server on ``target`` over SSH and tunnel a local port to it (module docstring)."""
    ssh = shutil.which("ssh")
    if ssh is None:
        raise HermesError("--ssh needs OpenSSH's ssh client on PATH (Debian: openssh-client)")
    if not target or target.startswith("-"):
        raise UsageError(f"--ssh takes a host ([user@]host or an alias from ~/.ssh/config); got {target!r}")
    options = list(ssh_options or [])
    token = secrets.token_urlsafe(32)
    command = f"{remote_command} serve --host 127.0.0.1 --port 0 --token-stdin"
    server = subprocess.Popen([ssh, *options, "-T", "-o", "BatchMode=yes", target, command],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    backend = Backend("", token, f"{target} (over SSH)")

    def stop_server() -> None:
        if server.stdin is not None:
            with contextlib.suppress(OSError):
                server.stdin.close()  # the remote server stops when its input closes
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(10)
        _stop(server)

    backend._closers.append(stop_server)
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(token + "\n")
        server.stdin.flush()
        remote_port, path = _announced(server, timeout, target, command)
        local_port = _free_port()
        tunnel = subprocess.Popen([ssh, *options, "-N", "-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes",
                                   "-L", f"127.0.0.1:{local_port}:127.0.0.1:{remote_port}", target],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
        backend._closers.append(lambda: _stop(tunnel))
        _wait_for_tunnel(tunnel, local_port, timeout, target)
    except BaseException:
        backend.close()
        raise
    backend.url = f"ws://127.0.0.1:{local_port}{path}"
    return backend


def _announced(server: subprocess.Popen[str], timeout: float, target: str, command: str) -> tuple[int, str]:
    """The remote server's port and path, from the line ``hermes serve`` prints when it listens."""
    assert server.stdout is not None
    found: list[tuple[int, str]] = []
    seen: list[str] = []

    def read() -> None:
        assert server.stdout is not None
        for line in server.stdout:
            seen.append(line)
            match = _ANNOUNCED.search(line)
            if match:
                found.append((int(match.group(1)), match.group(2)))
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if found:
        threading.Thread(target=lambda: [None for _ in server.stdout or ()], daemon=True).start()  # keep it drained
        return found[0]
    if server.poll() is None:
        server.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        server.wait(10)
    errors = (server.stderr.read() if server.stderr else "").strip()
    _stop(server)
    said = (errors or "".join(seen)).strip()[-800:] or "nothing"
    raise HermesError(f"the app server did not start on {target} over SSH within {timeout:.0f} s; it said: {said}. "
                      f"Is hermes installed there (the remote command was {shlex.quote(command)})?")


def _wait_for_tunnel(tunnel: subprocess.Popen[str], port: int, timeout: float, target: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if tunnel.poll() is not None:
            errors = (tunnel.stderr.read() if tunnel.stderr else "").strip()
            why = errors[-500:] or f"exit status {tunnel.returncode}"
            raise HermesError(f"the SSH tunnel to {target} closed: {why}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    _stop(tunnel)
    raise HermesError(f"the SSH tunnel to {target} did not open within {timeout:.0f} s")
