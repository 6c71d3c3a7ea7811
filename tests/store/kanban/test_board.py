"""The kanban board on real SQLite files: links, claims, runs, heartbeats, attachments, workspaces."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hermes.store.kanban.board import Board, TaskNotFound
from hermes.store.kanban.states import KanbanError
from hermes.store.kanban.workspace import workspace_for


@pytest.fixture
def board(tmp_path: Path) -> Board:
    return Board(tmp_path / "kanban.db", files=tmp_path / "files", attachment_max_bytes=1000)


def _snapshot(board: Board) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(board.path)
    rows = [tuple(r) for table in ("tasks", "task_links", "task_events", "task_runs", "task_attachments")
            for r in conn.execute(f"SELECT * FROM {table} ORDER BY 1")]
    conn.close()
    return rows


def test_children_wait_for_parents_and_are_promoted(board: Board) -> None:
    a, _ = board.create("a", created_by="me", assignee="dev")
    b, _ = board.create("b", created_by="me", assignee="dev")
    c, _ = board.create("c", created_by="me", assignee="dev", parents=[a.id, b.id])
    assert (a.status, c.status) == ("ready", "todo")
    board.move(a.id, "archived", actor="person", author="me")
    assert board.get(c.id).status == "todo"
    claimed = board.claim("d1", task_id=b.id)
    assert claimed is not None
    board.finish(b.id, "done", actor="worker", author="dev", summary="did b")
    assert board.get(c.id).status == "ready"
    assert [e.kind for e in board.events(c.id)] == ["created", "promote"]


def test_linking_an_open_parent_sends_a_ready_task_back_to_todo(board: Board) -> None:
    a, _ = board.create("a", created_by="me")
    b, _ = board.create("b", created_by="me")
    board.link(a.id, b.id, actor="orchestrator", author="lead")
    assert board.get(b.id).status == "todo"
    assert board.parents(b.id) == [a.id] and board.children(a.id) == [b.id]


def test_cycles_and_self_links_are_refused_and_change_nothing(board: Board) -> None:
    a, _ = board.create("a", created_by="me")
    b, _ = board.create("b", created_by="me", parents=[a.id])
    c, _ = board.create("c", created_by="me", parents=[b.id])
    before = _snapshot(board)
    with pytest.raises(KanbanError, match="cycle"):
        board.link(c.id, a.id, actor="person", author="me")
    with pytest.raises(KanbanError, match="own parent"):
        board.link(a.id, a.id, actor="person", author="me")
    with pytest.raises(TaskNotFound, match="unknown task id 't_nothere'"):
        board.link("t_nothere", a.id, actor="person", author="me")
    assert _snapshot(board) == before


def test_idempotency_key_returns_the_first_task(board: Board) -> None:
    first, created = board.create("once", created_by="me", idempotency_key="k1")
    again, created_again = board.create("twice", created_by="me", idempotency_key="k1")
    assert (created, created_again) == (True, False)
    assert again.id == first.id and again.title == "once"
    assert len(board.tasks()) == 1


def test_events_are_append_only(board: Board) -> None:
    task, _ = board.create("t", created_by="me")
    conn = sqlite3.connect(board.path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE task_events SET kind = 'x' WHERE task_id = ?", (task.id,))
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM task_events")
    conn.close()


def test_claim_takes_highest_priority_then_oldest_and_records_runs(board: Board) -> None:
    low, _ = board.create("low", created_by="me", assignee="dev", priority=1)
    high, _ = board.create("high", created_by="me", assignee="dev", priority=5)
    board.create("nobody", created_by="me", priority=9)  # unassigned: never claimed
    first = board.claim("d1")
    second = board.claim("d1")
    assert first is not None and second is not None
    assert [first[0].id, second[0].id] == [high.id, low.id]
    assert board.claim("d1") is None
    board.heartbeat(high.id, author="dev", note="half way", now=first[1].started_at + 5)
    done = board.finish(high.id, "done", actor="worker", author="dev", summary="shipped", cost_usd=0.25)
    [run] = board.runs(high.id)
    assert (done.status, run.outcome, run.summary, run.cost_usd, run.attempt) == ("done", "completed", "shipped",
                                                                                  0.25, 1)
    assert run.heartbeat_at == first[1].started_at + 5 and run.ended_at is not None
    assert "heartbeat" in [e.kind for e in board.events(high.id)]


def test_claim_limits_count_every_dispatchers_running_tasks(board: Board) -> None:
    for title, who in (("a1", "ana"), ("a2", "ana"), ("b1", "bo"), ("b2", "bo")):
        board.create(title, created_by="me", assignee=who)
    first = board.claim("d1", max_per_assignee=1)
    assert first is not None and first[0].title == "a1"
    second = board.claim("d2", max_per_assignee=1)  # another dispatcher: ana is at her limit
    assert second is not None and second[0].title == "b1"
    assert board.claim("d1", max_per_assignee=1) is None
    assert board.claim("d1", max_running=2) is None
    third = board.claim("d1", max_running=3)
    assert third is not None and third[0].title == "a2"


def test_stale_and_failed_runs_retry_then_block(board: Board) -> None:
    task, _ = board.create("flaky", created_by="me", assignee="dev")
    for attempt in (1, 2):
        claimed = board.claim("d1")
        assert claimed is not None and claimed[1].attempt == attempt
        stale = board.stale_runs(60, now=claimed[1].started_at + 61)
        assert [t.id for t in stale] == [task.id]
        assert board.stale_runs(60, now=claimed[1].started_at + 59) == []
        after = board.fail_run(task.id, claimed[1].id, outcome="stale", error="no heartbeat", claimer="d1",
                               max_failures=2)
        assert after is not None
    assert (after.status, after.block_kind) == ("blocked", "failed")
    assert [r.outcome for r in board.runs(task.id)] == ["stale", "stale"]
    # an old run's failure report after the task moved on changes nothing
    assert board.fail_run(task.id, 1, outcome="failed", error="late", claimer="d1", max_failures=2) is None


def test_failed_runs_back_off_exponentially(board: Board) -> None:
    task, _ = board.create("flaky", created_by="me", assignee="dev")
    waits = []
    now = 1_000.0
    for _ in range(3):
        claimed = board.claim("d1", now=now)
        assert claimed is not None
        after = board.fail_run(task.id, claimed[1].id, outcome="failed", error="boom", claimer="d1",
                               max_failures=5, backoff_s=10, max_backoff_s=30, now=now)
        assert after is not None and after.retry_at is not None
        waits.append(after.retry_at - now)
        assert board.claim("d1", now=after.retry_at - 0.5) is None
        now = after.retry_at
    assert waits == [10, 20, 30]  # doubling, capped at max_backoff_s
    board.block(task.id, "look at it", kind="needs_input", actor="person", author="me")
    assert board.move(task.id, "ready", actor="person", author="me").retry_at is None  # a person says now


def test_attachments_are_stored_and_capped(board: Board) -> None:
    task, _ = board.create("t", created_by="me")
    att = board.attach(task.id, "../notes.txt", b"hello", uploaded_by="dev", actor="worker", content_type="text/plain")
    assert att.filename == "notes.txt" and Path(att.stored_path).read_bytes() == b"hello"
    assert Path(att.stored_path).parent == board.files / "attachments" / task.id
    before = _snapshot(board)
    with pytest.raises(KanbanError, match="over the cap of 1000 bytes"):
        board.attach(task.id, "big.bin", b"x" * 1001, uploaded_by="dev", actor="worker")
    with pytest.raises(TaskNotFound):
        board.attach("t_missing0", "a.txt", b"x", uploaded_by="dev", actor="worker")
    assert _snapshot(board) == before
    assert [a.filename for a in board.attachments(task.id)] == ["notes.txt"]


def test_bad_input_is_refused(board: Board) -> None:
    with pytest.raises(KanbanError, match="title"):
        board.create("  ", created_by="me")
    with pytest.raises(KanbanError, match="absolute workspace_path"):
        board.create("t", created_by="me", workspace_kind="dir")
    with pytest.raises(KanbanError, match="workspace_kind must be one of"):
        board.create("t", created_by="me", workspace_kind="cloud")
    with pytest.raises(TaskNotFound):
        board.create("t", created_by="me", parents=["t_00000000"])
    task, _ = board.create("t", created_by="me")
    with pytest.raises(KanbanError, match="block kind must be one of"):
        board.block(task.id, "why", kind="bored", actor="person", author="me")
    with pytest.raises(KanbanError, match="not running"):
        board.heartbeat(task.id, author="dev")
    assert len(board.tasks()) == 1


def test_workspaces(board: Board, tmp_path: Path) -> None:
    scratch, _ = board.create("s", created_by="me")
    assert workspace_for(scratch, board.files) == board.files / "workspaces" / scratch.id
    assert (board.files / "workspaces" / scratch.id).is_dir()
    given = tmp_path / "given"
    given.mkdir()
    in_dir, _ = board.create("d", created_by="me", workspace_kind="dir", workspace_path=str(given))
    assert workspace_for(in_dir, board.files) == given
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q",
                    "--allow-empty", "-m", "init"], check=True)
    wt, _ = board.create("w", created_by="me", workspace_kind="worktree", workspace_path=str(repo))
    folder = workspace_for(wt, board.files)
    assert (folder / ".git").exists() and workspace_for(wt, board.files) == folder
    branches = subprocess.run(["git", "-C", str(repo), "branch", "--list", f"kanban/{wt.id}"], capture_output=True,
                              text=True, check=True).stdout
    assert f"kanban/{wt.id}" in branches
    not_repo, _ = board.create("n", created_by="me", workspace_kind="worktree", workspace_path=str(given))
    with pytest.raises(KanbanError, match="not a git repository"):
        workspace_for(not_repo, board.files)


CLAIMER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from hermes.store.kanban.board import Board
    board = Board(Path(sys.argv[1]))
    name = sys.argv[2]
    while (got := board.claim(name)) is not None:
        board.finish(got[0].id, "done", actor="worker", author=name, summary=name)
""")


def test_two_processes_never_claim_the_same_task(board: Board, tmp_path: Path) -> None:
    for i in range(120):
        board.create(f"t{i}", created_by="me", assignee="dev", priority=i % 3)
    script = tmp_path / "claimer.py"
    script.write_text(CLAIMER)
    procs = [subprocess.Popen([sys.executable, str(script), str(board.path), f"d{n}"]) for n in (1, 2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    runs = board.runs()
    assert len(runs) == 120 and len({r.task_id for r in runs}) == 120
    assert all(t.status == "done" for t in board.tasks())
    assert {r.claimed_by for r in runs} <= {"d1", "d2"}
