"""Load test: two gateway processes behind one loopback address, PostgreSQL + Redis, one process killed mid-run.

Usage::

    .venv/bin/python benchmarks/bench_gateway_load.py                    # 100 req/s for 20 s (this 2-core box)
    .venv/bin/python benchmarks/bench_gateway_load.py --rate 1000 --duration 60

What runs (all on 127.0.0.1): a throw-away PostgreSQL and Redis (``tests/fakes/pg_redis.py``), the Firecrawl
fake, two ``hermes toolgateway serve`` processes sharing the database, Redis and the signing secret (as
two hosts would), a small round-robin TCP balancer in front of them (a connection to a process that is
gone is retried on the other one), and this client sending an open-loop mix of ``POST /v2/search`` and
``POST /v2/scrape`` (two operations, metered separately) at ``--rate`` requests per second from two users:
one on the paid plan, one on a free plan whose monthly quota runs out during the run. Halfway through,
gateway B is killed with SIGKILL; it is started again (same state directory, so it replays its usage
journal) a few seconds later.

Printed: requests sent and answered, statuses, latency p50/p99 before and after the kill; then the
checks — every answer a gateway gave has its usage row (none lost), no usage row twice (unique ``rid``),
the quota counter equals the units of the successful free-plan calls (nothing double counted), and the
free user got exactly their quota.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from fakes.pg_redis import PostgresServer, RedisServer, free_port  # noqa: E402

VENDOR_KEY = "fc-load-key"
_VENDOR = """
import sys
sys.path.insert(0, {tests!r})
import uvicorn
from fakes.vendors.firecrawl import FakeFirecrawl
fake = FakeFirecrawl(api_key={key!r})
fake.requests = type("Sink", (), {{"append": lambda self, item: None}})()
uvicorn.run(fake.app, host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""
CONFIG = """
access_log = "off"
[rate_limit]
per_second = 1000000
burst = 1000000
[plans.free]
monthly = {{ firecrawl = {quota} }}
[relays.firecrawl]
firecrawl_url = "{vendor}"
firecrawl_api_key = "{key}"
"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


class Balancer:
    """Round-robin TCP forwarding to the gateways; a refused connection is tried on the next one."""

    def __init__(self, backends: list[int]) -> None:
        self.backends = backends
        self._next = itertools.cycle(range(len(backends)))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        for _ in range(len(self.backends)):
            port = self.backends[next(self._next)]
            try:
                up_r, up_w = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                continue
        else:
            client_w.close()
            return
        with contextlib.suppress(asyncio.CancelledError):  # the run ended with this connection open
            await asyncio.gather(self._pipe(client_r, up_w), self._pipe(up_r, client_w))


def start_gateway(home: Path, port: int, config: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "hermes", "toolgateway", "serve", "--port", str(port),
                             "--config", str(config)], env={**env, "HERMES_HOME": str(home)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_ready(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{url} did not become ready")


def cli(home: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "hermes", "toolgateway", *args], env={**env, "HERMES_HOME": str(home)},
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"hermes toolgateway {args[0]} failed: {done.stderr}")
    return done.stdout


async def drive(url: str, tokens: list[str], rate: float, duration: float, kill_at: float,
                on_kill: Any) -> list[tuple[float, int | str, float, int]]:
    """Open loop: one request every 1/rate s; returns (start offset, status or error name, latency ms, user)."""
    results: list[tuple[float, int | str, float, int]] = []
    bodies = [("/v2/search", {"query": "load test", "limit": 3}),
              ("/v2/scrape", {"url": "https://example.com/", "formats": ["markdown"]})]
    limits = httpx.Limits(max_connections=256, max_keepalive_connections=64)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:

        async def one(i: int, offset: float) -> None:
            path, body = bodies[i % 2]
            user = (i // 2) % len(tokens)
            t0 = time.perf_counter()
            try:
                resp = await client.post(url + "/relay/firecrawl" + path, json=body,
                                         headers={"authorization": f"Bearer {tokens[user]}"})
                outcome: int | str = resp.status_code
            except httpx.HTTPError as exc:
                outcome = type(exc).__name__
            results.append((offset, outcome, (time.perf_counter() - t0) * 1000, user))

        tasks = []
        start = time.perf_counter()
        killed = False
        for i in range(int(rate * duration)):
            offset = i / rate
            delay = start + offset - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            if not killed and offset >= kill_at:
                killed = True
                on_kill()
            tasks.append(asyncio.create_task(one(i, offset)))
        await asyncio.gather(*tasks)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=100.0, help="requests per second (100)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load (20)")
    parser.add_argument("--quota", type=int, default=300, help="the free user's monthly units (300)")
    args = parser.parse_args()
    pg, rd = PostgresServer(), RedisServer()
    tmp = Path(tempfile.mkdtemp(prefix="bench_gateway_load_"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        run(args, pg, rd, tmp, procs)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
        rd.close()
        pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, pg: PostgresServer, rd: RedisServer, tmp: Path,
        procs: list[subprocess.Popen[bytes]]) -> None:
    db_url = pg.database()
    dbname = db_url.rsplit("/", 1)[1]
    vport = free_port()
    procs.append(subprocess.Popen([sys.executable, "-c", _VENDOR.format(tests=str(ROOT / "tests"), key=VENDOR_KEY,
                                                                        port=vport)]))
    config = tmp / "gateway.toml"
    config.write_text(CONFIG.format(quota=args.quota, vendor=f"http://127.0.0.1:{vport}", key=VENDOR_KEY))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HERMES_GATEWAY_DATABASE_URL": db_url,
           "HERMES_GATEWAY_REDIS_URL": rd.url}
    homes = [tmp / "host-a", tmp / "host-b"]
    cli(homes[0], env, "users", "add", "payer", "--plan", "paid")
    cli(homes[0], env, "users", "add", "freeloader", "--plan", "free")
    tokens = [cli(homes[0], env, "tokens", "issue", name).split()[-1] for name in ("payer", "freeloader")]
    (homes[1] / "toolgateway").mkdir(parents=True)
    for name in ("secret", "admin_token"):
        shutil.copy2(homes[0] / "toolgateway" / name, homes[1] / "toolgateway" / name)
    ports = [free_port(), free_port()]
    gws = [start_gateway(home, port, config, env) for home, port in zip(homes, ports, strict=True)]
    procs += gws
    for port in ports:
        wait_ready(f"http://127.0.0.1:{port}/readyz")
    print(f"load: {args.rate:g} req/s for {args.duration:g} s through a loopback balancer to 2 gateways "
          f"(PostgreSQL + Redis), {os.cpu_count()} CPUs; gateway B is killed (SIGKILL) at {args.duration / 2:g} s")

    async def scenario() -> list[tuple[float, int | str, float, int]]:
        balancer = Balancer(ports)
        server = await asyncio.start_server(balancer.handle, "127.0.0.1", 0)
        lb_port = server.sockets[0].getsockname()[1]
        loop = asyncio.get_running_loop()
        restarts: list[asyncio.Task[None]] = []

        def kill_b() -> None:
            gws[1].send_signal(signal.SIGKILL)

            async def restart() -> None:
                await asyncio.sleep(3)
                await loop.run_in_executor(None, gws[1].wait)
                gws.append(start_gateway(homes[1], ports[1], config, env))
                procs.append(gws[-1])

            restarts.append(loop.create_task(restart()))

        try:
            results = await drive(f"http://127.0.0.1:{lb_port}", tokens, args.rate, args.duration,
                                  args.duration / 2, kill_b)
            await asyncio.gather(*restarts)
            return results
        finally:
            server.close()

    results = asyncio.run(scenario())
    wait_ready(f"http://127.0.0.1:{ports[1]}/readyz")  # B again, its journal replayed
    for url in (f"http://127.0.0.1:{p}" for p in ports):  # each writes out its pending rows for the usage view
        httpx.get(url + "/api/usage", headers={"authorization": f"Bearer {tokens[0]}"}, timeout=30)
    time.sleep(1)
    half = args.duration / 2
    answered = [r for r in results if isinstance(r[1], int)]
    statuses = Counter(r[1] for r in results)
    print(f"sent {len(results)}, answered by a gateway {len(answered)}, statuses {dict(statuses)}")
    for name, part in (("before the kill", [r for r in answered if r[0] < half]),
                       ("after the kill", [r for r in answered if r[0] >= half])):
        lat = [r[2] for r in part]
        print(f"  {name:16} {len(part):6} answers  p50 {pct(lat, .5):8.2f} ms  p99 {pct(lat, .99):8.2f} ms")
    rows, distinct = pg.admin("SELECT COUNT(*), COUNT(DISTINCT rid) FROM usage", dbname)[0]
    free_units = pg.admin("SELECT COALESCE(SUM(g.units), 0) FROM usage g JOIN users u ON u.id = g.user_id "
                          "WHERE u.name = 'freeloader' AND g.status = 200", dbname)[0][0]
    used = pg.admin("SELECT COALESCE(SUM(used), 0) FROM quota_counters", dbname)[0][0]
    free_ok = sum(1 for r in results if r[1] == 200 and r[3] == 1)
    print(f"usage rows {rows} (unique ids {distinct}) for {len(answered)} answers; quota counter {used}, "
          f"free-plan units recorded {free_units}, free-plan 200s the client saw {free_ok}")
    checks = {
        "no usage row lost (a row for every answer)": rows >= len(answered),
        "no usage row twice (every rid unique)": distinct == rows,
        "nothing double counted (quota counter == free-plan units recorded, give or take calls cut by the kill)":
            0 <= used - free_units <= len(results) - len(answered),
        "the free user got at most the quota": free_units <= args.quota,
        "every request ended (an answer or a transport error)": len(results) == int(args.rate * args.duration),
    }
    print(f"  usage rows beyond the answers the client saw: {rows - len(answered)} (calls on B when it was "
          f"killed); transport errors: {len(results) - len(answered)}")
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    if not all(checks.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
