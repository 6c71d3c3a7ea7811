"""Benchmark: command round trip (``true``) per execution backend — local, ssh on loopback, modal through
our own Tool Gateway.

Usage::

    .venv/bin/python benchmarks/bench_backends.py              # 100 rounds each
    .venv/bin/python benchmarks/bench_backends.py --rounds 300

For each backend: ``exec`` (the backend primitive: one ``bash -c true`` under coreutils ``timeout``,
output and exit status back) and ``terminal`` (the whole tool call: approval, workdir check, run,
result JSON), p50 and p90 in milliseconds, once connected (the first call — connecting, creating the
sandbox — is timed apart). ssh runs against a throw-away sshd on 127.0.0.1 (tests/fakes/sshd.py), modal
against the gateway harness of the tests with the local sandbox engine. Goal: ssh ``exec`` p50 under
10 ms. Ratios are against local in the same run. Tests never assert these timings.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))


def _times(fn: Callable[[], object], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _home(text: str, env: str = "") -> Path:
    home = Path(tempfile.mkdtemp(prefix="bench-backends-"))
    (home / "config.yaml").write_text(text + "approvals:\n  allow: [unproven]\n", encoding="utf-8")
    (home / ".env").write_text(env, encoding="utf-8")
    return home


def measure(name: str, home: Path, rounds: int) -> dict[str, Any]:
    from hermes.config.paths import HermesPaths
    from hermes.config.settings import Settings
    from hermes.tools.backends.session import for_call
    from hermes.tools.context import SESSION_END_KEY
    from hermes.tools.registry import registry
    from hermes.tools.session import SessionContext, ToolSession
    from hermes.tools.toolsets import Surface

    os.environ["HERMES_HOME"] = str(home)
    settings = Settings.load(HermesPaths(home))
    session = ToolSession(registry, ("terminal",), SessionContext(surface=Surface.CLI, settings=settings,
                                                                  task_id=f"bench-{name}"))
    kw = {"session": session, "task_id": f"bench-{name}"}
    backend = for_call(kw)
    started = time.perf_counter()
    first = json.loads(session.dispatch("terminal", {"command": "true"}).text)
    first_ms = (time.perf_counter() - started) * 1000
    assert first.get("exit_code") == 0, first
    try:
        exec_ms = _times(lambda: backend.exec("true", timeout=30), rounds)
        tool_ms = _times(lambda: session.dispatch("terminal", {"command": "true"}), rounds)
    finally:
        for callback in session.state.pop(SESSION_END_KEY, {}).values():
            callback()
    return {"backend": name, "first_ms": first_ms, "exec_p50": statistics.median(exec_ms),
            "exec_p90": _pct(exec_ms, 0.9), "tool_p50": statistics.median(tool_ms), "tool_p90": _pct(tool_ms, 0.9)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    import hermes.tools.terminal.tool  # noqa: F401 - registers the tools
    from fakes.sshd import SSHServer
    from fakes.vendors.harness import GatewayHarness

    rows = [measure("local", _home(""), args.rounds)]
    with SSHServer(Path(tempfile.mkdtemp(prefix="bench-sshd-"))) as server:
        s = server.settings()
        table = "".join(f"    {k}: {v}\n" for k, v in s.items())
        rows.append(measure("ssh", _home(f"terminal:\n  backend: ssh\n  ssh:\n{table}"), args.rounds))
    root = Path(tempfile.mkdtemp(prefix="bench-modal-", dir="/tmp"))
    root.chmod(0o711)
    who = {"modal.run_as": "nobody"} if os.geteuid() == 0 else {"modal.allow_gateway_user": True}
    with GatewayHarness(Path(tempfile.mkdtemp(prefix="bench-gw-")), admin_token="bench-admin-token",
                        **{"modal.backend": "local", "modal.root": str(root / "sandboxes"), **who}) as gw:
        gw.user("bench", "paid")
        rows.append(measure("modal", _home(
            "terminal:\n  backend: modal\n",
            f"MODAL_GATEWAY_URL={gw.relay_url('modal')}\nTOOL_GATEWAY_USER_TOKEN={gw.token('bench')}\n"), args.rounds))
    local = rows[0]
    print(f"command round trip 'true', {args.rounds} rounds each (ms; once connected)")
    print(f"{'backend':<8}{'first call':>12}{'exec p50':>10}{'exec p90':>10}{'tool p50':>10}{'tool p90':>10}"
          f"{'exec ×local':>13}")
    for r in rows:
        print(f"{r['backend']:<8}{r['first_ms']:>12.1f}{r['exec_p50']:>10.2f}{r['exec_p90']:>10.2f}"
              f"{r['tool_p50']:>10.2f}{r['tool_p90']:>10.2f}{r['exec_p50'] / local['exec_p50']:>13.1f}")
    ssh = rows[1]["exec_p50"]
    print(f"goal ssh exec p50 < 10 ms: {'met' if ssh < 10 else 'missed'} ({ssh:.2f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
