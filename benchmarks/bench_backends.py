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
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

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


class Target:
    """One backend's session: the first call timed apart, then ``exec`` and ``terminal`` rounds."""

    def __init__(self, name: str, home: Path) -> None:
        from hermes.config.paths import HermesPaths
        from hermes.config.settings import Settings
        from hermes.tools.backends.session import for_call
        from hermes.tools.registry import registry
        from hermes.tools.session import SessionContext, ToolSession
        from hermes.tools.toolsets import Surface

        os.environ["HERMES_HOME"] = str(home)
        self.name = name
        settings = Settings.load(HermesPaths(home))
        self.session = ToolSession(registry, ("terminal",), SessionContext(surface=Surface.CLI, settings=settings,
                                                                           task_id=f"bench-{name}"))
        self.backend = for_call({"session": self.session, "task_id": f"bench-{name}"})
        started = time.perf_counter()
        first = json.loads(self.session.dispatch("terminal", {"command": "true"}).text)
        self.first_ms = (time.perf_counter() - started) * 1000
        assert first.get("exit_code") == 0, first
        self.exec_ms: list[float] = []
        self.tool_ms: list[float] = []

    def round(self) -> None:
        self.exec_ms += _times(lambda: self.backend.exec("true", timeout=30), 1)
        self.tool_ms += _times(lambda: self.session.dispatch("terminal", {"command": "true"}), 1)

    def close(self) -> None:
        from hermes.tools.context import SESSION_END_KEY

        for callback in self.session.state.pop(SESSION_END_KEY, {}).values():
            callback()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    import hermes.tools.terminal.tool  # noqa: F401 - registers the tools
    from fakes.sshd import SSHServer
    from fakes.vendors.harness import GatewayHarness

    targets = [Target("local", _home(""))]
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(SSHServer(Path(tempfile.mkdtemp(prefix="bench-sshd-"))))
        table = "".join(f"    {k}: {v}\n" for k, v in server.settings().items())
        targets.append(Target("ssh", _home(f"terminal:\n  backend: ssh\n  ssh:\n{table}")))
        root = Path(tempfile.mkdtemp(prefix="bench-modal-", dir="/tmp"))
        root.chmod(0o711)
        who = {"modal.run_as": "nobody"} if os.geteuid() == 0 else {"modal.allow_gateway_user": True}
        gw = stack.enter_context(GatewayHarness(Path(tempfile.mkdtemp(prefix="bench-gw-")),
                                                admin_token="bench-admin-token",
                                                **{"modal.backend": "local", "modal.root": str(root / "sandboxes"),
                                                   **who}))
        gw.user("bench", "paid")
        targets.append(Target("modal", _home("terminal:\n  backend: modal\n", (
            f"MODAL_GATEWAY_URL={gw.relay_url('modal')}\nTOOL_GATEWAY_USER_TOKEN={gw.token('bench')}\n"))))
        line = ["timeout", "-k", "2", "30", "bash", "-c", "exec 2>&1\ntrue"]  # what a remote backend starts
        alone: list[float] = []
        for _ in range(args.rounds):  # interleaved, so a change of load hits every backend alike
            for target in targets:
                target.round()
            alone += _times(lambda: subprocess.run(line, stdin=subprocess.DEVNULL, capture_output=True), 1)
        for target in targets:
            target.close()
    rows = [{"backend": t.name, "first_ms": t.first_ms, "exec_p50": statistics.median(t.exec_ms),
             "exec_p90": _pct(t.exec_ms, 0.9), "tool_p50": statistics.median(t.tool_ms),
             "tool_p90": _pct(t.tool_ms, 0.9)} for t in targets]
    local = rows[0]
    print(f"command round trip 'true', {args.rounds} rounds each (ms; once connected)")
    print(f"{'backend':<8}{'first call':>12}{'exec p50':>10}{'exec p90':>10}{'tool p50':>10}{'tool p90':>10}"
          f"{'exec ×local':>13}")
    for r in rows:
        print(f"{r['backend']:<8}{r['first_ms']:>12.1f}{r['exec_p50']:>10.2f}{r['exec_p90']:>10.2f}"
              f"{r['tool_p50']:>10.2f}{r['tool_p90']:>10.2f}{r['exec_p50'] / local['exec_p50']:>13.1f}")
    print(f"starting timeout + bash -c here (what docker, modal and ssh's second channel start per command): "
          f"p50 {statistics.median(alone):.2f} ms")
    ssh = rows[1]["exec_p50"]
    print(f"goal ssh exec p50 < 10 ms: {'met' if ssh < 10 else 'missed'} ({ssh:.2f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
