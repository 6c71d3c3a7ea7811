"""terminal and process_manage with real bash subprocesses (requirement T-TERM, issue 3 item 2).

Every command here runs inside ``tmp_path``, hermes's working directory and so the session's workspace
(a ``workdir`` outside it would be read-only in the sandbox); the approval tests use harmless stand-ins (a recursive
delete of a scratch folder, a ``mkfs`` of a path that does not exist) so nothing outside the test's
directories can change even if a check failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hermes.tools.terminal.tool  # noqa: F401 - registers the tools
from fakes.processes import alive as _alive
from fakes.processes import marked as _marked
from fakes.processes import new_marker as _marker
from fakes.tool_session import FakeSession, ScriptedSink
from hermes.config.paths import HermesPaths
from hermes.config.settings import Settings
from hermes.redact import MASK
from hermes.tools.registry import registry
from hermes.tools.terminal.processes import manager
from hermes.tools.terminal.runner import OUTPUT_MARKER
from hermes.tools.toolsets import Surface


def run(args: dict[str, Any] | str, *, task: str = "t-terminal", session: FakeSession | None = None,
        tool: str = "terminal") -> dict[str, Any]:
    kw: dict[str, Any] = {"task_id": session.task_id if session else task}
    if session is not None:
        kw["session"] = session
    result = json.loads(registry.dispatch(tool, args, **kw))
    assert isinstance(result, dict)
    return result


def pm(args: dict[str, Any], task: str = "t-terminal") -> dict[str, Any]:
    return run(args, task=task, tool="process_manage")


@pytest.fixture
def allow_unproven(hermes_home: Path) -> None:
    """Tests of running commands (not of approvals) that use shell features which cannot be proven safe
    (``$!``, ``$VAR``, loops): the configuration allows unproven commands, as a person may."""
    (hermes_home / "config.yaml").write_text("approvals:\n  allow: [unproven]\n", encoding="utf-8")


@pytest.fixture(autouse=True)
def _cleanup(hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)  # hermes's working directory, the session's workspace: sandboxed commands write here
    yield
    for task in ("t-terminal", "t-other", "t-fuzz", "s-approve"):
        manager.kill_session(task)


def _eventually(predicate: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


# -- foreground ----------------------------------------------------------------------------------------


def test_output_exit_code_and_duration(tmp_path: Path) -> None:
    r = run({"command": "echo out; echo err >&2; pwd; exit 3", "workdir": str(tmp_path)})
    assert r["output"].split("\n")[:3] == ["out", "err", str(tmp_path)]
    assert r["exit_code"] == 3
    assert r["duration_s"] >= 0 and r["workdir"] == str(tmp_path)
    assert "timed_out" not in r


def test_stdin_is_closed_and_workdir_is_checked(tmp_path: Path) -> None:
    assert run({"command": "cat; echo done", "workdir": str(tmp_path)})["output"] == "done\n"
    r = run({"command": "true", "workdir": str(tmp_path / "missing")})
    assert "workdir" in r["error"]


def test_timeout_kills_the_whole_process_group(tmp_path: Path, allow_unproven: None) -> None:
    pidfile = tmp_path / "child.pid"
    marker = _marker()
    started = time.monotonic()
    r = run({"command": f"sleep {marker} & echo $! > {pidfile}; echo started; sleep 30", "timeout": 1,
             "workdir": str(tmp_path)})
    assert time.monotonic() - started < 10
    assert r["timed_out"] is True and "killed" in r["note"]
    assert r["output"] == "started\n"
    assert r["signal"] in ("SIGTERM", "SIGKILL")
    assert int(pidfile.read_text()) > 0  # the child was started
    assert _eventually(lambda: not _marked(marker)), "the background child survived the timeout"


def test_output_is_capped_with_a_marker(tmp_path: Path) -> None:
    r = run({"command": "seq 1 100000; echo LAST", "workdir": str(tmp_path)})
    out = r["output"]
    assert OUTPUT_MARKER in out and r["truncated"] is True
    assert out.startswith("1\n2\n3\n") and out.endswith("100000\nLAST\n")
    assert len(out) < 41_000 and r["output_chars"] > 500_000


def test_secret_env_vars_do_not_reach_the_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                allow_unproven: None) -> None:
    monkeypatch.setenv("FOO_API_KEY", "supersecretvalue123")
    monkeypatch.setenv("MY_TOKEN", "anothersecret4567")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    r = run({"command": 'echo "[$FOO_API_KEY][$MY_TOKEN][$PLAIN_SETTING]"', "workdir": str(tmp_path)})
    assert r["output"] == "[][][visible]\n"


def test_env_passthrough_and_masked_output(tmp_path: Path, hermes_home: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOO_API_KEY", "supersecretvalue123")
    (hermes_home / "config.yaml").write_text("terminal:\n  env_passthrough: [FOO_*]\napprovals:\n  allow: [unproven]\n",
                                             encoding="utf-8")
    r = run({"command": 'test -n "$FOO_API_KEY" && echo "present $FOO_API_KEY"', "workdir": str(tmp_path)})
    assert r["output"] == f"present {MASK}\n"


# -- background processes ------------------------------------------------------------------------------


def test_background_poll_write_log_wait(tmp_path: Path, allow_unproven: None) -> None:
    script = 'echo ready; read line; echo "got $line"; for i in 1 2 3; do echo "n$i"; done; exit 7'
    started = run({"command": script, "background": True, "workdir": str(tmp_path)})
    pid = started["process_id"]
    assert started["status"] == "running"
    assert _eventually(lambda: "ready" in pm({"action": "log", "process_id": pid})["lines"])
    assert pm({"action": "poll", "process_id": pid})["status"] == "running"
    wrote = pm({"action": "write", "process_id": pid, "input": "hello\n"})
    assert wrote["written_bytes"] == 6
    done = pm({"action": "wait", "process_id": pid, "timeout": 10})
    assert done["status"] == "exited" and done["exit_code"] == 7
    assert "got hello" in done["output"] and "n3" in done["output"]
    log = pm({"action": "log", "process_id": pid, "offset": 1, "limit": 2})
    assert log["lines"] == "got hello\nn1" and log["total_lines"] == 5
    assert pm({"action": "log", "process_id": pid, "offset": -1})["lines"] == "n3"
    listed = pm({"action": "list"})["processes"]
    assert [p["process_id"] for p in listed] == [pid]


def test_wait_times_out_and_kill_stops_the_group(tmp_path: Path, allow_unproven: None) -> None:
    pidfile = tmp_path / "grandchild.pid"
    marker = _marker()
    # the pid file appears whole (written aside, then renamed): `echo > file` creates it empty first
    started = run({"command": f"sleep {marker} & echo $! > {pidfile}.tmp && mv {pidfile}.tmp {pidfile}; sleep 60",
                   "background": True,
                   "workdir": str(tmp_path)})
    pid = started["process_id"]
    waited = pm({"action": "wait", "process_id": pid, "timeout": 0})
    assert waited["timed_out"] is True and waited["status"] == "running"
    assert _eventually(pidfile.exists)
    assert _eventually(lambda: bool(_marked(marker)))  # the grandchild runs
    killed = pm({"action": "kill", "process_id": pid})
    assert killed["status"] == "killed" and killed["was_running"] is True
    assert killed["exit_code"] in (128 + 15, 128 + 9)
    assert _eventually(lambda: not _marked(marker))


def test_eof_closes_stdin(tmp_path: Path) -> None:
    pid = run({"command": "cat", "background": True, "workdir": str(tmp_path)})["process_id"]
    pm({"action": "write", "process_id": pid, "input": "abc\n", "eof": True})
    done = pm({"action": "wait", "process_id": pid, "timeout": 10})
    assert done["exit_code"] == 0 and done["output"] == "abc\n"
    assert "exited" in pm({"action": "write", "process_id": pid, "input": "more"})["error"]


def test_write_to_a_process_that_does_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hermes.tools.terminal.processes.WRITE_TIMEOUT", 0.3)
    pid = run({"command": "sleep 30", "background": True, "workdir": str(tmp_path)})["process_id"]
    r = pm({"action": "write", "process_id": pid, "input": "x" * 1_000_000})
    assert "not reading its stdin" in r["error"]
    assert pm({"action": "kill", "process_id": pid})["status"] == "killed"


def test_kill_reaches_children_left_behind(tmp_path: Path, hermes_home: Path) -> None:
    """Unsandboxed, a child left behind by an exited command lives on until kill reaches it."""
    (hermes_home / "config.yaml").write_text("sandbox:\n  mode: full-access\napprovals:\n  allow: [unproven]\n",
                                             encoding="utf-8")
    pidfile = tmp_path / "orphan.pid"
    marker = _marker()
    pid = run({"command": f"sleep {marker} & echo $! > {pidfile}; exit 0", "background": True,
               "workdir": str(tmp_path)})["process_id"]
    assert pm({"action": "wait", "process_id": pid, "timeout": 10})["exit_code"] == 0
    orphan = int(pidfile.read_text())
    assert _marked(marker) == [orphan]
    pm({"action": "kill", "process_id": pid})
    assert _eventually(lambda: not _alive(orphan))


def test_sandboxed_children_end_with_their_command(tmp_path: Path) -> None:
    """In the sandbox (its own PID namespace) nothing a command left behind outlives it."""
    pidfile = tmp_path / "orphan.pid"
    marker = _marker()
    started = run({"command": f"sleep {marker} & echo $! > {pidfile}; exit 0", "background": True,
                   "workdir": str(tmp_path)})
    assert started["sandbox"] == "workspace-write"
    assert pm({"action": "wait", "process_id": started["process_id"], "timeout": 10})["exit_code"] == 0
    assert pidfile.read_text().strip()  # the child was started
    assert _eventually(lambda: not _marked(marker))


def test_background_processes_die_with_hermes(tmp_path: Path, hermes_home: Path, allow_unproven: None) -> None:
    pidfile = tmp_path / "bg.pid"
    marker = _marker()
    script = (
        "import json, hermes.tools.terminal.tool\n"
        "from hermes.tools.registry import registry\n"
        f"r = registry.dispatch('terminal', {{'command': 'echo $$ > {pidfile}; sleep {marker}', 'background': True}})\n"
        "assert 'process_id' in json.loads(r), r\n"
        "import time\n"
        f"while not open('{pidfile}').read().strip() if __import__('os').path.exists('{pidfile}') else True:\n"
        "    time.sleep(0.02)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert _eventually(lambda: not _marked(marker))


def test_processes_are_per_session(tmp_path: Path) -> None:
    pid = run({"command": "sleep 30", "background": True, "workdir": str(tmp_path)})["process_id"]
    assert pm({"action": "list"}, task="t-other")["processes"] == []
    assert "no background process" in pm({"action": "poll", "process_id": pid}, task="t-other")["error"]
    assert "needs 'process_id'" in pm({"action": "poll"})["error"]


# -- approvals through a fake session ----------------------------------------------------------------


def _approval_session(home: Path, surface: Surface, *answers: Any, config: str = "") -> FakeSession:
    if config:
        (home / "config.yaml").write_text(config, encoding="utf-8")
    return FakeSession("s-approve", surface, ScriptedSink(*answers), Settings.load(HermesPaths(home)))


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True, exist_ok=True)
    (victim / "sub" / "f.txt").write_text("x", encoding="utf-8")
    return victim


def _delete(victim: Path) -> dict[str, Any]:
    return {"command": f"rm -rf {victim}", "workdir": str(victim.parent)}


def test_approve_once_asks_every_time(tmp_path: Path, hermes_home: Path) -> None:
    s = _approval_session(hermes_home, Surface.CLI, "once", "once")
    victim = _victim(tmp_path)
    assert run(_delete(victim), session=s)["exit_code"] == 0 and not victim.exists()
    victim = _victim(tmp_path)
    run(_delete(victim), session=s)
    assert len(s.sink.asked) == 2 and not victim.exists()
    assert s.sink.asked[0].payload["pattern"] == "rm_recursive"


def test_approve_for_the_session(tmp_path: Path, hermes_home: Path) -> None:
    s = _approval_session(hermes_home, Surface.CLI, "session")
    for _ in range(2):
        victim = _victim(tmp_path)
        assert run(_delete(victim), session=s)["exit_code"] == 0 and not victim.exists()
    assert len(s.sink.asked) == 1
    assert not (hermes_home / "config.yaml").exists()


def test_approve_always_writes_config(tmp_path: Path, hermes_home: Path) -> None:
    s = _approval_session(hermes_home, Surface.CLI, "always", config="approvals:\n  mode: ask  # keep me\n")
    victim = _victim(tmp_path)
    assert run(_delete(victim), session=s)["exit_code"] == 0 and not victim.exists()
    text = (hermes_home / "config.yaml").read_text(encoding="utf-8")
    assert "rm_recursive" in text and "# keep me" in text
    later = _approval_session(hermes_home, Surface.ONESHOT)
    victim = _victim(tmp_path)
    assert run(_delete(victim), session=later)["exit_code"] == 0 and not victim.exists()
    assert later.sink.asked == []


@pytest.mark.parametrize(("answer", "message"), [("deny", "denied"), (None, "nobody answered")])
def test_deny_and_no_answer_do_not_run(tmp_path: Path, hermes_home: Path, answer: str | None, message: str) -> None:
    s = _approval_session(hermes_home, Surface.CLI, answer)
    victim = _victim(tmp_path)
    r = run(_delete(victim), session=s)
    assert message in r["error"] and victim.exists()
    assert len(s.sink.asked) == 1


def test_oneshot_surface_denies_without_asking(tmp_path: Path, hermes_home: Path) -> None:
    s = _approval_session(hermes_home, Surface.ONESHOT, "once")
    victim = _victim(tmp_path)
    r = run(_delete(victim), session=s)
    assert "approvals.allow" in r["error"] and "rm_recursive" in r["error"]
    assert victim.exists() and s.sink.asked == []


def test_floor_refused_in_yolo_mode(tmp_path: Path, hermes_home: Path) -> None:
    s = _approval_session(hermes_home, Surface.CLI, "once", config="approvals:\n  mode: yolo\n")
    r = run({"command": f"mkfs.ext4 {tmp_path}/no-such-device", "workdir": str(tmp_path)}, session=s)
    assert "hard floor" in r["error"] and s.sink.asked == []
    victim = _victim(tmp_path)
    assert run(_delete(victim), session=s)["exit_code"] == 0 and not victim.exists()


def test_writes_to_a_shell_are_checked(tmp_path: Path, hermes_home: Path) -> None:
    # starting a shell cannot be proven safe: the configuration allows it; what is written to it is checked
    s = _approval_session(hermes_home, Surface.ONESHOT, config="approvals:\n  allow: [bash]\n")
    pid = run({"command": "bash", "background": True, "workdir": str(tmp_path)}, session=s)["process_id"]
    refused = run({"action": "write", "process_id": pid, "input": f"mkfs.ext4 {tmp_path}/none\n"}, session=s,
                  tool="process_manage")
    assert "hard floor" in refused["error"]
    run({"action": "write", "process_id": pid, "input": "echo fine; exit 0\n"}, session=s, tool="process_manage")
    done = run({"action": "wait", "process_id": pid, "timeout": 10}, session=s, tool="process_manage")
    assert done["output"] == "fine\n" and done["exit_code"] == 0


# -- malformed arguments -------------------------------------------------------------------------------

_JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-10**9, 10**9), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(),
                                                                                max_size=2),
)
_SAFE_COMMANDS = st.sampled_from(["true", "echo hi", ":", "exit 3"])


def _payloads(required: dict[str, st.SearchStrategy[Any]],
              optional: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """Mostly well-shaped objects with some bad fields, plus wholly malformed payloads."""
    well_formed = st.fixed_dictionaries(required, optional=optional)
    loose = st.fixed_dictionaries({}, optional={**required, **optional})
    # raw strings may be any text except something that could name a command to run
    raw = st.text(max_size=40).filter(lambda t: "command" not in t and "input" not in t)
    return st.one_of(well_formed, well_formed, well_formed, loose, raw, st.lists(_JUNK, max_size=3), st.integers())


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_payloads(
    {"command": _SAFE_COMMANDS},
    {
        "timeout": st.one_of(st.integers(-5, 700), _JUNK),
        "workdir": st.one_of(st.just("."), st.just("./nope"), _JUNK),
        "background": st.one_of(st.booleans(), _JUNK),
        "extra": _JUNK,
    },
))
def test_fuzz_terminal_arguments(tmp_path: Path, payload: Any) -> None:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = json.loads(registry.dispatch("terminal", payload, task_id="t-fuzz"))
    finally:
        os.chdir(cwd)
    assert isinstance(result, dict) and ("error" in result or "exit_code" in result or "process_id" in result)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_payloads(
    {"action": st.sampled_from(["list", "poll", "log", "wait", "kill", "write"])},
    {
        "process_id": st.one_of(st.text(max_size=12), _JUNK),
        "input": st.one_of(st.text(max_size=12), _JUNK),
        "eof": _JUNK,
        "timeout": st.one_of(st.integers(-5, 700), _JUNK),
        "offset": st.one_of(st.integers(), _JUNK),
        "limit": st.one_of(st.integers(-5, 3000), _JUNK),
        "extra": _JUNK,
    },
))
def test_fuzz_process_manage_arguments(payload: Any) -> None:
    result = json.loads(registry.dispatch("process_manage", payload, task_id="t-fuzz-pm"))
    assert isinstance(result, dict) and ("error" in result or "processes" in result)


def test_unsandboxed_writes_in_a_workdir_outside_the_workspace_are_asked(tmp_path: Path, hermes_home: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    monkeypatch.chdir(workspace)
    s = _approval_session(hermes_home, Surface.ONESHOT, config="sandbox:\n  mode: full-access\n")
    refused = run({"command": "echo hi > autostart.sh", "workdir": str(outside)}, session=s)
    assert "needs approval" in refused["error"] and not (outside / "autostart.sh").exists()
    assert run({"command": "echo hi > ok.sh", "workdir": str(workspace)}, session=s)["exit_code"] == 0
