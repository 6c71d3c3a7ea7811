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


def test_tools_and_execute_code_calls_in_one_container(engine: DockerEngine, hermes_home: Path) -> None:
    """terminal, write_file and an execute_code script all act in the task's one container; the script's
    hermes_tools calls come back through its mailbox folder (the container has no network)."""
    import json

    import yaml

    import hermes.tools.code.tool
    import hermes.tools.file.write
    import hermes.tools.terminal.tool  # noqa: F401
    from hermes.config.paths import HermesPaths
    from hermes.config.settings import Settings
    from hermes.tools.context import SESSION_END_KEY
    from hermes.tools.registry import registry
    from hermes.tools.session import SessionContext, ToolSession
    from hermes.tools.toolsets import Surface

    (hermes_home / "config.yaml").write_text(yaml.safe_dump(
        {"terminal": {"backend": "docker", "docker": engine.settings(memory="256m")}, "approvals": {"mode": "ask"}}))
    settings = Settings.load(HermesPaths(hermes_home))
    session = ToolSession(registry, ("execute_code", "terminal", "write_file"),
                          SessionContext(surface=Surface.CLI, settings=settings, task_id="t-docker"))
    code = ("import hermes_tools\n"
            "hermes_tools.write_file(path='/root/made.txt', content='from the script\\n')\n"
            "print(hermes_tools.terminal(command='cat /root/made.txt; hostname')['output'])\n")
    try:
        ran = json.loads(session.dispatch("terminal", {"command": "hostname"}).text)
        out = json.loads(session.dispatch("execute_code", {"code": code, "timeout": 120}).text)
    finally:
        for callback in session.state.pop(SESSION_END_KEY, {}).values():
            callback()
    assert ran["exit_code"] == 0 and ran["sandbox"].startswith("docker container "), ran
    assert out["tool_calls_made"] == 2 and "notes" not in out, out
    assert out["stdout"].split() == ["from", "the", "script", ran["output"].strip()], out
    assert not (hermes_home / "made.txt").exists()
