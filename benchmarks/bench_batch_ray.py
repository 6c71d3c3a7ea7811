"""Benchmark: batch throughput, one process vs a local Ray cluster with 2 and 4 workers (issue 21).

Usage::

    .venv/bin/python benchmarks/bench_batch_ray.py                   # 60 prompts, 0.2 s model latency
    .venv/bin/python benchmarks/bench_batch_ray.py --prompts 120 --latency 0.5

Every prompt is one call to the scripted model server of ``tests/fakes`` (on 127.0.0.1), which answers
after ``--latency`` seconds, standing in for a real model's time to answer. Runs: the single-process
runner with 1 worker (the reference) and with 4 threads, then ``hermes batch --ray``'s runner on a
local cluster (started by the run, 127.0.0.1 only) with 2 and 4 workers. For each: the wall time, the
start-up (until the first trajectory; for Ray that includes starting the cluster and its worker
processes), and the steady rate from the first trajectory to the last, as a ratio to the reference.
Tests never assert these timings.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from fakes.model_server import Reply, ScriptedModelServer  # noqa: E402
from hermes.agent.batch import BatchItem, BatchRunner  # noqa: E402
from hermes.agent.batch_progress import BatchProgress  # noqa: E402
from hermes.agent.batch_ray import RayBatchRunner  # noqa: E402
from hermes.config.settings import Settings  # noqa: E402
from hermes.tools.distributions import DISTRIBUTIONS  # noqa: E402


class Stamps(BatchProgress):
    """Progress that notes when each trajectory arrived."""

    def __init__(self, total: int) -> None:
        super().__init__(total, io.StringIO(), bar=False)
        self.times: list[float] = []

    def record(self, ok: bool, line: str) -> None:
        self.times.append(time.perf_counter())
        super().record(ok, line)


def measure(name: str, total: int, run: Callable[[Stamps], Any]) -> dict[str, Any]:
    stamps = Stamps(total)
    started = time.perf_counter()
    run(stamps)
    wall = time.perf_counter() - started
    first, last = stamps.times[0], stamps.times[-1]
    steady = (len(stamps.times) - 1) / (last - first) if last > first else float("nan")
    return {"name": name, "wall": wall, "startup": first - started, "steady": steady, "ok": stamps.ok}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=60)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the model takes per answer")
    args = parser.parse_args()

    server = ScriptedModelServer(lambda body: Reply(content="done", delay=args.latency)).start()
    home = Path(tempfile.mkdtemp(prefix="bench-batch-ray-"))
    (home / "config.yaml").write_text(f"model:\n  base_url: {server.url}\n  name: m\n  stream: false\n")
    os.environ["HERMES_HOME"] = str(home)
    settings = Settings.load()
    dist = DISTRIBUTIONS["minimal"]
    items = [BatchItem(f"p{i}", f"question {i}") for i in range(args.prompts)]
    results = []

    def single(workers: int) -> Callable[[Stamps], Any]:
        def run(stamps: Stamps) -> Any:
            runner = BatchRunner(settings, dist, seed=1, workers=workers,
                                 progress=lambda line: stamps.record(True, line))
            return runner.run(items, io.StringIO())
        return run

    def on_ray(workers: int) -> Callable[[Stamps], Any]:
        def run(stamps: Stamps) -> Any:
            runner = RayBatchRunner(settings, dist, seed=1, workers=workers)
            return runner.run(runner.plan(items), io.StringIO(), stamps)
        return run

    try:
        results.append(measure("1 process, 1 worker", args.prompts, single(1)))
        results.append(measure("1 process, 4 threads", args.prompts, single(4)))
        results.append(measure("Ray, 2 workers", args.prompts, on_ray(2)))
        results.append(measure("Ray, 4 workers", args.prompts, on_ray(4)))
    finally:
        server.stop()
    reference = results[0]["steady"]
    print(f"{args.prompts} prompts, model latency {args.latency:.2f} s, {os.cpu_count()} CPUs")
    print(f"{'run':22} {'wall s':>7} {'start-up s':>10} {'steady /s':>9} {'vs 1 process':>12}")
    for r in results:
        print(f"{r['name']:22} {r['wall']:7.1f} {r['startup']:10.1f} {r['steady']:9.2f} "
              f"{r['steady'] / reference:11.2f}x  ({r['ok']} ok)")


if __name__ == "__main__":
    main()
