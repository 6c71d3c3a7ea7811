"""Benchmark: kanban claims per second on one board — SQLite, and PostgreSQL (a throw-away cluster on
127.0.0.1, as the tests use) — with 1, 2 and 4 claiming processes, and the time from a task becoming
ready to its worker starting under a watching dispatcher (the SQLite wake file; PostgreSQL's NOTIFY).

Each process claims the best ready task and completes it at once, until none is left (what a
dispatcher's claim costs, without the workers). Prints claims per second for each process count, the
ratio to the single-process run (same machine, same run) and checks that every task ran exactly once.

Latency: a :class:`~hermes.agent.kanban.Dispatcher` watches the board (``--interval`` 600 s, so only the
wake-up can start a pass) with a tiny worker program that completes its task; tasks are created one
after another and the time from ``created_at`` (ready at once) to the run's start is reported (p50, max).

Run: ``.venv/bin/python benchmarks/bench_kanban.py [--tasks N] [--no-postgres]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from hermes.store.kanban.board import Board  # noqa: E402
from hermes.store.kanban.config import KanbanConfig  # noqa: E402

CLAIMER = textwrap.dedent("""
    import sys
    from hermes.store.kanban.config import KanbanConfig
    board = KanbanConfig().open_board()
    sys.stdin.readline()  # start together
    while (got := board.claim(sys.argv[1])) is not None:
        board.finish(got[0].id, "done", actor="worker", author="bench", summary="ok")
""")


def _where(folder: Path, name: str, url: str | None) -> dict[str, str]:
    """The variables that open a fresh board: a new SQLite file, or (with ``url``) that PostgreSQL database."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_KANBAN")}
    env["HERMES_HOME"] = str(folder / name)
    env["PYTHONPATH"] = str(ROOT / "src")
    if url:
        env["HERMES_KANBAN_DATABASE_URL"] = url
    else:
        env["HERMES_KANBAN_DB"] = str(folder / f"{name}.db")
    return env


def run(processes: int, tasks: int, folder: Path, url: str | None = None) -> float:
    env = _where(folder, f"board-{processes}", url)
    with KanbanConfig().open_board(env) as board:
        for i in range(tasks):
            board.create(f"task {i}", created_by="bench", assignee="dev", priority=i % 5)
    script = folder / "claimer.py"
    script.write_text(CLAIMER)
    procs = [subprocess.Popen([sys.executable, str(script), f"d{n}"], stdin=subprocess.PIPE, text=True, env=env)
             for n in range(processes)]
    time.sleep(0.5)  # let them import and open the board
    start = time.perf_counter()
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        if p.wait() != 0:
            raise SystemExit(f"a claimer failed with {p.returncode}")
    elapsed = time.perf_counter() - start
    with KanbanConfig().open_board(env) as board:
        runs = board.runs()
    if len(runs) != tasks or len({r.task_id for r in runs}) != tasks:
        raise SystemExit(f"{processes} processes: {len(runs)} runs for {tasks} tasks")
    return tasks / elapsed


WORKER = ("import os; from hermes.store.kanban.config import KanbanConfig; "
          "KanbanConfig().open_board().finish(os.environ['HERMES_KANBAN_TASK'], 'done', "
          "actor='worker', author='bench', summary='ok')")


def latency(folder: Path, count: int, url: str | None = None) -> list[float]:
    import statistics
    import threading

    import hermes
    from hermes.agent.kanban import Dispatcher
    from hermes.store.kanban.config import KanbanConfig

    # the workers run in their own folders: give them this hermes by an absolute path
    os.environ["PYTHONPATH"] = str(Path(hermes.__file__).resolve().parents[1])
    env = _where(folder, "latency", url)
    os.environ.update({k: v for k, v in env.items() if k.startswith("HERMES_")})  # the workers inherit it
    board: Board = KanbanConfig().open_board(env)
    dispatcher = Dispatcher(board, KanbanConfig(), command=[sys.executable, "-c", WORKER])
    stop = threading.Event()
    thread = threading.Thread(target=dispatcher.watch, args=(600.0,), kwargs={"should_stop": stop.is_set})
    thread.start()
    waits = []
    try:
        for i in range(count):
            task, _ = board.create(f"task {i}", created_by="bench", assignee="dev")
            deadline = time.monotonic() + 60
            while board.get(task.id).status != "done":
                if time.monotonic() > deadline:
                    raise SystemExit(f"task {task.id} was not done within 60 s: {board.runs(task.id)}")
                time.sleep(0.01)
            [run] = board.runs(task.id)
            waits.append(run.started_at - task.created_at)
    finally:
        stop.set()
        thread.join()
        board.close()
    for name in ("HERMES_KANBAN_DB", "HERMES_KANBAN_DATABASE_URL"):
        os.environ.pop(name, None)
    how = "PostgreSQL NOTIFY" if url else "SQLite wake file"
    print(f"ready → worker started (watching dispatcher, {how}): p50 "
          f"{statistics.median(waits) * 1000:.0f} ms, max {max(waits) * 1000:.0f} ms over {count} tasks")
    return waits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--latency-tasks", type=int, default=20)
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sqlite_one = None
        for processes in (1, 2, 4):
            rate = run(processes, args.tasks, Path(tmp) / "sqlite")
            sqlite_one = sqlite_one or rate
            print(f"SQLite, {processes} claiming process(es): {rate:,.0f} claims/s (x{rate / sqlite_one:.2f} of 1), "
                  f"{args.tasks} tasks each run exactly once")
        latency(Path(tmp) / "sqlite", args.latency_tasks)
        if args.no_postgres:
            return
        from fakes.pg_redis import PostgresServer

        server = PostgresServer()
        try:
            pg_one = None
            for processes in (1, 2, 4):
                rate = run(processes, args.tasks, Path(tmp) / "pg", server.database())
                pg_one = pg_one or rate
                print(f"PostgreSQL, {processes} claiming process(es): {rate:,.0f} claims/s (x{rate / pg_one:.2f} of 1,"
                      f" x{rate / sqlite_one:.2f} of SQLite with 1), {args.tasks} tasks each run exactly once")
            latency(Path(tmp) / "pg", args.latency_tasks, server.database())
        finally:
            server.stop()


if __name__ == "__main__":
    main()
