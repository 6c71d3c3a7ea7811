"""Benchmark: kanban claims per second on one SQLite board with 1, 2 and 4 claiming processes, and the
time from a task becoming ready to its worker starting under a watching dispatcher.

Each process claims the best ready task and completes it at once, until none is left (what a
dispatcher's claim costs, without the workers). Prints claims per second for each process count, the
ratio to the single-process run (same machine, same run) and checks that every task ran exactly once.

Latency: a :class:`~hermes.agent.kanban.Dispatcher` watches the board (``--interval`` 600 s, so only the
wake-up can start a pass) with a tiny worker program that completes its task; tasks are created one
after another and the time from ``created_at`` (ready at once) to the run's start is reported (p50, max).

Run: ``.venv/bin/python benchmarks/bench_kanban.py [--tasks N]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from hermes.store.kanban.board import Board

CLAIMER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from hermes.store.kanban.board import Board
    board = Board(Path(sys.argv[1]))
    sys.stdin.readline()  # start together
    while (got := board.claim(sys.argv[2])) is not None:
        board.finish(got[0].id, "done", actor="worker", author="bench", summary="ok")
""")


def run(processes: int, tasks: int, folder: Path) -> float:
    path = folder / f"board-{processes}.db"
    with Board(path) as board:
        for i in range(tasks):
            board.create(f"task {i}", created_by="bench", assignee="dev", priority=i % 5)
    script = folder / "claimer.py"
    script.write_text(CLAIMER)
    procs = [subprocess.Popen([sys.executable, str(script), str(path), f"d{n}"], stdin=subprocess.PIPE, text=True)
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
    with Board(path) as board:
        runs = board.runs()
    if len(runs) != tasks or len({r.task_id for r in runs}) != tasks:
        raise SystemExit(f"{processes} processes: {len(runs)} runs for {tasks} tasks")
    return tasks / elapsed


WORKER = ("import os; from pathlib import Path; from hermes.store.kanban.board import Board; "
          "Board(Path(os.environ['HERMES_KANBAN_DB'])).finish(os.environ['HERMES_KANBAN_TASK'], 'done', "
          "actor='worker', author='bench', summary='ok')")


def latency(folder: Path, count: int) -> list[float]:
    import os
    import statistics
    import threading

    import hermes
    from hermes.agent.kanban import Dispatcher
    from hermes.store.kanban.config import KanbanConfig

    # the workers run in their own folders: give them this hermes by an absolute path
    os.environ["PYTHONPATH"] = str(Path(hermes.__file__).resolve().parents[1])
    board = Board(folder / "latency.db")
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
    print(f"ready → worker started (watching dispatcher, SQLite wake file): p50 "
          f"{statistics.median(waits) * 1000:.0f} ms, max {max(waits) * 1000:.0f} ms over {count} tasks")
    return waits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--latency-tasks", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = None
        for processes in (1, 2, 4):
            rate = run(processes, args.tasks, Path(tmp))
            base = base or rate
            print(f"SQLite, {processes} claiming process(es): {rate:,.0f} claims/s (x{rate / base:.2f} of 1), "
                  f"{args.tasks} tasks each run exactly once")
        latency(Path(tmp), args.latency_tasks)


if __name__ == "__main__":
    main()
