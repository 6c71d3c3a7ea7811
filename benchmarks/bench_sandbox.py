"""Benchmark: start-up overhead of the OS sandbox (``hermes.tools.sandbox``) per command.

Usage::

    .venv/bin/python benchmarks/bench_sandbox.py              # 200 runs each, interleaved
    .venv/bin/python benchmarks/bench_sandbox.py --runs 500

Starts ``true`` (and ``bash -c true``, what a terminal call starts) three ways, exactly as ``terminal``
does — plan the sandbox, start the command with stdout a pipe, read it to the end, wait for the exit
status — alternating them so load on the machine hits all alike:

* **outside**: no sandbox (``sandbox.mode: full-access``);
* **one-off**: a ``bwrap`` of its own per command (what every command got before the session sandbox);
* **session**: handed to the session's long-lived sandbox (:mod:`hermes.tools.sandbox_pool`), which forks
  it inside the namespaces it built once.

The default ``workspace-write`` plan is used for a workspace in a temp folder, with HERMES_HOME inside it
so the hiding rules apply. Prints p50/p90 of each, the overhead against outside (p50 difference) and
the ratio. The machine this runs on may be shared: compare the ratios and differences of one run, not
absolute times across runs. Tests never assert these timings.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hermes.tools import sandbox, sandbox_pool  # noqa: E402


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _run(policy: sandbox.Policy, command: list[str], workspace: Path, temp: Path, session: str | None) -> float:
    started = time.perf_counter()
    launch = sandbox.launch(policy, workdir=str(workspace), temp_dir=temp, workspaces=[str(workspace)],
                            session=session)
    proc = launch.start(list(command), cwd=str(workspace), env=os.environ, stdin=subprocess.DEVNULL,
                        stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    proc.stdout.read()
    proc.stdout.close()
    if proc.wait() != 0:
        raise SystemExit(f"{command} failed in the {session or 'one-off'} sandbox")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    found = sandbox.support()
    if not found.available:
        print(f"no sandbox here: {found.missing}")
        return 1
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as root:
        workspace = Path(root) / "ws"
        (workspace / ".hermes").mkdir(parents=True)
        (workspace / ".hermes" / ".env").write_text("X=1\n", encoding="utf-8")
        os.environ["HERMES_HOME"] = str(workspace / ".hermes")
        temp = Path(root) / "tmp"
        temp.mkdir()
        ways = (("outside", sandbox.Policy(mode="full-access"), None), ("one-off", sandbox.Policy(), None),
                ("session", sandbox.Policy(), "bench"))
        for label, command in (("true", ["true"]), ("bash -c true", ["bash", "-c", "true"])):
            times: dict[str, list[float]] = {name: [] for name, _, _ in ways}
            for _ in range(5):  # warm caches, start the session's sandbox
                for _name, policy, session in ways:
                    _run(policy, command, workspace, temp, session)
            for _ in range(args.runs):
                for name, policy, session in ways:
                    times[name].append(_run(policy, command, workspace, temp, session))
            base = _pct(times["outside"], 0.5)
            print(f"{label}:")
            for name, _, _ in ways:
                p50 = _pct(times[name], 0.5)
                print(f"  {name:<8} p50 {p50:6.2f} ms  p90 {_pct(times[name], 0.9):6.2f} ms"
                      + ("" if name == "outside" else f"  overhead p50 {p50 - base:5.2f} ms, ratio {p50 / base:4.1f}x"))
        sandbox_pool.drop("bench")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
