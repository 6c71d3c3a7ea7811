"""A real Docker Engine for tests: the machine's, or a throw-away ``dockerd`` started by the test.

::

    with DockerEngine(tmp_path) as engine:      # RuntimeError (the reason) when none can run here
        settings = engine.settings()            # terminal.docker.* for the backend: base_url, image, mounts

An engine already reachable (``DOCKER_HOST`` or the local socket) holding ``HERMES_TEST_DOCKER_IMAGE``
(default ``python:3.11-slim``) is used as it is. Otherwise, as root with Debian's ``docker.io``
installed, the test starts its own ``dockerd`` on a socket in ``folder`` (vfs storage, no bridge, no
iptables: nothing of the host's network is touched) and imports a scratch image with no files of its own
but the links of a merged-/usr system; the backend then mounts the host's ``/usr`` read-only
(``terminal.docker.mounts``), which gives the container sh, coreutils and python3 without a registry.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import subprocess
import tarfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

IMAGE = os.environ.get("HERMES_TEST_DOCKER_IMAGE", "python:3.11-slim")
SCRATCH_IMAGE = "hermes-test-scratch:1"
DOCKERD = shutil.which("dockerd")


def _reachable(base_url: str, image: str) -> str | None:
    """None when the engine at ``base_url`` answers (and has ``image``, when one is named); else why not."""
    if base_url.startswith("unix://") and not os.path.exists(base_url[len("unix://"):]):
        return f"no socket at {base_url[len('unix://'):]}"
    try:
        import docker

        client = docker.DockerClient(base_url=base_url)
        try:
            client.ping()
            if image:
                client.images.get(image)
        finally:
            client.close()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _scratch_tar() -> bytes:
    """A root filesystem of folders and the merged-/usr links, nothing else."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for name, mode in (("etc", 0o755), ("root", 0o700), ("tmp", 0o1777), ("usr", 0o755), ("proc", 0o555),
                           ("sys", 0o555), ("dev", 0o755)):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
        for link in ("bin", "sbin", "lib", "lib64"):
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, f"usr/{link}"
            tar.addfile(info)
        for name, text in (("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"), ("etc/group", "root:x:0:\n")):
            raw = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(raw), 0o644
            tar.addfile(info, io.BytesIO(raw))
    return data.getvalue()


class DockerEngine:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.base_url = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        self.image = IMAGE
        self.mounts: list[str] = []
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = folder / "dockerd.log"

    def settings(self, **extra: Any) -> dict[str, Any]:
        return {"base_url": self.base_url, "image": self.image, "mounts": list(self.mounts), **extra}

    def start(self) -> DockerEngine:
        why = _reachable(self.base_url, self.image)
        if why is None:
            return self
        if DOCKERD is None or os.geteuid() != 0:
            raise RuntimeError(f"no Docker Engine reachable ({why}) and no dockerd to start here "
                               "(needs root and Debian's docker.io)")
        self.folder.mkdir(parents=True, exist_ok=True)
        sock = self.folder / "docker.sock"
        self.base_url = f"unix://{sock}"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [DOCKERD, "-H", self.base_url, "--data-root", str(self.folder / "data"), "--exec-root",
                 str(self.folder / "exec"), "--pidfile", str(self.folder / "dockerd.pid"), "--storage-driver=vfs",
                 "--bridge=none", "--iptables=false", "--ip6tables=false"], stdout=log, stderr=log,
                start_new_session=True)
        deadline = time.monotonic() + 60
        while (why := _reachable(self.base_url, "")) is not None:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-600:]
                self.stop()
                raise RuntimeError(f"dockerd did not start here: {tail}")
            time.sleep(0.2)
        import docker

        client = docker.DockerClient(base_url=self.base_url)
        try:
            repository, tag = SCRATCH_IMAGE.split(":")
            client.api.import_image_from_data(_scratch_tar(), repository=repository, tag=tag)
        finally:
            client.close()
        self.image = SCRATCH_IMAGE
        self.mounts = ["/usr:/usr:ro"]
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.proc = None
        shutil.rmtree(self.folder / "data", ignore_errors=True)

    def __enter__(self) -> DockerEngine:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
