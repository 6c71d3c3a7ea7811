"""One long-lived sandbox per session (hermes.tools.sandbox_pool), with real bwrap runs.

A session's commands are forked inside one sandbox built once; these tests check that it is one, that
it follows the session's settings (a changed mode or a folder made again gets a new one), that timeouts
still kill the whole group, that scripts share one too, and that everything ends with the session.
"""

from __future__ import annotations

import json
import os
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.code.tool
import hermes.tools.terminal.tool  # noqa: F401 - registers terminal and process_manage
from fakes.tool_session import FakeSession, ScriptedSink
from hermes.config.paths import HermesPaths
from hermes.config.settings import Settings
from hermes.tools import sandbox, sandbox_pool
from hermes.tools.context import SESSION_END_KEY
from hermes.tools.registry import registry
from hermes.tools.toolsets import Surface

pytestmark = pytest.mark.skipif(not sandbox.support().available,
                                reason=f"no sandbox here: {sandbox.support().missing}")
TASK = "t-sbx-session"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    workspace = tmp_path / "ws"
    (workspace / ".hermes").mkdir(parents=True)
    monkeypatch.setenv("HERMES_HOME", str(workspace / ".hermes"))
    monkeypatch.chdir(workspace)
    yield workspace
    for task in (TASK, f"{TASK}:execute_code"):
        sandbox_pool.drop(task)
        sandbox.drop_session_temp(task)


def _session(ws: Path) -> FakeSession:
    return FakeSession(TASK, Surface.CLI, ScriptedSink(), Settings.load(HermesPaths(ws / ".hermes")))


def _call(tool: str, args: dict[str, Any], session: FakeSession) -> dict[str, Any]:
    result = json.loads(registry.dispatch(tool, args, task_id=TASK, session=session))
    assert isinstance(result, dict)
    return result


def _end(session: FakeSession) -> None:
    for callback in session.state.pop(SESSION_END_KEY, {}).values():
        callback()


def _gone(pid: int) -> bool:
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_sessions_commands_share_one_sandbox_until_the_session_ends(ws: Path) -> None:
    session = _session(ws)
    first = _call("terminal", {"command": "echo $$ > first.pid; echo one", "workdir": str(ws)}, session)
    second = _call("terminal", {"command": "echo two; cat /tmp/x 2>/dev/null; echo kept > /tmp/x"}, session)
    assert (first["output"], second["output"]) == ("one\n", "two\n")
    assert first["sandbox"] == second["sandbox"] == "workspace-write"
    assert sandbox_pool.running(TASK) == 1
    # a fresh PID namespace per command would make every command's shell pid 2; here they share one
    third = _call("terminal", {"command": "echo $$; cat /tmp/x"}, session)
    pid_inside, kept = third["output"].split()
    assert kept == "kept" and int(pid_inside) != int((ws / "first.pid").read_text())
    started = _call("terminal", {"command": "sleep 300", "background": True}, session)
    assert sandbox_pool.running(TASK) == 1  # the background process runs in the same sandbox
    _end(session)
    assert sandbox_pool.running(TASK) == 0
    assert _gone(started["pid"])


def test_a_changed_mode_gets_a_new_sandbox(ws: Path) -> None:
    session = _session(ws)
    assert _call("terminal", {"command": "echo a > a.txt", "workdir": str(ws)}, session)["exit_code"] == 0
    (ws / ".hermes" / "config.yaml").write_text("sandbox:\n  mode: read-only\n", encoding="utf-8")
    session.settings = Settings.load(HermesPaths(ws / ".hermes"))
    r = _call("terminal", {"command": "echo b > b.txt", "workdir": str(ws)}, session)
    assert r["sandbox"] == "read-only" and "Read-only file system" in r["output"] and not (ws / "b.txt").exists()
    assert (ws / "a.txt").exists()
    assert sandbox_pool.running(TASK) == 1  # the workspace-write one was retired (nothing ran in it)


def test_a_folder_removed_and_made_again_is_the_new_one(ws: Path) -> None:
    extra = ws.parent / "extra"
    extra.mkdir()
    (ws / ".hermes" / "config.yaml").write_text(f"sandbox:\n  writable_paths: [{extra}]\n", encoding="utf-8")
    session = _session(ws)
    assert _call("terminal", {"command": f"echo old > {extra}/f"}, session)["exit_code"] == 0
    (extra / "f").unlink()
    extra.rmdir()
    extra.mkdir()
    (extra / "g").write_text("new\n", encoding="utf-8")
    r = _call("terminal", {"command": f"ls {extra}; echo more > {extra}/h"}, session)
    assert r["output"] == "g\n" and r["exit_code"] == 0 and (extra / "h").read_text() == "more\n"


def test_a_timeout_kills_the_whole_group_inside_the_session_sandbox(ws: Path) -> None:
    session = _session(ws)
    r = _call("terminal", {"command": "sleep 301 & sleep 302 & echo $! > bg.pid; wait", "timeout": 1,
                           "workdir": str(ws)}, session)
    assert r["timed_out"] is True and (ws / "bg.pid").read_text().strip()
    left = _call("terminal", {"command": "ps -eo args | grep -c '^sleep 30[12]' || true"}, session)
    assert left["output"].strip() == "0", left
    assert sandbox_pool.running(TASK) == 1


def test_process_manage_kill_reaches_the_group(ws: Path) -> None:
    session = _session(ws)
    started = _call("terminal", {"command": "sleep 303 & sleep 304", "background": True, "workdir": str(ws)},
                    session)
    killed = _call("process_manage", {"action": "kill", "process_id": started["process_id"]}, session)
    assert killed["status"] == "killed" or killed.get("exit_code") is not None, killed
    left = _call("terminal", {"command": "ps -eo args | grep -c '^sleep 30[34]' || true"}, session)
    assert left["output"].strip() == "0", left


def _sleeps_become(session: FakeSession, count: str) -> bool:
    """Whether the number of `sleep 305`…`sleep 309` processes in the sandbox becomes ``count`` (30 s at most)."""
    deadline = time.monotonic() + 30
    while True:
        seen = _call("terminal", {"command": "ps -eo args | grep -c '^sleep 30[5-9]' || true"}, session)["output"]
        if seen.strip() == count or time.monotonic() > deadline:
            return seen.strip() == count
        time.sleep(0.05)


def test_a_daemon_dies_with_the_command_that_started_it(ws: Path) -> None:
    # F3: a command's setsid / double-forked daemons must not live on in the session's sandbox, where
    # they could read later commands' /proc/PID/environ
    session = _session(ws)
    daemons = ("setsid sh -c 'sleep 305 & exec sleep 306' </dev/null >/dev/null 2>&1 & "
               "(setsid sleep 307 </dev/null >/dev/null 2>&1 &); echo started")
    assert _call("terminal", {"command": daemons}, session)["output"] == "started\n"
    assert _sleeps_become(session, "0")  # killed before the result came back (gone once the kernel reaps them)
    # a background process keeps what it started while it runs; what is left goes when it ends
    started = _call("terminal", {"command": "(setsid sleep 308 </dev/null >/dev/null 2>&1 &); sleep 309",
                                 "background": True}, session)
    assert _sleeps_become(session, "2")
    _call("process_manage", {"action": "kill", "process_id": started["process_id"]}, session)
    assert _sleeps_become(session, "0")
    # killing its parent (the supervisor: the whole sandbox goes with it) does not set a command free either
    _call("terminal", {"command": "(setsid sleep 305 </dev/null >/dev/null 2>&1 &); kill -9 $PPID; sleep 306"},
          session)
    assert _sleeps_become(session, "0")


def test_scripts_of_a_session_share_one_sandbox(ws: Path) -> None:
    session = _session(ws)
    code = textwrap.dedent("""
        import os, tempfile
        print(os.environ["TMPDIR"] == tempfile.gettempdir(), os.path.isdir(os.environ["TMPDIR"]))
        open("from-script.txt", "a").write("x")
        print(open("/etc/hostname").read() != "" )
    """)
    runs = [_call("execute_code", {"code": code}, session) for _ in range(2)]
    assert [r["stdout"] for r in runs] == ["True True\nTrue\n"] * 2, runs
    assert {r["sandbox"] for r in runs} == {"workspace-write"}
    assert (ws / "from-script.txt").read_text() == "xx"
    assert sandbox_pool.running(f"{TASK}:execute_code") == 1
    _end(session)
    assert sandbox_pool.running(f"{TASK}:execute_code") == 0
