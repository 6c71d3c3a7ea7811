"""The ``modal`` backend end to end through our own Tool Gateway: the gateway (create_app under uvicorn)
with its modal relay on the local sandbox engine, and hermes's tools configured with
``terminal.backend: modal`` and the gateway pinned by ``MODAL_GATEWAY_URL`` (GW-14).

When the tests run as root the engine runs commands as ``nobody``; otherwise as the test's own user.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import hermes.tools.code.tool
import hermes.tools.file.read
import hermes.tools.file.write
import hermes.tools.terminal.tool  # noqa: F401
from fakes.tool_session import FakeSession, ScriptedSink
from fakes.vendors.harness import GatewayHarness
from hermes.config.paths import HermesPaths
from hermes.config.settings import Settings
from hermes.tools.context import SESSION_END_KEY
from hermes.tools.registry import registry
from hermes.tools.toolsets import Surface

AS_ROOT = os.geteuid() == 0


@pytest.fixture(scope="module")
def gw(traversable_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    who = {"modal.run_as": "nobody"} if AS_ROOT else {"modal.allow_gateway_user": True}
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_backend"), admin_token="admin-secret-token",
                             **{"modal.backend": "local", "modal.root": str(traversable_root / "sandboxes"),
                                "modal.exec_wait": 2.0, **who})
    with harness:
        harness.user("paula", "paid")
        harness.user("nora", "none")
        yield harness


class Task:
    def __init__(self, home: Path, gw: GatewayHarness, user: str) -> None:
        (home / "config.yaml").write_text(
            "terminal:\n  backend: modal  # through the gateway\n  modal:\n    image: python:3.11\n"
            "approvals:\n  mode: ask\n", encoding="utf-8")
        (home / ".env").write_text(f"MODAL_GATEWAY_URL={gw.relay_url('modal')}\n"
                                   f"TOOL_GATEWAY_USER_TOKEN={gw.token(user)}\n", encoding="utf-8")
        self.home = home
        self.session = FakeSession("t-modal", Surface.CLI, ScriptedSink(), Settings.load(HermesPaths(home)))

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        out = json.loads(registry.dispatch(tool, args, task_id="t-modal", session=self.session))
        assert isinstance(out, dict)
        return out

    def end(self) -> None:
        for callback in self.session.state.pop(SESSION_END_KEY, {}).values():
            callback()


@pytest.fixture
def task(hermes_home: Path, gw: GatewayHarness) -> Iterator[Task]:
    t = Task(hermes_home, gw, "paula")
    yield t
    t.end()


def test_commands_and_files_run_in_one_gateway_sandbox(task: Task, gw: GatewayHarness) -> None:
    first = task.call("terminal", command="echo hello from $(whoami); pwd")
    assert first["exit_code"] == 0 and "hello from" in first["output"], first
    assert first["sandbox"].startswith("modal sandbox ") and gw.relay_url("modal") in first["sandbox"]
    home = first["workdir"]
    assert home in first["output"]
    if AS_ROOT:
        assert "hello from nobody" in first["output"]  # not this process's user: the engine's
    made = task.call("write_file", path="notes.txt", content="one\n")
    assert made["created"] is True and made["path"] == f"{home}/notes.txt"
    assert task.call("terminal", command="cat notes.txt")["output"] == "one\n"  # the same sandbox
    task.call("terminal", command="echo two >> notes.txt")
    assert "changed since" in task.call("write_file", path="notes.txt", content="x\n")["error"]
    assert task.call("read_file", path="notes.txt")["full_file_seen"] is True
    assert task.call("write_file", path="notes.txt", content="x\n")["created"] is False
    bg = task.call("terminal", command="echo started; sleep 0.3; echo done; exit 5", background=True)
    waited = task.call("process_manage", action="wait", process_id=bg["process_id"], timeout=20)
    assert waited["exit_code"] == 5 and "done" in waited["output"]
    sandbox = task.session.state["execution_backend"].sandbox_id
    task.end()
    view = httpx.post(f"{gw.relay_url('modal')}/v1/sandboxes/{sandbox}/execs",
                      json={"command": "true"}, headers={"authorization": f"Bearer {gw.token('paula')}"})
    assert view.status_code in (404, 409), view.text  # terminated with the session


def test_keep_sandbox_leaves_it_running(hermes_home: Path, gw: GatewayHarness) -> None:
    t = Task(hermes_home, gw, "paula")
    text = (hermes_home / "config.yaml").read_text()
    (hermes_home / "config.yaml").write_text(text.replace("terminal:\n", "terminal:\n  keep_sandbox: true\n"))
    t.session = FakeSession("t-modal", Surface.CLI, ScriptedSink(), Settings.load(HermesPaths(hermes_home)))
    assert t.call("terminal", command="echo kept > kept.txt")["exit_code"] == 0
    sandbox = t.session.state["execution_backend"].sandbox_id
    t.end()
    headers = {"authorization": f"Bearer {gw.token('paula')}"}
    again = httpx.post(f"{gw.relay_url('modal')}/v1/sandboxes/{sandbox}/execs", headers=headers,
                       json={"command": "cat kept.txt"}, timeout=30)
    assert again.status_code == 200 and again.json()["output"] == "kept\n", again.text
    httpx.post(f"{gw.relay_url('modal')}/v1/sandboxes/{sandbox}/terminate", headers=headers, json={}, timeout=30)


def test_execute_code_runs_in_the_sandbox_and_its_tool_calls_come_back(task: Task) -> None:
    """The script runs in the gateway's sandbox; its hermes_tools calls reach this session's dispatch through
    the run's mailbox folder there (no socket can reach back through the relay) and act on the same sandbox."""
    from hermes.tools.session import SessionContext, ToolSession

    code = ("import os, hermes_tools\nprint('in', os.getcwd())\n"
            "made = hermes_tools.write_file(path='from-script.txt', content='via the mailbox\\n')\n"
            "ran = hermes_tools.terminal(command='cat from-script.txt; echo $((6*7))')\n"
            "print('ran', ran['exit_code'], ran['output'].split())\n"
            "try:\n    hermes_tools._call('memory', {})\nexcept hermes_tools.HermesToolsError as exc:\n"
            "    print('refused:', exc)\n")
    session = ToolSession(registry, ("execute_code", "terminal", "write_file"),
                          SessionContext(surface=Surface.CLI, settings=task.session.settings, task_id="t-modal-code"))
    try:
        out = json.loads(session.dispatch("execute_code", {"code": code, "timeout": 120}).text)
        home = json.loads(session.dispatch("terminal", {"command": "pwd"}).text)["output"].strip()
        kept = json.loads(session.dispatch("terminal", {"command": "cat from-script.txt"}).text)["output"]
    finally:
        for callback in session.state.pop(SESSION_END_KEY, {}).values():
            callback()
    assert "stdout" in out, out
    assert f"in {home}" in out["stdout"], out
    assert "ran 0 ['via', 'the', 'mailbox', '42']" in out["stdout"], out
    assert "refused: tool 'memory' is not available to scripts" in out["stdout"], out
    assert out["tool_calls_made"] == 2 and "notes" not in out, out
    assert out["sandbox"].startswith("modal sandbox ")
    assert kept == "via the mailbox\n"  # written in the sandbox, by the script's call


def test_the_floor_applies_before_the_gateway_is_called(task: Task) -> None:
    assert "error" in task.call("terminal", command="rm -rf /")
    assert "execution_backend" not in task.session.state or task.session.state["execution_backend"].sandbox_id is None


def test_no_entitlement_is_a_clear_error_and_nothing_runs_here(hermes_home: Path, gw: GatewayHarness) -> None:
    t = Task(hermes_home, gw, "nora")
    marker = hermes_home / "ran-locally"
    try:
        out = t.call("terminal", command=f"touch {marker}")
        assert "terminal.backend is modal" in out["error"] and "subscription" in out["error"]
        assert not marker.exists()
    finally:
        t.end()


def test_portal_info_and_status_show_the_terminal_route(hermes_home: Path, gw: GatewayHarness) -> None:
    Task(hermes_home, gw, "paula")
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    info = subprocess.run([sys.executable, "-m", "hermes", "portal", "info"], capture_output=True, text=True,
                          env=env, timeout=60)
    line = next(x for x in info.stdout.splitlines() if x.strip().startswith("Terminal"))
    assert "✓" in line and f"Modal sandbox via the Tool Gateway at {gw.relay_url('modal')}" in line
    status = subprocess.run([sys.executable, "-m", "hermes", "status", "--full", "--json"], capture_output=True,
                            text=True, env=env, timeout=60)
    data = json.loads(status.stdout)
    assert data["gateway"]["terminal"]["ready"] is True and data["gateway"]["terminal"]["backend"] == "modal"
    assert data["sandbox"]["execution_backend"] == "modal"
    text = subprocess.run([sys.executable, "-m", "hermes", "status", "--full"], capture_output=True, text=True,
                          env=env, timeout=60).stdout
    assert "commands and files are on the modal backend" in text
    tools = _tool_lines(env)
    assert all(tools[name].startswith("✓") for name in BACKEND_TOOLS), tools
    Task(hermes_home, gw, "nora")
    info = subprocess.run([sys.executable, "-m", "hermes", "portal", "info"], capture_output=True, text=True,
                          env=env, timeout=60)
    line = next(x for x in info.stdout.splitlines() if x.strip().startswith("Terminal"))
    assert "✗" in line
    tools = _tool_lines(env)  # no entitlement: the tools that act through the backend are not ready either
    for name in BACKEND_TOOLS:
        assert tools[name].startswith("✗") and "terminal.backend is modal" in tools[name], tools[name]


BACKEND_TOOLS = ("terminal", "process_manage", "execute_code", "read_file", "write_file", "patch", "search_files")


def _tool_lines(env: dict[str, str]) -> dict[str, str]:
    """``hermes tools list --all``: each tool's line (``✓ name …`` / ``✗ name — unavailable: …``) by name."""
    listed = subprocess.run([sys.executable, "-m", "hermes", "tools", "list", "--all"], capture_output=True,
                            text=True, env=env, timeout=60).stdout
    lines = [x.strip() for x in listed.splitlines() if x.strip()[:1] in ("✓", "✗")]
    return {x.split()[1]: x for x in lines}


def test_a_portal_login_that_expires_mid_session_is_renewed(hermes_home: Path, gw: GatewayHarness) -> None:
    """With a portal login (not a pinned token) the backend reads the login again for every request, and
    one that is about to expire is renewed through the portal first — an hour into a session the
    terminal still works, on the new token."""
    from hermes.routing.portal_login import DeviceCode, login

    def approve(code: DeviceCode) -> None:
        assert gw.side.oauth.decide(code.user_code, gw.side.accounts.get_user("paula"), True)

    login(hermes_home / "auth.json", {}, gw.url, show=approve, sleep=lambda _: None)
    t = Task(hermes_home, gw, "paula")
    (hermes_home / ".env").write_text(f"MODAL_GATEWAY_URL={gw.relay_url('modal')}\n", encoding="utf-8")
    t.session = FakeSession("t-modal", Surface.CLI, ScriptedSink(), Settings.load(HermesPaths(hermes_home)))
    try:
        assert t.call("terminal", command="echo first")["exit_code"] == 0
        doc = json.loads((hermes_home / "auth.json").read_text())
        before = doc["providers"]["nous"]["access_token"]
        doc["providers"]["nous"]["expires_at"] = "2000-01-01T00:00:00Z"  # an hour later: due for renewal
        (hermes_home / "auth.json").write_text(json.dumps(doc))
        second = t.call("terminal", command="echo second")
        assert second["exit_code"] == 0 and "second" in second["output"], second
        after = json.loads((hermes_home / "auth.json").read_text())["providers"]["nous"]
        assert after["access_token"] != before  # renewed before the relay was called
    finally:
        t.end()
