"""Benchmark: kanban claims per second on one SQLite board with 1, 2 and 4 claiming processes.

Each process claims the best ready task and completes it at once, until none is left (what a
dispatcher's claim costs, without the workers). Prints claims per second for each process count, the
ratio to the single-process run (same machine, same run) and checks that every task ran exactly once.

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = None
        for processes in (1, 2, 4):
            rate = run(processes, args.tasks, Path(tmp))
            base = base or rate
            print(f"SQLite, {processes} claiming process(es): {rate:,.0f} claims/s (x{rate / base:.2f} of 1), "
                  f"{args.tasks} tasks each run exactly once")


if __name__ == "__main__":
    main()
