"""Core speed figures: CLI start-up CPU (``--help``, ``--version``, ``tools list``), building every tool
definition, dispatch overhead.

Each figure is printed with a ratio against a reference measured in the same run:
start-up against a bare ``python -c pass``; dispatch against calling the handler directly.
When ``UPSTREAM_VENV`` points at a virtual environment with the upstream ``hermes-agent`` package,
its ``hermes --help`` and full tool-definition build are measured side by side.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = int(os.environ.get("BENCH_RUNS", "15"))


def child_cpu(cmd: list[str], env: dict[str, str]) -> float:
    """CPU seconds (user + system) spent by one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(cmd: list[str], env: dict[str, str], runs: int = RUNS) -> float:
    child_cpu(cmd, env)  # warm the file cache
    return statistics.median(child_cpu(cmd, env) for _ in range(runs))


BUILD_SNIPPET = """
import time, json
t0 = time.process_time(); w0 = time.perf_counter()
from hermes.tools.registry import registry
from hermes.tools.discovery import discover_builtin_tools, discover_plugins
from hermes.config.paths import HermesPaths
discover_builtin_tools(registry)
discover_plugins(registry, HermesPaths.current().plugins)
defs = registry.definitions(registry.names())
print(json.dumps({"cpu": time.process_time() - t0, "wall": time.perf_counter() - w0,
                  "tools": len(registry.names()), "definitions": len(defs)}))
"""

UPSTREAM_BUILD_SNIPPET = """
import time, json
t0 = time.process_time(); w0 = time.perf_counter()
from model_tools import get_tool_definitions
defs = get_tool_definitions(quiet_mode=True)
print(json.dumps({"cpu": time.process_time() - t0, "wall": time.perf_counter() - w0, "definitions": len(defs)}))
"""


def build_figures(python: str, snippet: str, env: dict[str, str], runs: int = 5) -> dict[str, float]:
    subprocess.run([python, "-c", snippet], env=env, capture_output=True, check=False)  # warm: bytecode cache
    results = []
    for _ in range(runs):
        out = subprocess.run([python, "-c", snippet], env=env, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            return {"error": 1.0}
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


def dispatch_overhead(calls: int = 20000) -> tuple[float, float]:
    """Median per-call seconds of registry.dispatch and of calling the handler directly."""
    from hermes.tools.registry import ToolRegistry

    reg = ToolRegistry()
    schema = {"name": "echo", "description": "echo", "parameters": {
        "type": "object", "properties": {"text": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["text"]}}

    def handler(args: dict[str, object], **kw: object) -> str:
        return '{"ok": true}'

    reg.register(name="echo", toolset="bench", schema=schema, handler=handler)
    raw = '{"text": "hello", "n": 3}'

    def per_call(fn: object, batches: int = 20) -> float:
        samples = []
        for _ in range(batches):
            start = time.perf_counter()
            for _ in range(calls // batches):
                fn()  # type: ignore[operator]
            samples.append((time.perf_counter() - start) / (calls // batches))
        return statistics.median(samples)

    direct = per_call(lambda: handler(json.loads(raw), task_id="t"))
    via = per_call(lambda: reg.dispatch("echo", raw, task_id="t"))
    return via, direct


def main() -> None:
    home = tempfile.mkdtemp(prefix="hermes-bench-")
    env = dict(os.environ, HERMES_HOME=home)
    # measure an installed program as users run it: with its bytecode cache (some sandboxes disable it)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    py = sys.executable
    hermes = str(Path(py).parent / "hermes")
    base = median_cpu([py, "-c", "pass"], env)
    print(f"reference: python -c pass           {base * 1000:7.1f} ms CPU")
    for label, cmd in (("hermes --help", [hermes, "--help"]), ("hermes --version", [hermes, "--version"]),
                       ("hermes tools list", [hermes, "tools", "list"])):
        cpu = median_cpu(cmd, env)
        print(f"{label:32} {cpu * 1000:7.1f} ms CPU  ({cpu / base:.1f}x python -c pass; "
              f"{(cpu - base) * 1000:.1f} ms of our own)")
    build = build_figures(py, BUILD_SNIPPET, env)
    print(f"build every tool definition      {build['cpu'] * 1000:7.1f} ms CPU  "
          f"({int(build['tools'])} tools registered, {int(build['definitions'])} available offline)")
    via, direct = dispatch_overhead()
    print(f"dispatch per call                {via * 1e6:7.1f} µs       "
          f"(handler alone {direct * 1e6:.1f} µs; overhead {(via - direct) * 1e6:.1f} µs)")

    upstream = os.environ.get("UPSTREAM_VENV")
    if upstream:
        up_py = str(Path(upstream) / "bin" / "python")
        up_hermes = str(Path(upstream) / "bin" / "hermes")
        up_env = dict(env, HERMES_HOME=tempfile.mkdtemp(prefix="upstream-bench-"))
        up_help = median_cpu([up_hermes, "--help"], up_env, runs=5)
        ours = median_cpu([hermes, "--help"], env)
        print(f"upstream hermes --help           {up_help * 1000:7.1f} ms CPU  (ours is {up_help / ours:.1f}x faster)")
        up_build = build_figures(up_py, UPSTREAM_BUILD_SNIPPET, up_env, runs=3)
        if "error" in up_build:
            print("upstream tool-definition build   failed to run")
        else:
            print(f"upstream build tool definitions  {up_build['cpu'] * 1000:7.1f} ms CPU  "
                  f"({int(up_build['definitions'])} definitions; ours is {up_build['cpu'] / build['cpu']:.1f}x faster)")


if __name__ == "__main__":
    main()
