"""The tools on the ``ssh`` backend against a real OpenSSH server on a loopback port (tests/fakes/sshd.py).

One server per module, throw-away host and user keys, host-key checking on (the fixture's known_hosts).
Commands prove they ran through sshd by ``$SSH_CONNECTION``, which only sshd sets. The server is this
machine, so the tests can also look at its processes and files directly.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.code.tool
import hermes.tools.file.patch
import hermes.tools.file.read
import hermes.tools.file.search
import hermes.tools.file.write
import hermes.tools.terminal.tool  # noqa: F401
from fakes.sshd import SSHServer, have_sshd
from fakes.tool_session import FakeSession, ScriptedSink
from hermes.config.paths import HermesPaths
from hermes.config.settings import Settings
from hermes.tools.backends.base import BackendError
from hermes.tools.backends.ssh import SSHBackend
from hermes.tools.context import SESSION_END_KEY
from hermes.tools.registry import registry
from hermes.tools.session import SessionContext, ToolSession
from hermes.tools.toolsets import Surface

pytestmark = [pytest.mark.skipif(not have_sshd(), reason="needs sshd (Debian openssh-server)"),
              pytest.mark.skipif(not __import__("importlib").util.find_spec("asyncssh"), reason="needs asyncssh")]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    with SSHServer(tmp_path_factory.mktemp("sshd")) as server:
        yield server


def _config(server: SSHServer, workdir: Path, extra: str = "") -> str:
    s = server.settings()
    return (f"terminal:\n  backend: ssh  # chosen by config\n  ssh:\n    host: {s['host']}\n    port: {s['port']}\n"
            f"    user: {s['user']}\n    key_file: {s['key_file']}\n    known_hosts: {s['known_hosts']}\n"
            f"    use_agent: false\n    cwd: {workdir}\n{extra}")


class Remote:
    """A session whose config chooses the ssh backend; ends like ``Agent.close`` ends one."""

    def __init__(self, home: Path, text: str, *answers: Any) -> None:
        (home / "config.yaml").write_text(text, encoding="utf-8")
        self.session = FakeSession("t-ssh", Surface.CLI, ScriptedSink(*answers), Settings.load(HermesPaths(home)))

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        result = json.loads(registry.dispatch(tool, args, task_id="t-ssh", session=self.session))
        assert isinstance(result, dict)
        return result

    def end(self) -> None:
        for callback in self.session.state.pop(SESSION_END_KEY, {}).values():
            callback()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "remote-work"
    folder.mkdir()
    return folder


@pytest.fixture
def remote(hermes_home: Path, sshd: SSHServer, workdir: Path) -> Iterator[Remote]:
    r = Remote(hermes_home, _config(sshd, workdir, "approvals:\n  allow: [unproven]\n"))
    yield r
    r.end()


def test_terminal_runs_through_sshd_in_the_configured_cwd(remote: Remote, sshd: SSHServer, workdir: Path) -> None:
    out = remote.call("terminal", command="echo via:$SSH_CONNECTION; pwd; echo oops >&2; exit 3")
    assert f"127.0.0.1 {sshd.port}" in out["output"]
    assert str(workdir) in out["output"] and "oops" in out["output"]
    assert out["exit_code"] == 3
    assert out["sandbox"].startswith("off (ssh ")
    again = remote.call("terminal", command="echo $SSH_CONNECTION", workdir="/tmp")
    assert again["workdir"] == "/tmp"
    assert len(sshd.connection_pids()) == 1  # one connection per task, reused


def test_local_is_the_default_and_a_bad_backend_is_named(hermes_home: Path, workdir: Path) -> None:
    local = Remote(hermes_home, "approvals:\n  allow: [unproven]\n")
    out = local.call("terminal", command="echo [$SSH_CONNECTION]", workdir=str(workdir))
    assert "[]" in out["output"] and not out["sandbox"].startswith("off (ssh")
    bad = Remote(hermes_home, "terminal:\n  backend: telnet\n")
    assert "terminal.backend" in bad.call("terminal", command="true")["error"]


def test_timeout_kills_the_remote_group(remote: Remote, workdir: Path) -> None:
    out = remote.call("terminal", command=f"sleep 60 & echo $! > {workdir}/pid; wait", timeout=1)
    assert out["timed_out"] is True
    pid = int((workdir / "pid").read_text())
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}")


def test_the_floor_and_approvals_apply_before_the_server_sees_anything(hermes_home: Path, sshd: SSHServer,
                                                                       workdir: Path) -> None:
    strict = Remote(hermes_home, _config(sshd, workdir, "approvals:\n  mode: yolo\n"))
    try:
        assert "error" in strict.call("terminal", command=f"rm -rf / ; touch {workdir}/ran")
        assert not (workdir / "ran").exists()
    finally:
        strict.end()
    asking = Remote(hermes_home, _config(sshd, workdir), "deny")
    try:
        refused = asking.call("terminal", command=f"git push --force origin main; touch {workdir}/pushed")
        assert "error" in refused and asking.session.sink.asked
        assert not (workdir / "pushed").exists()
    finally:
        asking.end()


def test_background_process_output_stdin_and_kill(remote: Remote, workdir: Path) -> None:
    started = remote.call("terminal", command="echo ready; read line; echo got:$line; sleep 60", background=True)
    pid = started["pid"]
    assert started["sandbox"].startswith("off (ssh ")
    assert os.path.exists(f"/proc/{pid}")
    remote.call("process_manage", action="write", process_id=started["process_id"], input="hello\n")
    deadline = time.monotonic() + 10
    seen = ""
    while "got:hello" not in seen and time.monotonic() < deadline:
        seen += remote.call("process_manage", action="poll", process_id=started["process_id"])["output"]
        time.sleep(0.1)
    assert "ready" in seen and "got:hello" in seen
    listed = remote.call("process_manage", action="list")["processes"]
    assert [p["status"] for p in listed] == ["running"]
    killed = remote.call("process_manage", action="kill", process_id=started["process_id"])
    assert killed["status"] == "killed"
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}")
    done = remote.call("terminal", command="echo finished; exit 4", background=True)
    waited = remote.call("process_manage", action="wait", process_id=done["process_id"], timeout=10)
    assert waited["exit_code"] == 4 and "finished" in waited["output"]
    log = remote.call("process_manage", action="log", process_id=done["process_id"])
    assert log["lines"] == "finished"


def test_file_tools_see_the_servers_files_and_keep_the_baseline_rule(remote: Remote, workdir: Path) -> None:
    made = remote.call("write_file", path="notes.txt", content="one\ntwo\n")
    assert made["created"] is True and made["path"] == f"{workdir}/notes.txt"
    assert remote.call("terminal", command="cat notes.txt")["output"] == "one\ntwo\n"
    remote.call("terminal", command="echo three >> notes.txt")  # another writer: the terminal, on the server
    refused = remote.call("write_file", path="notes.txt", content="replaced\n")
    assert "changed since this task last saw it" in refused["error"]
    page = remote.call("read_file", path="notes.txt")
    assert page["total_lines"] == 3 and page["full_file_seen"] is True
    assert remote.call("write_file", path="notes.txt", content="replaced\n")["created"] is False
    patched = remote.call("patch", path="notes.txt", old_string="replaced", new_string="patched")
    assert patched["full_file_seen"] is True
    assert (workdir / "notes.txt").read_text() == "patched\n"
    found = remote.call("search_files", pattern="patch", path=str(workdir))
    assert [m["line"] for m in found["matches"]] == [1] and found["engine"] == "grep"
    names = remote.call("search_files", pattern="*.txt", target="files", path=str(workdir))
    assert names["files"] == [f"{workdir}/notes.txt"]
    fresh = remote.call("write_file", path="never-read.txt", content="x\n")
    assert fresh["created"] is True
    (workdir / "other.txt").write_text("untouched\n")
    assert "never read" in remote.call("write_file", path="other.txt", content="y\n")["error"]
    assert "not allowed" in remote.call("read_file", path="~/.ssh/id_ed25519")["error"]
    assert "not allowed" in remote.call("write_file", path="~/.bashrc", content="x")["error"]


def test_execute_code_runs_there_and_its_tool_calls_come_back(hermes_home: Path, sshd: SSHServer,
                                                             workdir: Path) -> None:
    (hermes_home / "config.yaml").write_text(_config(sshd, workdir, "approvals:\n  allow: [unproven]\n"))
    session = ToolSession(registry, ("execute_code", "terminal", "read_file", "write_file"),
                          SessionContext(surface=Surface.CLI, settings=Settings.load(HermesPaths(hermes_home)),
                                         task_id="t-ssh-code"))
    code = ("import os, hermes_tools\n"
            "print('conn', os.environ.get('SSH_CONNECTION', '-'))\n"
            "print(hermes_tools.write_file(path='from-script.txt', content='hi\\n')['created'])\n"
            "print(hermes_tools.terminal(command='cat from-script.txt')['output'].strip())\n"
            "import sys; print('to stderr', file=sys.stderr)\n")
    try:
        out = json.loads(session.dispatch("execute_code", {"code": code}).text)
        assert f"127.0.0.1 {sshd.port}" in out["stdout"], out
        assert "True" in out["stdout"] and "\nhi" in out["stdout"]
        assert out["tool_calls_made"] == 2 and out["exit_code"] == 0
        assert "to stderr" in out["stderr"]
        assert (workdir / "from-script.txt").read_text() == "hi\n"
    finally:
        for callback in session.state.pop(SESSION_END_KEY, {}).values():
            callback()


def test_a_dropped_connection_mid_command_is_reported_and_the_next_call_reconnects(
        remote: Remote, sshd: SSHServer, workdir: Path) -> None:
    bg = remote.call("terminal", command="sleep 1; echo survived", background=True)
    timer = threading.Timer(0.7, sshd.drop_connections)
    timer.start()
    out = remote.call("terminal", command="sleep 20; echo finished", timeout=60)
    timer.join()
    assert out.get("connection_lost") is True and out["exit_code"] is None
    assert "dropped" in out["note"] and "finished" not in out["output"]
    after = remote.call("terminal", command="echo $SSH_CONNECTION")
    assert f"127.0.0.1 {sshd.port}" in after["output"]
    waited = remote.call("process_manage", action="wait", process_id=bg["process_id"], timeout=15)
    assert waited["exit_code"] == 0 and "survived" in waited["output"]  # it ran on through the drop
    assert remote.call("read_file", path=str(workdir / "missing"))["error"]


def test_session_end_closes_the_connection_and_stops_its_processes(hermes_home: Path, sshd: SSHServer,
                                                                    workdir: Path) -> None:
    r = Remote(hermes_home, _config(sshd, workdir, "approvals:\n  allow: [unproven]\n"))
    pid = r.call("terminal", command="sleep 60", background=True)["pid"]
    before = sshd.connection_pids()
    assert before
    r.end()
    deadline = time.monotonic() + 10
    while (os.path.exists(f"/proc/{pid}") or set(before) & set(sshd.connection_pids())) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}")
    assert not set(before) & set(sshd.connection_pids())


def test_host_key_checking_is_on_by_default(sshd: SSHServer, tmp_path: Path) -> None:
    stranger = tmp_path / "known_hosts"
    stranger.write_text(f"[127.0.0.1]:{sshd.port} ssh-ed25519 "
                        "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
    with pytest.raises(BackendError, match="host key"):
        SSHBackend(sshd.settings(known_hosts=str(stranger))).exec("true")
    with pytest.raises(BackendError, match="does not exist"):
        SSHBackend(sshd.settings(known_hosts=str(tmp_path / "none"))).exec("true")
    with pytest.raises(BackendError, match=r"terminal\.ssh\.host"):
        SSHBackend({})


def test_keys_from_the_agent_and_upload_download(sshd: SSHServer, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    import subprocess

    if shutil.which("ssh-agent") is None or shutil.which("ssh-add") is None:
        pytest.skip("needs ssh-agent and ssh-add (openssh-client)")
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run(["ssh-add", "-q", str(sshd.user_key)], env=env, check=True, timeout=30)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ssh/id_* to fall back on: only the agent has the key
        settings = {k: v for k, v in sshd.settings().items() if k not in ("key_file", "use_agent")}
        backend = SSHBackend(settings)
        try:
            assert backend.exec("echo $SSH_CONNECTION").output.startswith(b"127.0.0.1 ")
            source = tmp_path / "up.bin"
            source.write_bytes(bytes(range(256)) * 10)
            backend.upload(source, str(tmp_path / "remote" / "up.bin"))
            assert backend.download(str(tmp_path / "remote" / "up.bin"), tmp_path / "down.bin") == 2560
            assert (tmp_path / "down.bin").read_bytes() == source.read_bytes()
        finally:
            backend.close()
        no_agent = SSHBackend({**settings, "use_agent": False})
        with pytest.raises(BackendError, match="refused the login"):
            no_agent.exec("true")
    finally:
        agent.terminate()
        agent.wait(5)
