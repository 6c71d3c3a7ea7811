"""Benchmark: MCP servers as tools (``hermes.connectors.mcp``, ``hermes.tools.mcp``).

Usage::

    .venv/bin/python benchmarks/bench_mcp.py              # needs mcp and mcp-server-time (the test extra)
    .venv/bin/python benchmarks/bench_mcp.py --calls 500

1. Call overhead over stdio against the real ``mcp-server-time``: p50/p90 of one tool call through
   hermes (``ToolSession.dispatch`` → schema check → the manager's loop → the SDK → the server and back
   → result conversion and budget), against the reference: the SDK's own ``Client.call_tool`` awaited
   directly on an event loop in this process, on a second connection to the same server command, the two
   interleaved call for call so that a busy machine weighs on both alike; and the
   floor of hermes's design: one no-op coroutine handed to the manager's loop thread and its result
   waited for (the two thread hand-offs every call from a synchronous tool makes).
2. Start-up: registering the tools of 3 configured servers (servers connect in the background),
   against registering none, in this process.
3. Tool-definition size sent per turn with N servers like mcp-server-time (characters / 4 ≈ tokens).
Tests never assert these figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from hermes.config.paths import HermesPaths  # noqa: E402
from hermes.config.settings import Settings  # noqa: E402

TIME_ARGS = ["-m", "mcp_server_time", "--local-timezone", "UTC"]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def write_config(home: Path, servers: int) -> Settings:
    import yaml

    entries = {f"time{i}" if i else "time": {"command": sys.executable, "args": TIME_ARGS} for i in range(servers)}
    (home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": entries} if servers else {}))
    return Settings.load(HermesPaths(home))


async def interleaved(session: object, calls: int) -> tuple[list[float], list[float]]:
    """The reference and hermes, call for call in turn (the same load on both on a busy machine): the SDK's
    ``Client.call_tool`` awaited on this loop, then ``ToolSession.dispatch`` from this thread (which blocks
    this loop while hermes's own loop thread makes the call)."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=TIME_ARGS)
    name = "mcp_time_get_current_time"
    ref: list[float] = []
    ours: list[float] = []
    async with Client(params) as client:
        for i in range(calls + 20):
            start = time.perf_counter()
            await client.call_tool("get_current_time", {"timezone": "UTC"})
            middle = time.perf_counter()
            result = session.dispatch(name, {"timezone": "UTC"})  # type: ignore[attr-defined]
            end = time.perf_counter()
            assert not result.is_error, result.text
            if i >= 20:  # warm-up left out
                ref.append(middle - start)
                ours.append(end - middle)
    return ref, ours


def hermes_calls(home: Path, calls: int) -> tuple[list[float], list[float], list[dict[str, object]], list[float]]:
    from hermes.connectors.mcp.manager import close_home, manager_for
    from hermes.tools.mcp.tool import load_mcp_tools
    from hermes.tools.registry import ToolRegistry
    from hermes.tools.session import SessionContext, ToolSession

    settings = write_config(home, 1)
    reg = ToolRegistry()
    load_mcp_tools(settings, reg)
    manager_for(home).wait_settled(timeout=120)
    reg = ToolRegistry()
    load_mcp_tools(settings, reg)
    session = ToolSession(reg, None, SessionContext.from_settings(settings))
    ref, ours = asyncio.run(interleaved(session, calls))
    definitions = session.definitions()
    manager = manager_for(home)

    async def nothing() -> None:
        return None

    hops = []
    for _ in range(calls):
        start = time.perf_counter()
        manager._submit(nothing()).result(10)
        hops.append(time.perf_counter() - start)
    close_home(home)
    return ref, ours, definitions, hops


def startup(home: Path, rounds: int) -> tuple[float, float]:
    from hermes.connectors.mcp.manager import close_home
    from hermes.tools.mcp.tool import load_mcp_tools
    from hermes.tools.registry import ToolRegistry

    figures = {}
    for servers in (0, 3):
        times = []
        for _ in range(rounds):
            settings = write_config(home, servers)
            start = time.perf_counter()
            load_mcp_tools(settings, ToolRegistry())
            times.append(time.perf_counter() - start)
            close_home(home)
        figures[servers] = statistics.median(times)
    return figures[0], figures[3]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        ref, ours, definitions, hops = hermes_calls(home, args.calls)
        print(f"1. call over stdio, mcp-server-time get_current_time ({args.calls} calls)")
        print(f"   SDK Client.call_tool directly  p50 {pct(ref, .5) * 1e3:6.2f} ms  p90 {pct(ref, .9) * 1e3:6.2f} ms")
        print(f"   hermes ToolSession.dispatch    p50 {pct(ours, .5) * 1e3:6.2f} ms  p90 {pct(ours, .9) * 1e3:6.2f} ms")
        print(f"   hermes overhead over the SDK   p50 {(pct(ours, .5) - pct(ref, .5)) * 1e3:6.2f} ms "
              f"(ratio {pct(ours, .5) / pct(ref, .5):.2f})")
        print(f"   floor: a no-op hop to the loop p50 {pct(hops, .5) * 1e3:6.2f} ms  "
              f"p90 {pct(hops, .9) * 1e3:6.2f} ms; "
              f"beyond it p50 {(pct(ours, .5) - pct(ref, .5) - pct(hops, .5)) * 1e3:6.2f} ms")
        none, three = startup(home, 5)
        print("2. registering MCP tools at session start (servers connect in the background)")
        print(f"   0 servers {none * 1e3:6.2f} ms   3 servers {three * 1e3:6.2f} ms   "
              f"growth {(three - none) * 1e3:6.2f} ms")
        chars = len(json.dumps(definitions))
        print(f"3. tool definitions: mcp-server-time ({len(definitions)} tools) {chars} characters "
              f"≈ {chars // 4} tokens")
        for n in (1, 3, 10):
            print(f"   {n:>2} such servers ≈ {n * chars // 4} tokens per turn")


if __name__ == "__main__":
    main()
