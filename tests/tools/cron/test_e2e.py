"""Cron end to end: `hermes cron` subprocesses against the scripted model server, the cronjob_manage tool
through registry.dispatch (fake and real runners), and a fuzz of malformed tool arguments."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes.model_server import Reply, error, text
from hermes.agent.cron import AgentRunner
from hermes.agent.events import NullSink
from hermes.store.cron import CronJob, CronStore
from hermes.store.sessions import SessionStore
from hermes.tools.cron import tool as cron_tool
from hermes.tools.cron.runner import RunOutcome
from hermes.tools.registry import registry
from hermes.tools.session import SessionContext, ToolSession
from hermes.tools.toolsets import Surface

_MODEL_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL", "OPENAI_MODEL")


def hermes(home: Path, *args: str, timeout: float = 45) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in _MODEL_ENV}
    env["HERMES_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def write_config(home: Path, url: str) -> None:
    (home / "config.yaml").write_text(f"model:\n  base_url: {url}\n  name: test-model\n  max_retries: 0\n")


def make_due(home: Path, name: str) -> None:
    """Move a job's next fire time to just now (instead of waiting for it)."""
    with CronStore(home / "state.db") as store:
        store.update_job(store.get_job(name).id, next_run_at=time.time() - 1)


def cron_sessions(home: Path) -> list[Any]:
    with SessionStore(home / "state.db") as store:
        return store.list_sessions(surface="cron")


# -- the command line ----------------------------------------------------------------------------------

def test_add_then_tick_runs_a_cron_session(hermes_home: Path, model_server: Any) -> None:
    server = model_server([text("Nightly report: 3 new issues.")])
    write_config(hermes_home, server.url)
    at = datetime.now().astimezone() + timedelta(seconds=3)
    proc = hermes(hermes_home, "cron", "add", "--name", "nightly", "--schedule", at.isoformat(timespec="seconds"),
                  "--prompt", "Summarise the new issues")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("added nightly")
    time.sleep(max(0.0, (at - datetime.now().astimezone()).total_seconds()) + 0.2)

    proc = hermes(hermes_home, "cron", "tick")
    assert proc.returncode == 0, proc.stderr
    assert "nightly: ran (ok)" in proc.stdout

    [session] = cron_sessions(hermes_home)
    assert (session.surface, session.title, session.meta["cron_job"]) == ("cron", "cron: nightly", "nightly")
    with SessionStore(hermes_home / "state.db") as store:
        messages = store.messages(session.id)
    assert [m["role"] for m in messages] == ["system", "user", "assistant"]
    assert "Summarise the new issues" in messages[1]["content"]
    assert messages[2]["content"] == "Nightly report: 3 new issues."
    [request] = server.requests
    assert "Surface: cron" in request["messages"][0]["content"]
    assert "cronjob_manage" not in [t["function"]["name"] for t in request.get("tools", [])]

    proc = hermes(hermes_home, "cron", "runs", "nightly")
    assert proc.returncode == 0, proc.stderr
    assert "ok" in proc.stdout and session.id in proc.stdout
    assert "Nightly report: 3 new issues." in proc.stdout
    listed = json.loads(hermes(hermes_home, "cron", "list", "--json").stdout)
    assert [(j["name"], j["state"], j["last_status"], j["runs"]) for j in listed] == [("nightly", "finished", "ok", 1)]
    proc = hermes(hermes_home, "cron", "tick")
    assert proc.returncode == 0 and "nothing due" in proc.stdout  # a one-shot runs once


def test_skills_toolsets_and_model_flags(hermes_home: Path, model_server: Any) -> None:
    server = model_server([text("done with skill")])
    skill = hermes_home / "skills" / "house-style"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: house-style\ndescription: d\n---\nWrite in haiku form.\n")
    job = ("cron", "add", "--name", "poem", "--schedule", "every 1h", "--prompt", "Report.",
           "--skill", "house-style", "--skill", "later-skill", "--toolsets", "todo")
    proc = hermes(hermes_home, *job)  # nothing configured: no model would run it
    assert proc.returncode == 2 and "the job was not added: no model would run this job" in proc.stderr
    assert "--no-endpoint-check" in proc.stderr
    assert "no cron jobs yet" in hermes(hermes_home, "cron", "list").stdout
    proc = hermes(hermes_home, *job, "--no-endpoint-check")  # the scheduler below gets the endpoint as flags
    assert proc.returncode == 0, proc.stderr
    assert "skill 'later-skill' is not installed yet" in proc.stderr
    assert "warning: no model would run this job" in proc.stderr
    (hermes_home / "skills" / "later-skill").mkdir()
    (hermes_home / "skills" / "later-skill" / "SKILL.md").write_text("Sign with 'H'.\n")
    make_due(hermes_home, "poem")
    proc = hermes(hermes_home, "cron", "tick", "--base-url", server.url, "--model", "flag-model")
    assert proc.returncode == 0, proc.stderr
    assert "poem: ran (ok)" in proc.stdout
    [request] = server.requests
    assert request["model"] == "flag-model"
    user = request["messages"][1]["content"]
    assert "Write in haiku form." in user and "Sign with 'H'." in user and user.rstrip().endswith("Report.")
    assert [t["function"]["name"] for t in request["tools"]] == ["todo_list"]


def test_failed_run_is_recorded_and_tick_exits_zero(hermes_home: Path, model_server: Any) -> None:
    server = model_server([error(400, "the model refused")])
    write_config(hermes_home, server.url)
    assert hermes(hermes_home, "cron", "add", "--name", "flaky", "--schedule", "*/5 * * * *",
                  "--prompt", "x").returncode == 0
    make_due(hermes_home, "flaky")
    proc = hermes(hermes_home, "cron", "tick")
    assert proc.returncode == 0, proc.stderr
    assert "flaky: ran (error)" in proc.stdout and "the model refused" in proc.stdout
    proc = hermes(hermes_home, "cron", "runs", "flaky")
    assert "error" in proc.stdout and "the model refused" in proc.stdout
    assert len(cron_sessions(hermes_home)) == 1  # the session exists even though the model failed


def test_job_management_commands(hermes_home: Path) -> None:
    write_config(hermes_home, "http://127.0.0.1:9/v1")
    proc = hermes(hermes_home, "cron", "add", "--name", "x", "--schedule", "61 * * * *", "--prompt", "p")
    assert proc.returncode == 1
    assert "'schedule': cron expression '61 * * * *': minute field: 61 is out of range 0-59" in proc.stderr
    assert hermes(hermes_home, "cron", "add", "--name", "weekly", "--schedule", "0 8 * * mon",
                  "--prompt", "plan the week").returncode == 0
    assert "weekly: paused" in hermes(hermes_home, "cron", "pause", "weekly").stdout
    assert "weekly: active, next run at" in hermes(hermes_home, "cron", "resume", "weekly").stdout
    proc = hermes(hermes_home, "cron", "update", "weekly", "--schedule", "@daily", "--name", "daily")
    assert proc.returncode == 0 and "updated daily (@daily, active)" in proc.stdout
    proc = hermes(hermes_home, "cron", "list")
    assert "daily" in proc.stdout and "@daily" in proc.stdout and "NEXT RUN" in proc.stdout
    assert "daily: no runs yet" in hermes(hermes_home, "cron", "runs", "daily").stdout
    assert hermes(hermes_home, "cron", "remove", "daily").stdout.strip() == "removed daily"
    proc = hermes(hermes_home, "cron", "remove", "daily")
    assert proc.returncode == 1 and "no cron job named 'daily'" in proc.stderr
    assert "no cron jobs yet" in hermes(hermes_home, "cron", "list").stdout


def test_long_running_scheduler_lock_and_sigterm(hermes_home: Path, model_server: Any) -> None:
    server = model_server([text("tick tock")])
    write_config(hermes_home, server.url)
    assert hermes(hermes_home, "cron", "add", "--name", "beat", "--schedule", "every 1h",
                  "--prompt", "p").returncode == 0
    make_due(hermes_home, "beat")
    env = {k: v for k, v in os.environ.items() if k not in _MODEL_ENV}
    env["HERMES_HOME"] = str(hermes_home)
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "cron", "run", "--interval", "0.2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + 30
        runs: list[Any] = []
        while time.time() < deadline and not runs:
            time.sleep(0.2)
            with CronStore(hermes_home / "state.db") as store:
                runs = [r for r in store.runs(store.get_job("beat").id) if r.status == "ok"]
        assert runs and runs[0].output == "tick tock"
        second = hermes(hermes_home, "cron", "run", "--interval", "0.2")
        assert second.returncode == 1 and "another scheduler is running" in second.stderr
        tick = hermes(hermes_home, "cron", "tick")
        assert tick.returncode == 0 and "nothing done" in tick.stderr
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "beat: ran (ok)" in out and "scheduler stopped" in err
    tick = hermes(hermes_home, "cron", "tick")  # the lock was released
    assert tick.returncode == 0 and "nothing due" in tick.stdout


def test_ctrl_c_interrupts_the_running_job(hermes_home: Path, model_server: Any) -> None:
    server = model_server([Reply(content="too late", delay=20)])
    write_config(hermes_home, server.url)
    assert hermes(hermes_home, "cron", "add", "--name", "slow", "--schedule", "every 1h",
                  "--prompt", "p").returncode == 0
    make_due(hermes_home, "slow")
    env = {k: v for k, v in os.environ.items() if k not in _MODEL_ENV}
    env["HERMES_HOME"] = str(hermes_home)
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "cron", "run", "--interval", "0.2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + 30
        while time.time() < deadline and not server.requests:  # the run is waiting for the model
            time.sleep(0.1)
        assert server.requests
        started = time.time()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert time.time() - started < 10  # it did not wait for the slow model
    assert "slow: ran (error)" in out and "the run was interrupted" in out and "scheduler stopped" in err
    with CronStore(hermes_home / "state.db") as store:
        [run] = store.runs(store.get_job("slow").id)
    assert (run.status, run.error) == ("error", "the run was interrupted") and run.session_id


# -- the tool through registry.dispatch ---------------------------------------------------------------

class ToolRunner:
    def __init__(self) -> None:
        self.ran: list[str] = []

    def run(self, job: CronJob) -> RunOutcome:
        self.ran.append(job.name)
        return RunOutcome("ok", output=f"fake output for {job.name} " + "word " * 100, session_id="fake-session")

    def interrupt(self) -> None:
        return None


#: the job runner the sessions of these tests lend the tool (the real agent unless a test swaps it)
RUNNERS: list[Any] = [AgentRunner]


@pytest.fixture
def fake_runner() -> Iterator[ToolRunner]:
    runner = ToolRunner()
    RUNNERS.append(lambda settings: runner)
    yield runner
    RUNNERS.pop()


def dispatch(**args: Any) -> dict[str, Any]:
    session = ToolSession(registry, context=SessionContext(cron_runner=RUNNERS[-1]))
    result: dict[str, Any] = json.loads(session.dispatch("cronjob_manage", args).text)
    return result


def test_tool_create_warns_when_no_model_would_run_the_job(hermes_home: Path, fake_runner: ToolRunner) -> None:
    created = dispatch(action="create", name="digest", prompt="Send the digest", schedule="0 7 * * *")
    assert created["success"]
    [warning] = created["warnings"]
    assert warning.startswith("no model would run this job: no model endpoint is configured.")
    assert "Every run fails until one is configured" in warning
    (hermes_home / "config.yaml").write_text("model:\n  provider: local\n")  # the embedded model counts
    assert "warnings" not in dispatch(action="create", name="local", prompt="p", schedule="0 7 * * *")
    (hermes_home / "config.yaml").write_text(f"model:\n  provider: local\n  path: {hermes_home / 'none.gguf'}\n")
    [warning] = dispatch(action="create", name="nofile", prompt="p", schedule="0 7 * * *")["warnings"]
    assert "the embedded model's file" in warning and "none.gguf" in warning


def test_tool_actions(hermes_home: Path, fake_runner: ToolRunner) -> None:
    write_config(hermes_home, "http://127.0.0.1:9/v1")
    created = dispatch(action="create", name="digest", prompt="Send the digest", schedule="0 7 * * *",
                       skills=["news"])
    assert created["success"] and created["job"]["state"] == "active"
    assert created["warnings"] == ["skill 'news' is not installed yet; runs fail until it is"]
    assert dispatch(action="list")["count"] == 1
    updated = dispatch(action="update", job="digest", schedule="every 2h", repeat=5)
    assert (updated["job"]["schedule"], updated["job"]["repeat"]) == ("every 2h", 5)
    assert dispatch(action="pause", job="digest")["job"]["state"] == "paused"
    assert dispatch(action="resume", job=created["job"]["id"])["job"]["state"] == "active"  # by id too
    ran = dispatch(action="run", job="digest")
    assert ran["success"] and ran["run"]["trigger"] == "manual" and fake_runner.ran == ["digest"]
    assert ran["run"]["output"].startswith("fake output for digest")
    runs = dispatch(action="runs", job="digest")
    assert runs["count"] == 1 and runs["runs"][0]["session_id"] == "fake-session"
    assert len(runs["runs"][0]["output_preview"]) <= 300 and "output" not in runs["runs"][0]
    assert "output" in dispatch(action="runs", job="digest", full=True)["runs"][0]
    assert dispatch(action="remove", job="digest") == {"success": True, "removed": "digest",
                                                        "id": created["job"]["id"]}
    assert dispatch(action="list") == {"count": 0, "jobs": []}


@pytest.mark.parametrize(("args", "message"), [
    ({"action": "create", "name": "a", "prompt": "p", "schedule": "61 * * * *"},
     "'schedule': cron expression '61 * * * *': minute field: 61 is out of range 0-59"),
    ({"action": "create", "name": "a", "prompt": "p", "schedule": "0 9 * * funday"}, "day-of-week field"),
    ({"action": "create", "name": "a", "prompt": "p"}, "missing required argument 'schedule' for action 'create'"),
    ({"action": "create", "name": "a b", "prompt": "p", "schedule": "@daily"}, "'name' must be"),
    ({"action": "create", "name": "a", "prompt": "p", "schedule": "@daily", "limit": 3},
     "'limit' is not used by action 'create'"),
    ({"action": "pause"}, "missing required argument 'job' for action 'pause'"),
    ({"action": "runs", "job": "ghost"}, "no cron job named 'ghost'"),
    ({"action": "explode"}, "'action' must be one of"),
    ({"action": "list", "frobnicate": 1}, "unknown argument 'frobnicate'"),
    ({"action": "create", "name": "a", "prompt": "p", "schedule": "@daily", "repeat": -2},
     "'repeat' must be at least 0"),
    ({"action": "update", "job": "ghost", "prompt": "p"}, "no cron job named 'ghost'"),
])
def test_tool_errors_name_the_field(hermes_home: Path, args: dict[str, Any], message: str) -> None:
    result = dispatch(**args)
    assert message in result.get("error", ""), result


@dataclass
class CronSession:
    task_id: str = "cron-session"
    surface: Surface = Surface.CRON
    sink: Any = field(default_factory=NullSink)
    state: dict[str, Any] = field(default_factory=dict)
    settings: Any = None


def test_tool_refuses_inside_a_cron_job(hermes_home: Path) -> None:
    result = json.loads(registry.dispatch("cronjob_manage", {"action": "list"}, session=CronSession()))
    assert result == {"error": "cronjob_manage is not available inside a scheduled job"}


def test_tool_run_with_the_real_agent(hermes_home: Path, model_server: Any) -> None:
    server = model_server([text("real answer from the model")])
    write_config(hermes_home, server.url)
    assert dispatch(action="create", name="real", prompt="Answer.", schedule="@weekly")["success"]
    ran = dispatch(action="run", job="real")
    assert ran["success"], ran
    assert ran["run"]["output"] == "real answer from the model"
    [session] = cron_sessions(hermes_home)
    assert session.id == ran["run"]["session_id"] and session.surface == "cron"


# -- fuzz: malformed argument payloads never escape dispatch -----------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
_NAMES = st.sampled_from(["fz", "fz-1", "fz.2", "", "bad name", "../up", "x" * 70, "ghost"])
_PLAUSIBLE: dict[str, st.SearchStrategy[Any]] = {
    "job": _NAMES,
    "name": _NAMES,
    "prompt": st.text(max_size=40),
    "schedule": st.sampled_from(["@daily", "every 5m", "61 * * * *", "2020-01-01", "2099-01-01T00:00", "",
                                 "* * * * *", "*/0 * * * *", "every 0m", "@nope", "1 2 3"]) | st.text(max_size=20),
    "skills": st.lists(_NAMES, max_size=3),
    "toolsets": st.lists(st.sampled_from(["web", "todo", "nope", "all", ""]), max_size=3),
    "repeat": st.integers(0, 5) | st.integers(-3, 10**7),
    "grace_seconds": st.integers(0, 7200) | st.integers(-10, 10**9),
    "limit": st.integers(1, 100) | st.integers(-5, 200),
    "full": st.booleans(),
}
# well-typed arguments with wrong, missing or conflicting values: these reach the handler itself
_TYPED = st.sampled_from(list(cron_tool.ACTIONS)).flatmap(lambda action: st.fixed_dictionaries(
    {"action": st.just(action)}, optional={k: _PLAUSIBLE[k] for k in sorted(cron_tool.ALLOWED[action])}))
_CREATE = st.fixed_dictionaries(
    {"action": st.just("create"), "name": _NAMES, "prompt": st.text(min_size=1, max_size=40),
     "schedule": _PLAUSIBLE["schedule"]},
    optional={k: _PLAUSIBLE[k] for k in ("skills", "toolsets", "repeat", "grace_seconds")})
# anything at all in any field
_MIXED = st.fixed_dictionaries(
    {"action": st.sampled_from(list(cron_tool.ACTIONS)) | _JSON},
    optional={**{k: v | _JSON for k, v in _PLAUSIBLE.items()}, "unexpected": _JSON},
)
PAYLOADS = st.one_of(_TYPED, _TYPED, _TYPED, _CREATE, _MIXED, _MIXED.map(json.dumps), _JSON, st.text(max_size=40),
                     st.binary(max_size=20))


def _snapshot(root: Path) -> dict[str, float]:
    """Every path under ``root`` with its modification time (empty when it does not exist)."""
    if not root.exists():
        return {}
    return {str(p): p.stat().st_mtime for p in [root, *root.rglob("*")]}


def _visible(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if not p.name.startswith(".")}


@pytest.fixture
def outside_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run from a temporary folder and check that the real ~/.hermes and the checkout are left alone."""
    repo = Path(__file__).resolve().parents[3]
    real_home = Path.home() / ".hermes"
    monkeypatch.chdir(tmp_path)
    before = (_snapshot(real_home), _visible(repo))
    yield
    assert (_snapshot(real_home), _visible(repo)) == before


@pytest.fixture
def seeded(hermes_home: Path) -> None:
    """Jobs the fuzzed calls can find by name, so update/pause/run/remove get past the lookup."""
    for name in ("fz", "fz-1"):
        dispatch(action="create", name=name, prompt="p", schedule="@daily")


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=PAYLOADS)
def test_fuzz_cronjob_manage(outside_unchanged: None, seeded: None, fake_runner: ToolRunner, payload: Any) -> None:
    if isinstance(payload, dict) and payload.get("action") == "remove" and payload.get("job") == "fz":
        payload = {**payload, "action": "pause"}  # keep one seeded job alive for the later examples
    result = registry.dispatch("cronjob_manage", payload)
    data = json.loads(result)
    assert isinstance(data, dict)
    if "error" in data:
        assert isinstance(data["error"], str) and data["error"]
        assert "failed: " not in data["error"], data  # argument errors, never a crash inside the handler


def test_undecodable_bytes_payload(hermes_home: Path) -> None:
    data = json.loads(registry.dispatch("cronjob_manage", b"\x80"))
    assert "failed: " not in data["error"]
    assert "not valid UTF-8" in data["error"]
