"""The OS sandbox of terminal, process_manage and execute_code (issue 12 item 1), with real bwrap runs.

Each test has a workspace ``ws`` (the command's working directory and hermes's own, via chdir) and an
``outside`` folder beside it; HERMES_HOME lies inside the workspace (the hardest case: it must stay
hidden even there). The tests run as whatever user runs the suite — root included, which the sandbox
must confine as well.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.code.tool
import hermes.tools.file.patch
import hermes.tools.file.write
import hermes.tools.sandbox
import hermes.tools.terminal.tool
from fakes.tool_session import FakeSession, ScriptedSink
from hermes.config.paths import HermesPaths
from hermes.config.settings import Settings
from hermes.tools import sandbox, sandbox_pool
from hermes.tools.registry import registry
from hermes.tools.terminal.processes import manager
from hermes.tools.toolsets import Surface

pytestmark = pytest.mark.skipif(not sandbox.support().available,
                                reason=f"no sandbox here: {sandbox.support().missing}")

SECRET = "sk-sandboxtest-0123456789abcdef"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside").mkdir()
    home = workspace / ".hermes"
    home.mkdir()
    (home / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n", encoding="utf-8")
    (home / "auth.json").write_text(json.dumps({"token": SECRET}), encoding="utf-8")
    (home / "skills").mkdir()
    (home / "skills" / "hello.sh").write_text("echo skill-ran\n", encoding="utf-8")
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.chdir(workspace)
    yield workspace
    manager.kill_session("t-sbx")
    sandbox_pool.drop("t-sbx")
    sandbox.drop_session_temp("t-sbx")


def _config(ws: Path, text: str) -> None:
    (ws / ".hermes" / "config.yaml").write_text(textwrap.dedent(text), encoding="utf-8")


def _session(ws: Path, *answers: Any) -> FakeSession:
    return FakeSession("t-sbx", Surface.CLI, ScriptedSink(*answers), Settings.load(HermesPaths(ws / ".hermes")))


def term(args: dict[str, Any], session: FakeSession | None = None, tool: str = "terminal") -> dict[str, Any]:
    kw: dict[str, Any] = {"task_id": "t-sbx"}
    if session is not None:
        kw["session"] = session
    result = json.loads(registry.dispatch(tool, args, **kw))
    assert isinstance(result, dict)
    return result


class LoopbackServer:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    srv = LoopbackServer()
    yield srv
    srv.close()


def _connect(port: int) -> str:
    return (f"{sys.executable} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); "
            "print('CONNECTED')\"")


# -- workspace-write (the default) -------------------------------------------------------------------


def test_writes_outside_the_workspace_fail(ws: Path) -> None:
    _config(ws, "approvals:\n  mode: yolo\n")  # nothing is asked: the sandbox alone must stop the writes
    outside = ws.parent / "outside" / "escaped.txt"
    r = term({"command": f"echo x > {outside}; echo x > /etc/hermes-sandbox-test; touch ~/hermes-sandbox-test",
              "workdir": str(ws)})
    assert r.get("sandbox") == "workspace-write", r
    assert r["output"].count("Read-only file system") + r["output"].count("No such file") == 3, r
    assert not outside.exists() and not Path("/etc/hermes-sandbox-test").exists()
    assert not (Path.home() / "hermes-sandbox-test").exists()


def test_the_same_write_works_with_full_access(ws: Path) -> None:
    """The control: the command of the test above does write when the sandbox is off."""
    # unsandboxed, a write outside the workspace is not proven safe: yolo, so only the sandbox differs
    _config(ws, "sandbox:\n  mode: full-access\napprovals:\n  mode: yolo\n")
    outside = ws.parent / "outside" / "escaped.txt"
    r = term({"command": f"echo x > {outside}", "workdir": str(ws)})
    assert r["exit_code"] == 0 and outside.read_text() == "x\n"
    assert r["sandbox"] == "off (sandbox.mode is full-access)"


def test_hermes_secrets_and_keys_are_not_readable(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----{SECRET}", encoding="utf-8")
    (home / ".netrc").write_text(f"machine x password {SECRET}", encoding="utf-8")
    (home / "notes.txt").write_text("plain\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    # the home folder is never made writable, not even when sandbox.writable_paths names it
    _config(ws, f"sandbox:\n  writable_paths: [{home}]\n")
    refused = term({"command": "touch ~/new.txt", "workdir": str(ws)})
    assert refused["exit_code"] != 0 and not (home / "new.txt").exists()
    assert f"{home.resolve()} stays read-only in the sandbox: it is the home folder" in refused["sandbox_note"]
    # it is made visible (read-only) as the workdir here, so what hides its keys is the sandbox's rule
    assert term({"command": "cat ~/notes.txt", "workdir": str(home)})["output"] == "plain\n"
    hermes_home = ws / ".hermes"
    r = term({"command": f"cat {hermes_home}/.env {hermes_home}/auth.json ~/.ssh/id_ed25519 ~/.netrc; "
                         "cat /etc/shadow", "workdir": str(home)})
    assert "sk-sandboxtest" not in r["output"] and "REDACTED" not in r["output"], r
    assert "BEGIN OPENSSH" not in r["output"] and "root:" not in r["output"]
    # hidden folders are empty ("No such file"); a hidden file is /dev/null, unopenable ("Permission denied")
    assert r["output"].count("No such file") + r["output"].count("Permission denied") == 5, r
    assert r["exit_code"] != 0
    listed = term({"command": f"ls -A {hermes_home}; sh {hermes_home}/skills/hello.sh", "workdir": str(ws)})
    assert listed["output"] == "skills\nskill-ran\n"  # only HERMES_HOME's skills stay readable


def test_other_users_homes_the_hosts_tmp_and_processes_are_hidden(ws: Path) -> None:
    r = term({"command": "ls -A /home | wc -l; ls -A /tmp | wc -l; ls /proc | grep -c '^[0-9]'", "workdir": str(ws)})
    home_entries, tmp_entries, processes = (int(x) for x in r["output"].split())
    if not str(Path.home().resolve()).startswith("/home/"):
        assert home_entries == 0
    # the session's own /tmp shows the workspace's mount point, and the python running hermes and hermes's
    # code when they live under /tmp (a checkout in /tmp): nothing else of the host's /tmp
    runtime = {Path(p).parts[2] for p in (sys.prefix, str(Path(sandbox.__file__).resolve()))
               if Path(p).parts[1:2] == ("tmp",) and len(Path(p).parts) > 2}
    assert tmp_entries <= 1 + len(runtime), r
    assert processes < 6  # bwrap's init, the session's supervisor, bash and the pipeline


def test_secrets_in_the_environment_do_not_reach_the_command(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``env`` inside the sandbox: variables whose name or value holds a secret are gone, unless the person
    listed them in terminal.env_passthrough; everything else is still there."""
    secrets = {
        "DATABASE_URL": "postgres://app:db-pass-4711@127.0.0.1:5432/app",
        "SENTRY_DSN": "https://key4711@127.0.0.1/1",
        "PGPASSWORD": "pg-pass-4711",
        "MYSQL_PWD": "my-pass-4711",
        "UPSTREAM": "https://bot:url-pass-4711@127.0.0.1/hook",
        "DEPLOY_TOKEN": "token-4711-abcdef",
        "STRIPE_SECRET": "secret-4711-abcdef",
        "OPENAI_API_KEY": SECRET,
        "MODEL_KEY_COPY": SECRET,  # a provider key under a harmless name
        "SOME_SETTING": "sk-ant-api03-4711abcdefghijklmnopqrstuv",  # shaped like a key
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("REPORT_LEVEL", "verbose-4711")
    r = term({"command": "env", "workdir": str(ws)})
    assert r.get("sandbox") == "workspace-write" and r["exit_code"] == 0, r
    names = {line.split("=", 1)[0] for line in r["output"].splitlines() if "=" in line}
    assert not names & set(secrets), names & set(secrets)
    assert "4711" not in r["output"].replace("verbose-4711", ""), r["output"]
    assert "REPORT_LEVEL" in names and "PATH" in names and "HOME" in names
    _config(ws, "terminal:\n  env_passthrough: [DATABASE_URL]\n")
    allowed = term({"command": "env", "workdir": str(ws)})
    assert "DATABASE_URL=" in allowed["output"] and "PGPASSWORD" not in allowed["output"]


def test_network_is_off(ws: Path, server: LoopbackServer) -> None:
    r = term({"command": _connect(server.port), "workdir": str(ws)})
    assert r["exit_code"] != 0 and "CONNECTED" not in r["output"]
    assert "ConnectionRefused" in r["output"] or "unreachable" in r["output"].lower()
    assert server.accepted == 0


def test_network_per_command_is_an_approval(ws: Path, server: LoopbackServer) -> None:
    s = _session(ws, "once", "deny")
    r = term({"command": _connect(server.port), "workdir": str(ws), "network": True}, s)
    assert "CONNECTED" in r["output"] and r["sandbox"] == "workspace-write+network"
    assert server.accepted == 1
    assert s.sink.asked[0].payload["pattern"] == "sandbox_network"
    denied = term({"command": _connect(server.port), "workdir": str(ws), "network": True}, s)
    assert "denied" in denied["error"] and server.accepted == 1


def test_network_allowed_for_the_session(ws: Path, server: LoopbackServer) -> None:
    _config(ws, "sandbox:\n  network: true\n")
    r = term({"command": _connect(server.port), "workdir": str(ws)})
    assert "CONNECTED" in r["output"] and server.accepted == 1


def test_network_without_a_person_is_refused(ws: Path, server: LoopbackServer) -> None:
    s = FakeSession("t-sbx", Surface.ONESHOT, ScriptedSink(), Settings.load(HermesPaths(ws / ".hermes")))
    r = term({"command": _connect(server.port), "workdir": str(ws), "network": True}, s)
    assert "sandbox_network" in r["error"] and server.accepted == 0


def test_leaving_the_sandbox_is_an_approval(ws: Path) -> None:
    outside = ws.parent / "outside" / "left.txt"
    s = _session(ws, "deny", "once")
    refused = term({"command": f"echo x > {outside}", "workdir": str(ws), "sandbox": False}, s)
    assert "denied" in refused["error"] and not outside.exists()
    assert s.sink.asked[0].payload["pattern"] == "sandbox_escape"
    r = term({"command": f"echo x > {outside}", "workdir": str(ws), "sandbox": False}, s)
    assert r["exit_code"] == 0 and outside.exists() and r["sandbox"].startswith("off")


def test_a_python_project_builds_and_its_tests_pass(ws: Path) -> None:
    project = ws / "proj"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "__init__.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    (project / "test_add.py").write_text("from pkg import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
                                         encoding="utf-8")
    r = term({"command": f"{sys.executable} -m pytest -q -p no:randomly test_add.py && "
                         "python3 -c 'import tempfile; print(tempfile.mkstemp()[1])'",
              "workdir": str(project), "timeout": 120})
    assert r["exit_code"] == 0, r
    assert "1 passed" in r["output"] and "/tmp/" in r["output"]
    assert (project / ".pytest_cache").is_dir()


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None, reason="needs make and cc")
def test_make_builds_a_c_program(ws: Path) -> None:
    (ws / "hello.c").write_text('#include <stdio.h>\nint main(void){puts("built");return 0;}\n', encoding="utf-8")
    (ws / "Makefile").write_text("hello: hello.c\n\tcc -o hello hello.c\n", encoding="utf-8")
    r = term({"command": "make && ./hello", "workdir": str(ws), "timeout": 120})
    assert r["exit_code"] == 0 and "built" in r["output"], r


def test_read_only_mode(ws: Path) -> None:
    _config(ws, "sandbox:\n  mode: read-only\n")
    r = term({"command": "echo x > in-ws.txt; echo y > /tmp/t && cat /tmp/t", "workdir": str(ws)})
    assert "Read-only file system" in r["output"] and not (ws / "in-ws.txt").exists()
    assert r["output"].strip().endswith("y") and r["sandbox"] == "read-only"


def test_writable_paths_from_config(ws: Path) -> None:
    extra = ws.parent / "outside"
    _config(ws, f"sandbox:\n  writable_paths: [{extra}]\n")
    r = term({"command": f"echo x > {extra}/ok.txt", "workdir": str(ws)})
    assert r["exit_code"] == 0 and (extra / "ok.txt").exists()


def test_a_broad_workspace_is_not_writable(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")  # hermes started in / : its working directory is no workspace
    r = term({"command": "touch hermes-sandbox-broad"})
    assert r["exit_code"] != 0 and not Path("/hermes-sandbox-broad").exists()
    assert "/ stays read-only" in r["sandbox_note"]


def test_a_workdir_outside_the_workspace_is_read_only(ws: Path) -> None:
    outside = ws.parent / "outside"
    r = term({"command": "test -w . && echo W; echo x > o.txt", "workdir": str(outside)})
    assert "W" not in r["output"].split() and "Read-only file system" in r["output"]
    assert not (outside / "o.txt").exists()
    assert f"workdir {outside} is outside the session's workspace" in r["sandbox_note"]
    inner = ws / "sub"
    inner.mkdir()
    r = term({"command": "echo x > i.txt", "workdir": str(inner)})  # a folder inside it is writable
    assert r["exit_code"] == 0 and (inner / "i.txt").exists() and "sandbox_note" not in r


def test_terminal_cwd_is_the_workspace(ws: Path) -> None:
    outside = ws.parent / "outside"
    _config(ws, f"terminal:\n  cwd: {outside}\n")
    r = term({"command": "echo x > o.txt; pwd"})
    assert r["exit_code"] == 0 and (outside / "o.txt").exists() and r["workdir"] == str(outside)
    r = term({"command": "echo x > w.txt", "workdir": str(ws)})  # hermes's own directory is not, then
    assert r["exit_code"] != 0 and not (ws / "w.txt").exists()
    assert "outside the session's workspace" in r["sandbox_note"]


def test_the_session_tmp_persists_between_commands(ws: Path) -> None:
    assert term({"command": "echo kept > /tmp/note", "workdir": str(ws)})["exit_code"] == 0
    assert term({"command": "cat /tmp/note", "workdir": str(ws)})["output"] == "kept\n"


def test_background_processes_are_sandboxed(ws: Path) -> None:
    outside = ws.parent / "outside" / "bg.txt"
    started = term({"command": f"echo x > {outside}; cat {ws}/.hermes/.env; echo done", "workdir": str(ws),
                    "background": True})
    assert started["sandbox"] == "workspace-write"
    done = term({"action": "wait", "process_id": started["process_id"], "timeout": 10}, tool="process_manage")
    assert "done" in done["output"] and "sk-sandboxtest" not in done["output"]
    assert not outside.exists()


def test_unsandboxed_when_bwrap_is_missing(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No bwrap on PATH: commands run unsandboxed and the result says why."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "cat"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    try:
        assert sandbox.support(refresh=True).missing is not None
        outside = ws.parent / "outside" / "plain.txt"
        refused = term({"command": f"echo x > {outside}", "workdir": str(ws)})
        assert "needs approval" in refused["error"] and not outside.exists()  # not proven safe: asked
        _config(ws, "approvals:\n  mode: yolo\n")
        r = term({"command": f"echo x > {outside}", "workdir": str(ws)})
        assert r["exit_code"] == 0 and outside.exists()
        assert "bubblewrap is not installed" in r["sandbox"]
    finally:
        monkeypatch.undo()
        assert sandbox.support(refresh=True).available


def test_bad_mode_is_a_clear_error(ws: Path) -> None:
    _config(ws, "sandbox:\n  mode: sometimes\n")
    assert "sandbox.mode" in term({"command": "true", "workdir": str(ws)})["error"]


# -- execute_code ------------------------------------------------------------------------------------


def test_execute_code_is_sandboxed_and_still_calls_tools(ws: Path, server: LoopbackServer) -> None:
    outside = ws.parent / "outside" / "script.txt"
    code = textwrap.dedent(f"""
        import socket, hermes_tools
        for attempt, action in (
            ("write", lambda: open({str(outside)!r}, "w").write("x")),
            ("read", lambda: print(open({str(ws / '.hermes' / '.env')!r}).read())),
            ("connect", lambda: socket.create_connection(("127.0.0.1", {server.port}), timeout=3)),
        ):
            try:
                action()
                print(attempt, "ALLOWED")
            except OSError as exc:
                print(attempt, "failed", type(exc).__name__)
        open("inside.txt", "w").write("ok")
        print(hermes_tools.terminal(command="echo via-rpc")["output"].strip())
    """)
    result = json.loads(registry.dispatch("execute_code", {"code": code}, task_id="t-sbx"))
    lines = result["stdout"].splitlines()
    assert result["sandbox"] == "workspace-write", result
    assert [line.split()[:2] for line in lines[:3]] == [["write", "failed"], ["read", "failed"],
                                                        ["connect", "failed"]], result
    assert lines[3] == "via-rpc" and result["tool_calls_made"] == 1
    assert (ws / "inside.txt").read_text() == "ok" and not outside.exists() and server.accepted == 0


def test_status_full_reports_the_sandbox(ws: Path, tmp_path: Path) -> None:
    def status(path: str) -> dict[str, Any]:
        env = {**os.environ, "PATH": path, "PYTHONPATH": str(Path(hermes.tools.sandbox.__file__).parents[2])}
        done = subprocess.run([sys.executable, "-m", "hermes", "status", "--full", "--json"], env=env,
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        data: dict[str, Any] = json.loads(done.stdout)["sandbox"]
        return data

    here = status(os.environ["PATH"])
    assert here["active"] is True and here["backend"] == "bubblewrap" and here["mode"] == "workspace-write"
    (tmp_path / "empty").mkdir()
    missing = status(str(tmp_path / "empty"))
    assert missing["active"] is False and "bwrap" in missing["missing"]
    assert "unsandboxed" in missing["note"]


def test_a_home_dot_folder_is_no_workspace(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = ws.parent / "home"
    (home / ".config").mkdir(parents=True)
    (home / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))
    chosen = sandbox.plan(sandbox.load_policy({}), workdir=str(home / ".config"), temp_dir=str(ws.parent),
                          workspaces=[str(home / ".config"), str(home / "project")])
    assert chosen.refused == [str(home / ".config")] and chosen.writable == [str(home / "project")]


def test_a_kanban_scratch_workspace_is_writable_but_not_the_rest_of_hermes_home(ws: Path) -> None:
    """A kanban worker's default workspace lies in HERMES_HOME (``kanban/workspaces/<task>``): it is
    writable like any workspace, while the rest of HERMES_HOME — the workspaces folder included — is not."""
    home = HermesPaths.current().home
    scratch = home / "kanban" / "workspaces" / "t_1"
    scratch.mkdir(parents=True)
    policy = sandbox.load_policy({})
    for folder, writable in ((scratch, True), (scratch.parent, False), (home / "kanban", False), (home, False)):
        chosen = sandbox.plan(policy, workdir=str(folder), temp_dir=str(ws.parent), workspaces=[str(folder)])
        assert (chosen.writable == [str(folder)]) is writable and (chosen.refused == [str(folder)]) is not writable
    _config(ws, f"terminal:\n  cwd: {scratch}\n")
    r = term({"command": "echo done > result.txt"})
    assert r["exit_code"] == 0 and (scratch / "result.txt").read_text() == "done\n", r


# -- file tools: a write where a sandboxed command could not write is an approval ----------------------
def test_file_writes_outside_the_workspace_ask_while_sandboxed(ws: Path) -> None:
    outside = ws.parent / "outside"
    s = _session(ws, "deny", "once", "session")
    denied = term({"path": str(outside / "a.txt"), "content": "x\n"}, s, tool="write_file")
    assert "denied" in denied["error"] and not (outside / "a.txt").exists(), denied
    request = s.sink.asked[0]
    assert request.kind == "approval" and request.payload["pattern"] == "sandbox_file_write"
    assert request.payload["command"] == f"write_file {outside / 'a.txt'}"
    assert "outside the sandbox" in request.payload["reason"]
    assert term({"path": str(outside / "a.txt"), "content": "x\n"}, s, tool="write_file").get("created") is True
    assert (outside / "a.txt").read_text() == "x\n"
    patched = term({"path": str(outside / "a.txt"), "old_string": "x", "new_string": "y"}, s, tool="patch")
    assert "error" not in patched and (outside / "a.txt").read_text() == "y\n"
    assert [r.payload["command"].split()[0] for r in s.sink.asked] == ["write_file", "write_file", "patch"]
    # "session" was the last answer: no more questions for this session
    assert "error" not in term({"path": str(outside / "b.txt"), "content": "z\n"}, s, tool="write_file")
    assert len(s.sink.asked) == 3
    # inside the workspace nothing is asked
    inside = _session(ws)
    assert "error" not in term({"path": str(ws / "in.txt"), "content": "i\n"}, inside, tool="write_file")
    assert inside.sink.asked == []


def test_file_writes_outside_without_a_person_say_how_to_allow_them(ws: Path) -> None:
    outside = ws.parent / "outside"
    refused = term({"path": str(outside / "c.txt"), "content": "x\n"}, tool="write_file")
    assert "sandbox_file_write" in refused["error"] and "sandbox.writable_paths" in refused["error"], refused
    assert not (outside / "c.txt").exists()
    _config(ws, f"sandbox:\n  writable_paths: [{outside}]\n")
    assert "error" not in term({"path": str(outside / "c.txt"), "content": "x\n"}, tool="write_file")
    _config(ws, "sandbox:\n  mode: full-access\n")
    assert "error" not in term({"path": str(outside / "d.txt"), "content": "x\n"}, tool="write_file")
    _config(ws, "approvals:\n  allow: [sandbox_file_write]\n")
    assert "error" not in term({"path": str(outside / "e.txt"), "content": "x\n"}, tool="write_file")
