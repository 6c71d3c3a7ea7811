"""Benchmark: Tool Gateway relay overhead against a local vendor fake, on loopback.

Usage::

    .venv/bin/python benchmarks/bench_gateway_relay.py                       # defaults below
    .venv/bin/python benchmarks/bench_gateway_relay.py --requests 5000 --duration 10 --concurrency 32
    .venv/bin/python benchmarks/bench_gateway_relay.py --plan free --access-log file
    .venv/bin/python benchmarks/bench_gateway_relay.py --scale          # PostgreSQL + Redis mode

Three processes: the Firecrawl fake (``tests/fakes/vendors``) under uvicorn, the real gateway started
as a user would (``hermes toolgateway serve`` with a config pointing its firecrawl relay at the fake),
and this client. The gateway path is the full pipeline: JWT verification, the revocation/user lookup,
entitlement, rate limit, quota reservation (``--plan free``: an atomic SQLite upsert per call; ``paid``:
no quota), the vendor call on the shared ``httpx.AsyncClient`` and the usage insert. ``--scale`` runs the
gateway on a throw-away PostgreSQL cluster and Redis server (started with ``tests/fakes/pg_redis.py``) with the
Redis rate limiter switched on, as several hosts would.

* **Latency** — sequential ``POST /v2/search`` on one keep-alive connection, direct to the fake and
  via the gateway (pinned form ``/relay/firecrawl``), interleaved in rounds so drift hits both alike.
  Overhead = (via gateway) − (direct) at p50 and p99.
* **Ratios** — what the goals are stated in (docs/performance.md), each to the direct path of the same run:
  via gateway / direct and floor / direct at p50, the gateway's own work (gateway − floor-h1) / direct at
  p50 (the bare forwarder on the gateway's own vendor client: the httpx floor is slower than the gateway
  itself), and via gateway / direct at p99. Absolute milliseconds differ threefold between machines; these do not.
* **Trials** — the servers are launched afresh ``--trials`` times (3) and the goals are judged on the median
  of the trials' ratios: on a 2-core virtual machine one launch differs from the next by as much as the
  gateway's whole own work (which CPU each process lands on, and its memory layout), while the rounds
  inside one launch agree. Each trial also reports the CPU time each server spent a request
  (``/proc/<pid>/task/*/schedstat``); (gateway − floor-h1) CPU / direct is the own work without the
  scheduler's placement in it.
* **Floor** — a bare forwarder on the same stack (uvicorn + Starlette + httpx, nothing else): the part
  of the overhead that belongs to the stack, not to the gateway's own work. **floor-h1** is the same
  forwarder with the gateway's own vendor client (``hermes.net.h1client``) instead of httpx.
* **Throughput** — ``--concurrency`` clients for ``--duration`` seconds, direct and via the gateway:
  requests per second and latency percentiles under load.

The client shares the machine with both servers, so throughput is what the whole box sustains.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

VENDOR_KEY = "fc-bench-key"
_VENDOR = """
import sys
sys.path.insert(0, {tests!r})
import uvicorn
from fakes.vendors.firecrawl import FakeFirecrawl
fake = FakeFirecrawl(api_key={key!r})
fake.requests = type("Sink", (), {{"append": lambda self, item: None}})()  # keep memory flat
uvicorn.run(fake.app, host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""
#: The floor: the same stack (uvicorn + Starlette + a shared httpx.AsyncClient) forwarding with no
#: authentication, metering, limits or logging — what any Python relay on this stack pays.
_FLOOR = """
import contextlib, httpx, uvicorn
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
state = {{}}
async def proxy(request):
    r = await state["client"].post({vendor!r} + "/v2/search", content=await request.body(),
                                   headers={{"authorization": "Bearer " + {key!r}, "content-type": "application/json"}})
    return Response(r.content, r.status_code, media_type="application/json")
@contextlib.asynccontextmanager
async def lifespan(app):
    async with httpx.AsyncClient() as client:
        state["client"] = client
        yield
app = Starlette(routes=[Route("/v2/search", proxy, methods=["POST"])], lifespan=lifespan)
uvicorn.run(app, host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""
#: The same floor with the gateway's own vendor client (hermes.net.h1client) instead of httpx: what a
#: Python relay on this stack pays with the cheaper client; gateway − this floor is the gateway's own work.
_FLOOR_H1 = """
import contextlib, sys, uvicorn
sys.path.insert(0, {src!r})
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
from hermes.net.h1client import H1Client
state = {{}}
async def proxy(request):
    r = await state["client"].request(
        "POST", {vendor!r} + "/v2/search", content=await request.body(), max_bytes=1 << 24,
        headers={{"authorization": "Bearer " + {key!r}, "content-type": "application/json"}})
    return Response(r.body, r.status, media_type="application/json")
@contextlib.asynccontextmanager
async def lifespan(app):
    state["client"] = H1Client()
    yield
    await state["client"].aclose()
app = Starlette(routes=[Route("/v2/search", proxy, methods=["POST"])], lifespan=lifespan)
uvicorn.run(app, host="127.0.0.1", port={port}, log_level="warning", access_log=False)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited early ({proc.returncode})")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise SystemExit(f"{url} did not come up")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


#: Goals, as ratios to the direct path measured in the same run (docs/performance.md).
GOAL_P50_SQLITE = 2.0
GOAL_P50_SCALE = 2.5
GOAL_OWN_WORK = 0.15
GOAL_P99 = 3.0


def sequential(client: httpx.Client, url: str, headers: dict[str, str], n: int) -> list[float]:
    body = {"query": "benchmark", "limit": 3, "origin": "python-sdk@4.17.0"}
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        resp = client.post(url, json=body, headers=headers)
        out.append((time.perf_counter() - t0) * 1000)
        if resp.status_code != 200:
            raise SystemExit(f"{url}: {resp.status_code} {resp.text[:200]}")
    return out


async def load(url: str, headers: dict[str, str], concurrency: int, duration: float) -> tuple[int, list[float]]:
    body = {"query": "benchmark", "limit": 3}
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + duration
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                resp = await client.post(url, json=body, headers=headers)
                latencies.append((time.perf_counter() - t0) * 1000)
                errors += resp.status_code != 200
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    if errors:
        print(f"  ({errors} non-200 answers from {url})")
    return len(latencies), latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=3000, help="sequential requests per path and trial (3000)")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds per trial (10)")
    parser.add_argument("--trials", type=int, default=3,
                        help="launches of fresh server processes; the ratios are their medians (3)")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of load per path (5)")
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent clients under load (16)")
    parser.add_argument("--plan", choices=("paid", "free"), default="paid", help="paid: no quota; free: quota")
    parser.add_argument("--access-log", choices=("off", "file"), default="file", help="gateway access log (file)")
    parser.add_argument("--scale", action="store_true", help="PostgreSQL + Redis (throw-away servers) instead of "
                        "SQLite, with the Redis rate limiter on")
    args = parser.parse_args()
    stops: list[Any] = []
    counters: Any = None
    storage = ""
    rate = "[rate_limit]\nper_second = 0\nburst = 0\n"
    if args.scale:
        sys.path.insert(0, str(ROOT / "tests"))
        from fakes.pg_redis import PostgresServer, RedisServer

        pg, rd = PostgresServer(), RedisServer()
        stops += [pg.stop, rd.close]
        storage = f'database_url = "{pg.database()}"\nredis_url = "{rd.url}"\n'
        rate = "[rate_limit]\nper_second = 1000000\nburst = 1000000\n"  # on, but never the limit
        counters = service_counters(pg, rd, storage.split('"')[1].rsplit("/", 1)[1])
    try:
        run(args, storage, rate, counters)
    finally:
        for stop in stops:
            stop()


def service_counters(pg: Any, rd: Any, dbname: str) -> Any:
    """A function returning (PostgreSQL transactions, Redis commands) so far: the storage round trips, which
    unlike milliseconds do not depend on how busy the machine is."""
    import redis

    client = redis.Redis(host="127.0.0.1", port=rd.port, password=rd.password)

    def read() -> tuple[int, int]:
        time.sleep(11)  # an idle PostgreSQL backend publishes its statistics within 10 s
        xacts = pg.admin(f"SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '{dbname}'")
        stats = client.info("commandstats")
        # round trips: every command but those our Lua scripts run inside their one EVALSHA
        inside = {"cmdstat_time", "cmdstat_hmget", "cmdstat_hset", "cmdstat_pexpire", "cmdstat_get", "cmdstat_info"}
        return int(xacts[0][0]), sum(int(v["calls"]) for k, v in stats.items() if k not in inside)

    return read


def cpu_ns(pid: int) -> int:
    """Nanoseconds ``pid`` (all its threads) has run on a CPU so far (Linux ``schedstat``; 0 elsewhere)."""
    total = 0
    for path in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int(path.read_text().split()[0])
    return total


PATHS = ("direct", "floor", "floor-h1", "gateway")


def trial(args: argparse.Namespace, cfg_path: Path, env: dict[str, str], token: str, counters: Any, last: bool,
          vport: int) -> tuple[dict[str, list[float]], dict[str, float]]:
    """One launch of the four servers (the vendor fake on ``vport``, the port the gateway's config names):
    interleaved sequential rounds; latencies (ms) and CPU µs a request of each server."""
    gport, fport, hport = free_port(), free_port(), free_port()
    vendor_url, gateway_url = f"http://127.0.0.1:{vport}", f"http://127.0.0.1:{gport}"
    vendor = subprocess.Popen([sys.executable, "-c", _VENDOR.format(tests=str(ROOT / "tests"), key=VENDOR_KEY,
                                                                    port=vport)])
    floor = subprocess.Popen([sys.executable, "-c", _FLOOR.format(vendor=vendor_url, key=VENDOR_KEY, port=fport)])
    floor_h1 = subprocess.Popen([sys.executable, "-c", _FLOOR_H1.format(vendor=vendor_url, key=VENDOR_KEY, port=hport,
                                                                         src=str(ROOT / "src"))])
    gateway = subprocess.Popen([sys.executable, "-m", "hermes", "toolgateway", "serve", "--port", str(gport),
                                "--config", str(cfg_path)], env=env, stderr=subprocess.DEVNULL)
    try:
        wait_ready(vendor_url + "/", vendor)
        wait_ready(gateway_url + "/healthz", gateway)
        wait_ready(f"http://127.0.0.1:{fport}/", floor)
        wait_ready(f"http://127.0.0.1:{hport}/", floor_h1)
        targets = {"direct": (vendor_url + "/v2/search", {"authorization": f"Bearer {VENDOR_KEY}"}, vendor),
                   "floor": (f"http://127.0.0.1:{fport}/v2/search", {}, floor),
                   "floor-h1": (f"http://127.0.0.1:{hport}/v2/search", {}, floor_h1),
                   "gateway": (gateway_url + "/relay/firecrawl/v2/search", {"authorization": f"Bearer {token}"},
                               gateway)}
        lat: dict[str, list[float]] = {name: [] for name in PATHS}
        cpu: dict[str, int] = dict.fromkeys(PATHS, 0)
        per_round = max(1, args.requests // args.rounds)
        clients = {name: httpx.Client(timeout=30) for name in PATHS}
        try:
            for name in PATHS:
                sequential(clients[name], *targets[name][:2], 200)
            if counters is not None:
                before = counters()
                sequential(clients["gateway"], *targets["gateway"][:2], 500)
                after = counters()
                pg_trips, redis_trips = (after[0] - before[0] - 1) / 500, (after[1] - before[1]) / 500
                print(f"storage round trips per relayed request (500 requests): PostgreSQL transactions "
                      f"{pg_trips:.3f} (usage batches included), Redis round trips {redis_trips:.3f}")
            for _ in range(args.rounds):
                for name in PATHS:
                    url, headers, proc = targets[name]
                    used = cpu_ns(proc.pid)
                    lat[name] += sequential(clients[name], url, headers, per_round)
                    cpu[name] += cpu_ns(proc.pid) - used
        finally:
            for client in clients.values():
                client.close()
        if last:
            throughput(args, {name: targets[name][:2] for name in ("direct", "gateway")})
        done = per_round * args.rounds
        return lat, {name: cpu[name] / done / 1000 for name in PATHS}
    finally:
        for proc in (gateway, floor, floor_h1, vendor):
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def throughput(args: argparse.Namespace, targets: dict[str, tuple[str, dict[str, str]]]) -> None:
    print(f"under load, {args.concurrency} concurrent clients, {args.duration:g} s each (last trial):")
    results = {}
    for name, (url, headers) in targets.items():
        count, lat = asyncio.run(load(url, headers, args.concurrency, args.duration))
        results[name] = count / args.duration
        print(f"  {name:8} {count / args.duration:8.0f} req/s  p50 {pct(lat, .5):7.2f} ms  "
              f"p99 {pct(lat, .99):7.2f} ms")
    print(f"  gateway sustains {results['gateway'] / results['direct']:.0%} of the fake's direct rate "
          f"(throughput ratio {results['gateway'] / results['direct']:.2f})")


def run(args: argparse.Namespace, storage: str, rate: str, counters: Any = None) -> None:

    from hermes.toolgateway.config import load_config
    from hermes.toolgateway.services import Gateway

    tmp = Path(tempfile.mkdtemp(prefix="bench_gateway_"))
    log = "off" if args.access_log == "off" else str(tmp / "access.log")
    cfg_path = tmp / "gateway.toml"
    env = {**os.environ, "HERMES_HOME": str(tmp / "home"), "PYTHONPATH": str(ROOT / "src")}

    def write_config(vendor_url: str) -> None:
        cfg_path.write_text(
            f'access_log = "{log}"\n{storage}{rate}'
            f'[plans.free]\nmonthly = {{ firecrawl = 100000000 }}\n'
            f'[relays.firecrawl]\nfirecrawl_url = "{vendor_url}"\nfirecrawl_api_key = "{VENDOR_KEY}"\n'
        )

    write_config("http://127.0.0.1:9")  # the account set-up calls no vendor; each trial names its own fake
    side = Gateway(load_config(cfg_path, home=tmp / "home")).open()
    side.accounts.add_user("bench", args.plan)
    token = side.accounts.issue_access_token(side.accounts.get_user("bench"), ttl=86400).token
    side.close_db()
    print(f"relay overhead, plan {args.plan}, access log {args.access_log}, "
          f"{'PostgreSQL + Redis' if args.scale else 'SQLite'}, {os.cpu_count()} CPUs, "
          f"Python {sys.version.split()[0]}, {args.trials} trial(s) of fresh server processes")
    per_trial: list[dict[str, float]] = []
    pooled: dict[str, list[float]] = {name: [] for name in PATHS}
    for number in range(args.trials):
        vport = free_port()  # a fresh vendor fake each launch, on a fresh port the config names
        write_config(f"http://127.0.0.1:{vport}")
        lat, cpu = trial(args, cfg_path, env, token, counters if number == 0 else None,
                         last=number == args.trials - 1, vport=vport)
        for name in PATHS:
            pooled[name] += lat[name]
        d50, h50, g50 = pct(lat["direct"], .5), pct(lat["floor-h1"], .5), pct(lat["gateway"], .5)
        figures = {"gateway_p50": g50 / d50, "own_p50": (g50 - h50) / d50,
                   "gateway_p99": pct(lat["gateway"], .99) / pct(lat["direct"], .99),
                   "floor_p50": pct(lat["floor"], .5) / d50, "floor_h1_p50": h50 / d50,
                   "own_cpu": (cpu["gateway"] - cpu["floor-h1"]) / (d50 * 1000), "direct_ms": d50}
        per_trial.append(figures)
        print(f"trial {number + 1}: direct p50 {d50:.3f} ms; via gateway / direct {figures['gateway_p50']:.2f}, "
              f"(gateway - floor-h1) / direct {figures['own_p50']:.2f}, p99 {figures['gateway_p99']:.2f}; "
              f"CPU a request: gateway {cpu['gateway']:.0f} us, floor-h1 {cpu['floor-h1']:.0f} us, "
              f"vendor {cpu['direct']:.0f} us")
    print(f"sequential, {len(pooled['direct'])} requests each over all trials (ms):")
    for name in PATHS:
        values = pooled[name]
        print(f"  {name:8} p50 {pct(values, .5):6.3f}  p99 {pct(values, .99):6.3f}  "
              f"mean {statistics.mean(values):6.3f}")
    median = {key: statistics.median(t[key] for t in per_trial) for key in per_trial[0]}
    goal = GOAL_P50_SCALE if args.scale else GOAL_P50_SQLITE
    print(f"ratios to the direct path, median of {args.trials} trial(s) (milliseconds do not travel between "
          "machines; these do):")
    for name, value, limit in (("via gateway / direct, p50", median["gateway_p50"], goal),
                               ("floor / direct, p50", median["floor_p50"], None),
                               ("floor-h1 / direct, p50", median["floor_h1_p50"], None),
                               # the gateway's own work: over the bare forwarder on its own vendor client
                               # (the httpx floor is slower than the gateway itself, so it proves nothing)
                               ("(gateway - floor-h1) / direct, p50", median["own_p50"], GOAL_OWN_WORK),
                               ("CPU (gateway - floor-h1) / direct p50", median["own_cpu"], None),
                               ("via gateway / direct, p99", median["gateway_p99"], GOAL_P99)):
        verdict = "" if limit is None else f"  goal <= {limit:g}: {'met' if value <= limit else 'NOT met'}"
        print(f"  {name:38} {value:6.2f}{verdict}")


if __name__ == "__main__":
    main()
