"""The ``docker`` backend against a real Docker Engine — skipped when none is reachable (the CI machine
has no engine; these tests run where one is: the local socket or ``DOCKER_HOST``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.tools.backends.base import BackendError
from hermes.tools.backends.docker import DockerBackend

IMAGE = os.environ.get("HERMES_TEST_DOCKER_IMAGE", "python:3.11-slim")


def _engine() -> bool:
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if host.startswith("unix://") and not os.path.exists(host[len("unix://"):]):
        return False
    try:
        import docker

        with docker.from_env() as client:
            client.ping()
            client.images.get(IMAGE)
        return True
    except Exception:
        return False


needs_engine = pytest.mark.skipif(not _engine(), reason=f"no Docker Engine reachable (or no {IMAGE} image)")


@pytest.fixture
def box() -> Iterator[DockerBackend]:
    backend = DockerBackend({"image": IMAGE, "memory": "256m", "cpus": 0.5})
    yield backend
    backend.close()


@needs_engine
def test_commands_files_limits_and_no_host_mounts(box: DockerBackend, tmp_path: Path) -> None:
    out = box.run("echo hi; echo err >&2; exit 3", cwd=None, env={}, timeout=30)
    assert out["exit_code"] == 3 and "hi" in out["output"] and "err" in out["output"]
    assert box.run("sleep 10", cwd=None, env={}, timeout=1)["timed_out"] is True
    box.write_bytes("/root/a/b.txt", b"data\n")
    assert box.read_bytes("/root/a/b.txt", 100) == b"data\n"
    found = box.stat("/root/a/b.txt")
    assert found is not None and found.size == 5
    memory = box.run("cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
                     cwd=None, env={}, timeout=30)
    assert str(256 * 1024 * 1024) in memory["output"]
    (tmp_path / "host-only").write_text("x")
    assert box.stat(str(tmp_path / "host-only")) is None  # nothing of the host is mounted
    container = box.container_id
    box.close()
    import docker

    with pytest.raises(docker.errors.NotFound):
        docker.from_env().containers.get(container)


def test_mounts_must_be_absolute_pairs_and_no_engine_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="HOST:CONTAINER"):
        DockerBackend({"mounts": ["relative:/x"]})
    nowhere = DockerBackend({"base_url": f"unix://{tmp_path}/no-docker.sock"})
    with pytest.raises(BackendError, match="no Docker Engine is reachable"):
        nowhere.exec("true")
