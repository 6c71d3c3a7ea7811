"""Benchmark: start-up overhead of the OS sandbox (``hermes.tools.sandbox``) per command.

Usage::

    .venv/bin/python benchmarks/bench_sandbox.py              # 200 runs each, interleaved
    .venv/bin/python benchmarks/bench_sandbox.py --runs 500

Runs ``true`` directly and ``true`` inside the sandbox exactly as ``terminal`` would start it (the
default ``workspace-write`` plan for a workspace in a temp folder, with HERMES_HOME inside it so the
hiding rules apply), alternating the two so load on the machine hits both alike. Prints p50 and p90
wall time of each, the difference (the overhead) in ms and the ratio. Also times ``bash -c true``
both ways, which is what a terminal call actually starts, and a bare ``bwrap`` (the same namespaces,
``/`` read-only, ``/dev`` and ``/proc``, none of the plan's mounts) to show what bubblewrap itself
costs. Tests never assert these timings.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hermes.tools import sandbox  # noqa: E402


def _time(argv: list[str], cwd: str) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    found = sandbox.support()
    if not found.available:
        print(f"no sandbox here: {found.missing}")
        return 1
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as root:
        workspace = Path(root) / "ws"
        (workspace / ".hermes").mkdir(parents=True)
        (workspace / ".hermes" / ".env").write_text("X=1\n", encoding="utf-8")
        os.environ["HERMES_HOME"] = str(workspace / ".hermes")
        temp = Path(root) / "tmp"
        temp.mkdir()
        for label, command in (("true", ["true"]), ("bash -c true", ["bash", "-c", "true"])):
            spaces = [str(workspace)]
            launch = sandbox.launch(sandbox.Policy(), workdir=str(workspace), temp_dir=temp, workspaces=spaces)
            wrapped = launch.argv(list(command))
            for _ in range(5):  # warm caches
                _time(command, str(workspace))
                _time(wrapped, str(workspace))
            outside: list[float] = []
            inside: list[float] = []
            plan_cost: list[float] = []
            floor: list[float] = []  # bwrap with only the namespaces, / read-only, /dev and /proc
            bare = [str(found.bwrap), *sandbox._NAMESPACES, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                    "--"]
            for _ in range(args.runs):
                outside.append(_time(command, str(workspace)))
                started = time.perf_counter()
                wrapped = sandbox.launch(sandbox.Policy(), workdir=str(workspace), temp_dir=temp,
                                         workspaces=spaces).argv(list(command))
                plan_cost.append(time.perf_counter() - started)
                inside.append(_time(wrapped, str(workspace)) + plan_cost[-1])
                floor.append(_time([*bare, *command], str(workspace)))
            p50_out, p50_in = _pct(outside, 0.5), _pct(inside, 0.5)
            print(f"{label:<14} outside p50 {p50_out:6.2f} ms  p90 {_pct(outside, 0.9):6.2f} ms | "
                  f"sandboxed p50 {p50_in:6.2f} ms  p90 {_pct(inside, 0.9):6.2f} ms | "
                  f"overhead p50 {p50_in - p50_out:5.2f} ms, ratio {p50_in / p50_out:4.1f}x "
                  f"(of which building the bwrap command line {statistics.median(plan_cost) * 1000:.2f} ms; "
                  f"bare bwrap p50 {_pct(floor, 0.5):.2f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
