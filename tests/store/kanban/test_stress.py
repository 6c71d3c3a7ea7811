"""A randomized multi-process stress test of the board: three processes create, link, claim, complete,
block and unblock at random on one board — a SQLite file, and a PostgreSQL database — and after every
step check the board's invariants on a consistent snapshot. Refusals (a cycle, a task another process
moved first) are expected; anything else, or a broken invariant, fails the test."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import hermes
from hermes.store.kanban.board import Board

SRC = str(Path(hermes.__file__).resolve().parents[1])

WORKER = textwrap.dedent('''
    import random, sqlite3, sys
    from pathlib import Path
    from hermes.store.kanban.board import Board
    from hermes.store.kanban.states import KanbanError, STATUSES

    where_, seed, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    QUERIES = ("SELECT id, status, current_run_id FROM tasks", "SELECT parent_id, child_id FROM task_links",
               "SELECT id, task_id, attempt, ended_at FROM task_runs ORDER BY id")
    if where_.startswith("postgresql://"):
        import psycopg
        from hermes.store.kanban.pg import PgBoard
        board = PgBoard(where_, files=Path(sys.argv[4]))
        snap = psycopg.connect(where_)

        def snapshot():
            with snap.transaction():
                snap.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                return [[tuple(r) for r in snap.execute(q).fetchall()] for q in QUERIES]
    else:
        board = Board(Path(where_))
        snap = sqlite3.connect(where_, timeout=30, isolation_level=None)

        def snapshot():
            snap.execute("BEGIN")
            try:
                return [snap.execute(q).fetchall() for q in QUERIES]
            finally:
                snap.execute("COMMIT")
    me = f"p{seed}"

    def check(step, op):
        task_rows, links, runs = snapshot()
        tasks = {r[0]: r for r in task_rows}
        where = f"step {step} ({op})"
        assert all(t[1] in STATUSES for t in tasks.values()), where
        open_runs = {}
        for run_id, task_id, attempt, ended in runs:
            if ended is None:
                assert task_id not in open_runs, f"{where}: two open runs for {task_id}"
                open_runs[task_id] = run_id
        for task_id, status, current in tasks.values():
            if status == "running":
                assert current is not None and open_runs.get(task_id) == current, f"{where}: {task_id} run"
            else:
                assert task_id not in open_runs and current is None, f"{where}: {task_id} is {status} with a run"
            attempts = [r[2] for r in runs if r[1] == task_id]
            assert attempts == list(range(1, len(attempts) + 1)), f"{where}: attempts of {task_id}"
        parents = {}
        for p, c in links:
            parents.setdefault(c, set()).add(p)
        for task_id, status, _ in tasks.values():
            if status in ("ready", "running"):
                open_parents = [p for p in parents.get(task_id, ()) if tasks[p][1] not in ("done", "archived")]
                assert not open_parents or status == "running", f"{where}: ready {task_id} has open parents"
        # no cycles: repeatedly remove tasks without parents
        left = {t: set(parents.get(t, ())) for t in tasks}
        while left:
            roots = [t for t, ps in left.items() if not ps & left.keys()]
            assert roots, f"{where}: a cycle among {sorted(left)}"
            for t in roots:
                del left[t]

    def some(status=None):
        ids = [t.id for t in board.tasks(status=status, include_archived=True, limit=1000)]
        return rng.choice(ids) if ids else None

    for step in range(steps):
        op = rng.choice(["create", "create", "link", "claim", "complete", "block", "unblock", "archive"])
        try:
            if op == "create":
                parents = [p for p in {some(), some()} if p] if rng.random() < 0.4 else []
                board.create(f"{me}-{step}", created_by=me, assignee="dev", parents=parents,
                             priority=rng.randint(0, 3))
            elif op == "link":
                a, b = some(), some()
                if a and b:
                    board.link(a, b, actor="orchestrator", author=me)
            elif op == "claim":
                board.claim(me)
            elif op == "complete" and (t := some("running")):
                board.finish(t, rng.choice(["done", "review"]), actor="worker", author=me, summary="ok")
            elif op == "block" and (t := some("running")):
                board.block(t, "stuck", kind="transient", actor="worker", author=me)
            elif op == "unblock" and (t := some("blocked")):
                board.move(t, "ready", actor="orchestrator", author=me, expected="blocked")
            elif op == "archive" and rng.random() < 0.3 and (t := some()):
                board.move(t, "archived", actor="person", author=me)
        except KanbanError:
            pass
        check(step, op)
    print("ok", steps)
''')


def _stress(where: str, tmp_path: Path) -> None:
    script = tmp_path / "stress.py"
    script.write_text(WORKER)
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    procs = [subprocess.Popen([sys.executable, str(script), where, str(seed), "150", str(tmp_path)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for seed in (1, 2, 3)]
    results = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err[-3000:]
        assert out.strip() == "ok 150"


def test_random_operations_from_three_processes_keep_the_invariants(tmp_path: Path) -> None:
    path = tmp_path / "kanban.db"
    Board(path).close()
    _stress(str(path), tmp_path)
    with Board(path) as board:
        assert len(board.tasks(include_archived=True, limit=10_000)) > 50
        assert board.runs()  # claims happened


@pytest.mark.timeout(300)
def test_the_same_on_postgresql(postgres_server: Any, tmp_path: Path) -> None:
    from hermes.store.kanban.pg import PgBoard

    url = postgres_server.database()
    PgBoard(url, files=tmp_path).close()
    _stress(url, tmp_path)
    with PgBoard(url, files=tmp_path) as board:
        assert len(board.tasks(include_archived=True, limit=10_000)) > 50
        assert board.runs()
