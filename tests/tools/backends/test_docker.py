"""The ``docker`` backend against a real Docker Engine: the machine's, or a throw-away ``dockerd`` the test
starts (:mod:`fakes.dockerd`: root and Debian's docker.io); skipped, with the reason, where neither can run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.dockerd import DockerEngine
from hermes.tools.backends.base import BackendError
from hermes.tools.backends.docker import DockerBackend


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DockerEngine]:
    found = DockerEngine(tmp_path_factory.mktemp("dockerd"))
    try:
        found.start()
    except RuntimeError as exc:
        pytest.skip(str(exc)[:300])
    yield found
    found.stop()


@pytest.fixture
def box(engine: DockerEngine) -> Iterator[DockerBackend]:
    backend = DockerBackend(engine.settings(memory="256m", cpus=0.5))
    yield backend
    backend.close()


def test_commands_files_limits_and_no_host_mounts(box: DockerBackend, engine: DockerEngine, tmp_path: Path) -> None:
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

    client = docker.DockerClient(base_url=engine.base_url)
    try:
        with pytest.raises(docker.errors.NotFound):
            client.containers.get(container)
    finally:
        client.close()


def test_mounts_must_be_absolute_pairs_and_no_engine_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="HOST:CONTAINER"):
        DockerBackend({"mounts": ["relative:/x"]})
    nowhere = DockerBackend({"base_url": f"unix://{tmp_path}/no-docker.sock"})
    with pytest.raises(BackendError, match="no Docker Engine is reachable"):
        nowhere.exec("true")
    # and tools list says so before anything runs (the same words, from the offline readiness check)
    from hermes.routing.readiness import backend_problem

    config = {"terminal": {"backend": "docker", "docker": {"base_url": f"unix://{tmp_path}/no-docker.sock"}}}
    assert "no Docker Engine is reachable" in str(backend_problem(config, {}, None))
