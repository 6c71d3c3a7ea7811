"""``hermes kanban dispatch`` end to end: real worker subprocesses (``hermes chat -q`` on the kanban surface)
against the scripted model server, two dispatchers on one board, stale runs reclaimed, failures blocked."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import hermes
from fakes.model_server import Reply, call, text
from hermes.store.kanban.board import Board

SRC = str(Path(hermes.__file__).resolve().parents[1])
WORKER_TOOLS = {"kanban_show", "kanban_complete", "kanban_block", "kanban_heartbeat", "kanban_comment",
                "kanban_attach", "kanban_attach_url", "kanban_attachments", "kanban_request_review"}


def completing_worker(body: dict[str, Any]) -> Reply:
    """The model of a diligent worker: complete the task named in the prompt, then say so."""
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        return text("finished")
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    task_id = re.search(r"kanban task (t_[0-9a-f]{8})", prompt)
    assert task_id is not None
    return call("kanban_complete", {"summary": f"did {task_id.group(1)}", "cost_usd": 0.01})


def setup_home(home: Path, url: str, **kanban: object) -> None:
    keys = "".join(f"  {k}: {v}\n" for k, v in kanban.items())
    (home / "config.yaml").write_text(f"model:\n  base_url: {url}\n  name: test-model\n  max_retries: 0\n"
                                      + (f"kanban:\n{keys}" if keys else ""))


def dispatch(home: Path, *args: str, wait: bool = True) -> Any:
    env = {**os.environ, "HERMES_HOME": str(home), "PYTHONPATH": SRC, "OPENAI_API_KEY": "test"}
    for name in ("HERMES_KANBAN_TASK", "HERMES_KANBAN_DB", "OPENAI_BASE_URL", "HERMES_MODEL"):
        env.pop(name, None)
    command = [sys.executable, "-m", "hermes", "kanban", "dispatch", "--json", *args]
    if not wait:
        return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_dispatch_runs_each_ready_task_once_with_worker_tools_only(hermes_home: Path, model_server: Any) -> None:
    server = model_server(completing_worker)
    setup_home(hermes_home, server.url, max_parallel=2)
    with Board.open_default() as board:
        ids = [board.create(f"task {i}", created_by="me", assignee="dev", priority=i)[0].id for i in range(3)]
        unassigned, _ = board.create("nobody's", created_by="me")
    report = dispatch(hermes_home)
    assert sorted(report["finished"]) == sorted(ids) and report["failed"] == []
    with Board.open_default() as board:
        for task_id in ids:
            [run] = board.runs(task_id)
            assert (run.outcome, run.summary, run.cost_usd, run.profile) == ("completed", f"did {task_id}", 0.01,
                                                                             "dev")
            assert board.get(task_id).status == "done"
        assert board.get(unassigned.id).status == "ready" and board.runs(unassigned.id) == []
        assert (board.files / "workspaces" / ids[0]).is_dir()
    offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert {n for n in offered if n.startswith("kanban_")} == WORKER_TOOLS


def test_two_dispatcher_processes_never_run_a_task_twice(hermes_home: Path, model_server: Any) -> None:
    server = model_server(completing_worker)
    setup_home(hermes_home, server.url, max_parallel=2)
    # 4 tasks, 2 slots per dispatcher: both dispatchers' first claims race for the same ready tasks (a worker is
    # a whole hermes process, so more tasks only add minutes under load, not another race)
    with Board.open_default() as board:
        ids = {board.create(f"task {i}", created_by="me", assignee="dev")[0].id for i in range(4)}
    procs = [dispatch(hermes_home, wait=False) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    with Board.open_default() as board:
        runs = board.runs()
    assert sorted(r.task_id for r in runs) == sorted(ids)  # exactly one run per task
    assert all(r.outcome == "completed" for r in runs)


def test_a_worker_that_never_completes_fails_then_blocks(hermes_home: Path, model_server: Any) -> None:
    server = model_server(lambda body: text("I looked at it."))
    setup_home(hermes_home, server.url, max_failures=2, retry_backoff_seconds=0)
    with Board.open_default() as board:
        task, _ = board.create("lazy", created_by="me", assignee="dev")
    first = dispatch(hermes_home)
    assert first["failed"] == [task.id]
    with Board.open_default() as board:
        assert board.get(task.id).status == "ready"
    dispatch(hermes_home)
    with Board.open_default() as board:
        after = board.get(task.id)
        runs = board.runs(task.id)
    assert (after.status, after.block_kind) == ("blocked", "failed")
    assert [r.outcome for r in runs] == ["failed", "failed"]
    assert "exited (3) without kanban_complete" in (runs[0].error or "")
    assert len(server.requests) == 6  # each run: the task, then two nudges (kanban.nudges), then it gave up
    assert "is still open" in server.requests[1]["messages"][-1]["content"]


def test_a_worker_that_stops_early_is_nudged_and_then_completes(hermes_home: Path, model_server: Any) -> None:
    server = model_server([text("I had a look."), call("kanban_complete", {"summary": "after the nudge"}),
                           text("finished")])
    setup_home(hermes_home, server.url, heartbeat_every_seconds=0)
    with Board.open_default() as board:
        task, _ = board.create("needs a push", created_by="me", assignee="dev")
    assert dispatch(hermes_home)["finished"] == [task.id]
    with Board.open_default() as board:
        [run] = board.runs(task.id)
        events = board.events(task.id)
    # the worker's own activity kept its heartbeat fresh, without calling kanban_heartbeat
    beats = [e for e in events if e.kind == "heartbeat"]
    assert beats and all(e.author == "dev" and e.run_id == run.id for e in beats)
    assert run.heartbeat_at is not None and run.heartbeat_at > run.started_at
    assert (run.outcome, run.summary) == ("completed", "after the nudge")
    assert server.requests[1]["messages"][-1]["content"].startswith(f"Your kanban task {task.id} is still open")


def test_a_dead_dispatchers_stale_task_is_reclaimed_and_runs_again(hermes_home: Path, model_server: Any) -> None:
    server = model_server(completing_worker)
    setup_home(hermes_home, server.url, heartbeat_timeout_seconds=60, retry_backoff_seconds=0)
    with Board.open_default() as board:
        task, _ = board.create("orphan", created_by="me", assignee="dev")
        claimed = board.claim("gone:1")  # a dispatcher that then died with its worker
        assert claimed is not None
        board.heartbeat(task.id, author="dev", now=time.time() - 120)  # its last sign of life, long ago
    report = dispatch(hermes_home)
    assert report["reclaimed"] == [task.id] and report["finished"] == [task.id]
    with Board.open_default() as board:
        runs = board.runs(task.id)
        assert board.get(task.id).status == "done"
    assert [(r.outcome, r.claimed_by == "gone:1") for r in runs] == [("stale", True), ("completed", False)]


class Gate:
    """A model that holds the worker's first request until :meth:`open` (a worker stuck mid-task)."""

    def __init__(self) -> None:
        import threading

        self.opened = threading.Event()
        self.waiting = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Reply:
        if not self.opened.is_set():
            self.waiting.set()
            self.opened.wait(timeout=120)
        return completing_worker(body)

    def open(self) -> None:
        self.opened.set()


def wait_for_pid(task_id: str, gate: Gate) -> int:
    assert gate.waiting.wait(timeout=120), "the worker never asked the model"
    with Board.open_default() as board:
        [run] = [r for r in board.runs(task_id) if r.ended_at is None]
        assert run.pid is not None
        return run.pid


def test_a_killed_worker_fails_its_run_and_the_task_runs_again_once(hermes_home: Path, model_server: Any) -> None:
    import signal

    gate = Gate()
    server = model_server(gate)
    setup_home(hermes_home, server.url, retry_backoff_seconds=0)
    with Board.open_default() as board:
        task, _ = board.create("fragile", created_by="me", assignee="dev")
    first = dispatch(hermes_home, wait=False)
    os.kill(wait_for_pid(task.id, gate), signal.SIGKILL)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert json.loads(out)["failed"] == [task.id]
    gate.open()
    second = dispatch(hermes_home)
    assert second["finished"] == [task.id], (second, (hermes_home / "kanban" / "logs" / f"{task.id}.log").read_text())
    with Board.open_default() as board:
        runs = board.runs(task.id)
        assert board.get(task.id).status == "done"
    assert [r.outcome for r in runs] == ["failed", "completed"]
    assert "exited (-9)" in (runs[0].error or "")


def test_archiving_a_running_task_stops_its_worker(hermes_home: Path, model_server: Any) -> None:
    gate = Gate()
    server = model_server(gate)
    setup_home(hermes_home, server.url)
    with Board.open_default() as board:
        task, _ = board.create("cancelled", created_by="me", assignee="dev")
    proc = dispatch(hermes_home, wait=False)
    pid = wait_for_pid(task.id, gate)
    with Board.open_default() as board:
        board.move(task.id, "archived", actor="person", author="me")
    out, err = proc.communicate(timeout=120)
    gate.open()
    assert proc.returncode == 0, err
    assert json.loads(out)["reclaimed"] == [task.id]
    with Board.open_default() as board:
        [run] = board.runs(task.id)
        assert (board.get(task.id).status, run.outcome) == ("archived", "archived")
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()


def test_reassigning_a_running_task_stops_its_worker_and_frees_the_task(hermes_home: Path,
                                                                        model_server: Any) -> None:
    gate = Gate()
    server = model_server(gate)
    setup_home(hermes_home, server.url)
    with Board.open_default() as board:
        task, _ = board.create("moved", created_by="me", assignee="dev")
    proc = dispatch(hermes_home, wait=False)
    wait_for_pid(task.id, gate)
    with Board.open_default() as board:
        board.assign(task.id, "ops", actor="person", author="me")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert json.loads(out)["reclaimed"] == [task.id]
    with Board.open_default() as board:
        [run] = board.runs(task.id)
        after = board.get(task.id)
    assert (after.status, after.assignee, after.failures) == ("ready", "ops", 0)
    assert (run.outcome, run.error) == ("reclaimed", "reassigned to ops")
    gate.open()


def _wait_done(task_id: str, seconds: float = 90) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with Board.open_default() as board:
            if board.get(task_id).status == "done":
                return True
        time.sleep(0.1)
    return False


def test_a_watching_dispatcher_wakes_when_a_task_becomes_ready(hermes_home: Path, model_server: Any) -> None:
    import signal

    server = model_server(completing_worker)
    setup_home(hermes_home, server.url)
    with Board.open_default() as board:
        first, _ = board.create("first", created_by="me", assignee="dev")
    watcher = dispatch(hermes_home, "--watch", "--interval", "600", wait=False)
    try:
        assert _wait_done(first.id)
        # the dispatcher is now idle for up to 600 s; only the board's wake-up can start the next task soon
        with Board.open_default() as board:
            second, _ = board.create("second", created_by="me", assignee="dev")
        assert _wait_done(second.id)
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.communicate(timeout=60)
    assert watcher.returncode == 0
