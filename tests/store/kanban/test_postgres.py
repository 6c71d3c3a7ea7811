"""The kanban board on a real throw-away PostgreSQL (one cluster per test session, a database per test):
the state machine table row by row, claims that skip locked rows, limits shared by every claimer, two
processes claiming 1,000 tasks, two dispatcher processes with scripted workers, a dispatcher killed and
restarted, bad input, the NOTIFY wake-up and the URL's password kept out of errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

import hermes
from hermes.errors import ConfigError, StoreError
from hermes.store.kanban.config import KanbanConfig
from hermes.store.kanban.pg import PgBoard
from hermes.store.kanban.states import KanbanError, TransitionRefused
from store.kanban.test_states import EXPECTED, REFUSED, apply_move

SRC = str(Path(hermes.__file__).resolve().parents[1])


@pytest.fixture
def url(postgres_server: Any) -> str:
    return str(postgres_server.database())


@pytest.fixture
def board(url: str, tmp_path: Path) -> Iterator[PgBoard]:
    with PgBoard(url, files=tmp_path / "files", attachment_max_bytes=1000) as b:
        yield b


def _force(url: str, task_id: str, status: str) -> None:
    """Put a task in ``status`` directly (set-up only: the row under test starts from there)."""
    with psycopg.connect(url, autocommit=True) as conn:
        run_id = None
        if status == "running":
            row = conn.execute("INSERT INTO task_runs (task_id, attempt, claimed_by, started_at) VALUES (%s, 1, 'd', 0)"
                               " RETURNING id", (task_id,)).fetchone()
            run_id = row[0] if row else None
        conn.execute("UPDATE tasks SET status = %s, current_run_id = %s WHERE id = %s", (status, run_id, task_id))


def test_the_state_machine_table_row_by_row(board: PgBoard, url: str) -> None:
    for source, target, actor in sorted(r for r in EXPECTED if r[2] != "board"):
        task, _ = board.create("t", created_by="me", assignee="dev")
        _force(url, task.id, source)
        assert apply_move(board, task.id, target, actor) == target, (source, target, actor)
        last = board.events(task.id)[-1]
        assert (last.source, last.target, last.actor) == (source, target, actor)
    for source, target, actor in REFUSED:
        task, _ = board.create("t", created_by="me", assignee="dev")
        _force(url, task.id, source)
        before = len(board.events(task.id))
        with pytest.raises(TransitionRefused):
            if target in ("done", "review"):
                board.finish(task.id, target, actor=actor, author="x", summary="s")
            else:
                board.move(task.id, target, actor=actor, author="x")
        assert board.get(task.id).status == source and len(board.events(task.id)) == before


def test_events_are_append_only_and_bad_input_changes_nothing(board: PgBoard, url: str) -> None:
    parent, _ = board.create("parent", created_by="me", assignee="dev")
    child, _ = board.create("child", created_by="me", assignee="dev", parents=[parent.id])
    with psycopg.connect(url, autocommit=True) as conn, pytest.raises(psycopg.Error, match="append-only"):
        conn.execute("UPDATE task_events SET kind = 'x'")
    before = [len(board.events(t)) for t in (parent.id, child.id)]
    with pytest.raises(KanbanError, match="would make a cycle"):
        board.link(child.id, parent.id, actor="person", author="me")
    with pytest.raises(KanbanError, match="over the cap of 1000 bytes"):
        board.attach(child.id, "big.bin", b"x" * 1001, uploaded_by="me", actor="person")
    with pytest.raises(KanbanError, match="unknown task id 't_nope'"):
        board.comment("t_nope", "hi", author="me", actor="person")
    with pytest.raises(KanbanError, match="unknown task id"):
        board.create("orphan", created_by="me", parents=["t_nope"])
    assert [len(board.events(t)) for t in (parent.id, child.id)] == before
    assert board.parents(parent.id) == [] and board.attachments(child.id) == []
    assert len(board.tasks()) == 2
    again, created = board.create("x", created_by="me", idempotency_key="k1")
    same, created_again = board.create("y", created_by="me", idempotency_key="k1")
    assert (created, created_again, same.id) == (True, False, again.id)


def test_a_claim_skips_a_row_another_claimer_holds_and_limits_count_every_claimer(url: str, tmp_path: Path) -> None:
    with PgBoard(url, files=tmp_path) as one, PgBoard(url, files=tmp_path) as two:
        first, _ = one.create("first", created_by="me", assignee="dev", priority=9)
        second, _ = one.create("second", created_by="me", assignee="dev", priority=1)
        third, _ = one.create("third", created_by="me", assignee="ops")
        with psycopg.connect(url) as holder:  # another dispatcher in the middle of claiming the best task
            holder.execute("SELECT id FROM tasks WHERE id = %s FOR UPDATE", (first.id,))
            got = two.claim("d2")  # does not wait for the lock: takes the next task
            assert got is not None and got[0].id == second.id
        assert one.claim("d1", max_running=2) is not None  # first, now free
        assert two.claim("d2", max_running=2) is None  # the board has 2 running: the limit holds across claimers
        assert two.claim("d2", max_per_assignee=2) is not None  # ops has none running
        assert one.get(third.id).status == "running"


def test_a_task_becoming_ready_notifies_a_listening_board(url: str, tmp_path: Path) -> None:
    with PgBoard(url, files=tmp_path) as writer, PgBoard(url, files=tmp_path) as watcher:
        mark = watcher.wake_mark()
        writer.create("blocked first", created_by="me", triage=True)
        assert watcher.wake_mark() == mark  # triage is not ready
        writer.create("ready", created_by="me", assignee="dev")
        deadline = time.monotonic() + 10
        while watcher.wake_mark() == mark and time.monotonic() < deadline:
            time.sleep(0.01)
        assert watcher.wake_mark() > mark
        assert watcher.worker_env() == {}


def test_the_urls_password_never_shows(postgres_server: Any, tmp_path: Path) -> None:
    bad = f"postgresql://gw:s3cret-pw@127.0.0.1:{postgres_server.port}/no_such_db"
    with pytest.raises(StoreError) as caught:
        PgBoard(bad, files=tmp_path)
    assert "s3cret-pw" not in str(caught.value) and "gw:***@" in str(caught.value)
    with pytest.raises(ConfigError, match="postgresql://") as wrong:
        KanbanConfig.from_config({"kanban": {"database_url": "mysql://u:hunter2@h/db"}})
    assert "hunter2" not in str(wrong.value)


def test_open_board_prefers_the_file_then_the_variable_then_the_config(url: str, hermes_home: Path) -> None:
    cfg = KanbanConfig.from_config({"kanban": {"database_url": url}})
    with cfg.open_board({}) as board:
        assert isinstance(board, PgBoard) and board.files == hermes_home / "kanban"
    with KanbanConfig().open_board({"HERMES_KANBAN_DATABASE_URL": url}) as board:
        assert isinstance(board, PgBoard)
    with cfg.open_board({"HERMES_KANBAN_DB": str(hermes_home / "other.db")}) as board:
        assert not isinstance(board, PgBoard) and board.path == hermes_home / "other.db"


CLAIMER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from hermes.store.kanban.pg import PgBoard
    board = PgBoard(sys.argv[1], files=Path(sys.argv[3]))
    sys.stdin.readline()  # start together
    while (got := board.claim(sys.argv[2])) is not None:
        board.finish(got[0].id, "done", actor="worker", author=sys.argv[2], summary=sys.argv[2])
""")


def test_two_processes_claim_1000_tasks_each_exactly_once(board: PgBoard, url: str, tmp_path: Path) -> None:
    board.create("t0", created_by="me", assignee="dev")
    with psycopg.connect(url, autocommit=True) as conn:  # 999 more like it, in one statement
        conn.execute("INSERT INTO tasks (id, title, assignee, status, priority, created_by, created_at, updated_at)"
                     " SELECT 't_' || lpad(to_hex(n), 8, '0'), 't' || n, 'dev', 'ready', n % 5, 'me', n, n"
                     " FROM generate_series(1, 999) AS n")
    script = tmp_path / "claimer.py"
    script.write_text(CLAIMER)
    env = {**os.environ, "PYTHONPATH": SRC}
    procs = [subprocess.Popen([sys.executable, str(script), url, f"d{n}", str(tmp_path)], env=env,
                              stdin=subprocess.PIPE, text=True) for n in (1, 2)]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.close()
    assert [p.wait(timeout=240) for p in procs] == [0, 0]
    runs = board.runs()
    assert len(runs) == 1000 and len({r.task_id for r in runs}) == 1000
    assert all(r.outcome == "completed" for r in runs)
    assert {r.claimed_by for r in runs} == {"d1", "d2"}  # both really claimed
    assert {t.status for t in board.tasks(limit=2000)} == {"done"}


# a worker: completes its task at once, except one titled "slow", which sleeps (and never beats)
WORKER = textwrap.dedent("""
    import os, time
    from hermes.store.kanban.config import KanbanConfig
    board = KanbanConfig().open_board()
    task = board.get(os.environ["HERMES_KANBAN_TASK"])
    if task.title == "slow" and os.environ.get("SLOW_SLEEPS"):
        time.sleep(600)
    board.finish(task.id, "done", actor="worker", author="w", summary=os.environ["HERMES_KANBAN_RUN"])
""")
DISPATCHER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from hermes.agent.kanban import Dispatcher
    from hermes.store.kanban.config import KanbanConfig
    cfg = KanbanConfig(max_parallel=4, heartbeat_timeout_s=60.0, retry_backoff_s=0.0)
    board = cfg.open_board()
    dispatcher = Dispatcher(board, cfg, name=sys.argv[1], command=[sys.executable, sys.argv[2]])
    sys.stdin.readline()
    def idle():
        return not dispatcher.workers and not [t for t in board.tasks() if t.status in ("ready", "running")]
    dispatcher.watch(5.0, should_stop=idle, step_s=0.02)
""")


def _dispatchers(tmp_path: Path, url: str, home: Path, names: list[str], **extra: str) -> list[subprocess.Popen[str]]:
    (tmp_path / "worker.py").write_text(WORKER)
    (tmp_path / "dispatcher.py").write_text(DISPATCHER)
    env = {**os.environ, "PYTHONPATH": SRC, "HERMES_HOME": str(home), "HERMES_KANBAN_DATABASE_URL": url, **extra}
    env.pop("HERMES_KANBAN_DB", None)
    procs = [subprocess.Popen([sys.executable, str(tmp_path / "dispatcher.py"), name, str(tmp_path / "worker.py")],
                              env=env, stdin=subprocess.PIPE, text=True, start_new_session=True) for name in names]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.close()
    return procs


def test_two_dispatcher_processes_run_every_task_once(board: PgBoard, url: str, tmp_path: Path,
                                                      hermes_home: Path) -> None:
    ids = {board.create(f"t{i}", created_by="me", assignee="dev")[0].id for i in range(24)}
    procs = _dispatchers(tmp_path, url, hermes_home, ["east", "west"])
    assert [p.wait(timeout=240) for p in procs] == [0, 0]
    runs = board.runs()
    assert [(r.outcome, r.error) for r in runs if r.outcome != "completed"] == []
    assert sorted(r.task_id for r in runs) == sorted(ids)  # exactly one run per task
    assert {r.outcome for r in runs} == {"completed"} and {r.claimed_by for r in runs} == {"east", "west"}


def test_a_killed_dispatcher_is_replaced_without_losing_or_repeating_a_task(board: PgBoard, url: str,
                                                                            tmp_path: Path, hermes_home: Path) -> None:
    quick = [board.create(f"q{i}", created_by="me", assignee="dev")[0].id for i in range(5)]
    slow, _ = board.create("slow", created_by="me", assignee="dev", priority=9)
    [first] = _dispatchers(tmp_path, url, hermes_home, ["first"], SLOW_SLEEPS="1")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if all(board.get(t).status == "done" for t in quick) and board.get(slow.id).status == "running":
            [run] = board.runs(slow.id)
            if run.pid is not None:
                break
        time.sleep(0.05)
    else:
        raise AssertionError("the first dispatcher never got going")
    os.killpg(first.pid, signal.SIGKILL)  # the dispatcher and its worker, mid-task
    first.wait(timeout=30)
    board.heartbeat(slow.id, author="dev", now=time.time() - 120)  # its lease ran out long ago (timeout 60 s)
    [second] = _dispatchers(tmp_path, url, hermes_home, ["second"])
    assert second.wait(timeout=120) == 0
    assert [r.outcome for r in board.runs(slow.id)] == ["stale", "completed"]
    assert [(r.claimed_by, r.outcome) for r in board.runs(slow.id)][1] == ("second", "completed")
    for task_id in quick:
        assert [(r.claimed_by, r.outcome) for r in board.runs(task_id)] == [("first", "completed")]
    assert all(t.status == "done" for t in board.tasks())


def test_the_cli_works_on_the_postgresql_board(board: PgBoard, url: str, hermes_home: Path) -> None:
    import json

    (hermes_home / "config.yaml").write_text(f"kanban:\n  database_url: {url}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_KANBAN")}
    env.update(HERMES_HOME=str(hermes_home), PYTHONPATH=SRC)

    def hermes(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "hermes", "kanban", *args], env=env, capture_output=True,
                              text=True, timeout=120)

    made = hermes("create", "from the cli", "-a", "dev", "--notify", "telegram:42", "--json")
    assert made.returncode == 0, made.stderr
    task_id = json.loads(made.stdout)["task"]["id"]
    assert board.get(task_id).origin == "chat:telegram:42:"  # it is in PostgreSQL, not in a SQLite file
    assert not (hermes_home / "kanban.db").exists()
    shown = json.loads(hermes("board", "--json").stdout)
    assert [t["id"] for t in shown] == [task_id]
    (hermes_home / "config.yaml").write_text(
        f"kanban:\n  database_url: postgresql://gw:not-the-pw@127.0.0.1:{url.rsplit(':', 1)[1]}\n")
    wrong = hermes("board")
    assert wrong.returncode == 1 and "not-the-pw" not in wrong.stderr and "gw:***@" in wrong.stderr
