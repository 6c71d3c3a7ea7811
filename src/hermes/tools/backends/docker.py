"""The ``docker`` backend: commands and files in one container per task, through the Docker Engine API.

Settings (``terminal.docker.*``): ``image`` (``python:3.11-slim``), ``memory`` (``2g``), ``cpus`` (1.0),
``pids_limit`` (512), ``network`` (``none``: no network; ``bridge`` gives the default one), ``mounts``
(host folders to mount, ``HOST:CONTAINER[:ro]`` — none unless listed), ``cwd`` (``/root``),
``base_url`` (the engine; default ``DOCKER_HOST`` or the local socket). The container runs
``sleep infinity`` with ``no-new-privileges``; each command is one ``docker exec`` of ``sh -c`` (the line
of :func:`~.base.shell_line`: stderr merged, coreutils ``timeout``); files go through the container's
shell (:mod:`.shellfs`). It is removed when the session ends, unless ``terminal.keep_sandbox`` is true.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

from hermes.tools.backends.base import CLIENT_GRACE, DEFAULT_MAX_CHARS, BackendError, ByteCap, ExecResult, shell_line
from hermes.tools.backends.shellfs import ShellFilesBackend

DEFAULT_IMAGE = "python:3.11-slim"


def _mounts(value: Any) -> dict[str, dict[str, str]]:
    if value in (None, "", []):
        return {}
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BackendError("terminal.docker.mounts must be a list of HOST:CONTAINER[:ro] strings")
    out: dict[str, dict[str, str]] = {}
    for item in value:
        parts = item.split(":")
        if len(parts) not in (2, 3) or not parts[0].startswith("/") or not parts[1].startswith("/"):
            raise BackendError(f"terminal.docker.mounts: {item!r} is not HOST:CONTAINER[:ro] with absolute paths")
        out[parts[0]] = {"bind": parts[1], "mode": "ro" if parts[2:] == ["ro"] else "rw"}
    return out


class DockerBackend(ShellFilesBackend):
    """One container (see the module docstring)."""

    name = "docker"
    isolated = True

    def __init__(self, settings: Mapping[str, Any]) -> None:
        super().__init__(settings)
        self.mounts = _mounts(settings.get("mounts"))
        self.container_id: str | None = None
        self._client: Any = None
        self._lock = threading.Lock()

    def describe(self) -> str:
        return f"docker container {(self.container_id or '(not started)')[:12]}"

    def default_cwd(self) -> str:
        configured = self.settings.get("cwd")
        return str(configured) if isinstance(configured, str) and configured else "/root"

    def _api(self) -> Any:
        if self._client is None:
            try:
                import docker
            except ImportError:
                raise BackendError("terminal.backend is docker but the docker package is not installed "
                                   "(pip install 'hermes[docker]')") from None
            base = self.settings.get("base_url") or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
            if str(base).startswith("unix://") and not os.path.exists(str(base)[len("unix://"):]):
                raise BackendError(f"no Docker Engine is reachable: {str(base)[len('unix://'):]} does not exist "
                                   "(start the engine, or set terminal.docker.base_url or DOCKER_HOST)")
            client = None
            try:
                client = docker.DockerClient(base_url=str(base)) if base else docker.from_env()
                client.ping()
            except Exception as exc:  # the SDK raises many kinds; all mean "no engine here"
                if client is not None:
                    client.close()
                raise BackendError(f"no Docker Engine is reachable: {exc}") from None
            self._client = client
        return self._client

    def _container(self) -> str:
        with self._lock:
            if self.closed:
                raise BackendError(f"{self.describe()}: this session's container was removed")
            if self.container_id is None:
                client = self._api()
                s = self.settings
                try:
                    made = client.containers.run(
                        str(s.get("image") or DEFAULT_IMAGE), ["sleep", "infinity"], detach=True,
                        mem_limit=str(s.get("memory") or "2g"), nano_cpus=int(float(s.get("cpus") or 1.0) * 1e9),
                        pids_limit=int(s.get("pids_limit") or 512), network_mode=str(s.get("network") or "none"),
                        volumes=self.mounts, working_dir=self.default_cwd(), security_opt=["no-new-privileges"],
                        labels={"hermes.backend": "terminal"})
                except Exception as exc:
                    raise BackendError(f"could not start a container: {exc}") from None
                self.container_id = str(made.id)
            return self.container_id

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.container_id is None or self.keep:
            return
        with contextlib.suppress(Exception):
            self._api().api.remove_container(self.container_id, force=True)
        with contextlib.suppress(Exception):
            self._api().close()

    def exec(self, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None,
             timeout: float = 60.0, stdin: bytes | None = None, max_bytes: int = 4 * DEFAULT_MAX_CHARS) -> ExecResult:
        from docker.utils.socket import frames_iter

        api = self._api().api
        started = time.monotonic()
        line = shell_line(command, cwd, env or {}, timeout)
        made = api.exec_create(self._container(), ["sh", "-c", f"exec {line} 2>&1"], stdin=True, stdout=True,
                               stderr=True)
        sock = api.exec_start(made["Id"], socket=True)
        raw: socket.socket = getattr(sock, "_sock", sock)
        raw.settimeout(timeout + CLIENT_GRACE)
        cap = ByteCap(max_bytes)
        lost = False
        try:
            if stdin:
                raw.sendall(stdin)
            raw.shutdown(socket.SHUT_WR)
            for _stream, data in frames_iter(sock, False):
                cap.add(data)
        except OSError:
            lost = True
        finally:
            with contextlib.suppress(OSError):
                sock.close()
            with contextlib.suppress(OSError):
                raw.close()  # the SocketIO wrapper's close leaves the socket itself open
        code = api.exec_inspect(made["Id"]).get("ExitCode")
        elapsed = time.monotonic() - started
        exit_code = code if isinstance(code, int) else None
        return ExecResult(cap.value(), cap.total, exit_code, elapsed,
                          timed_out=exit_code == 124 and elapsed >= timeout - 0.5, connection_lost=lost)
