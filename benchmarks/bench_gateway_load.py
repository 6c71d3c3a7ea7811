"""Load test: two gateway processes behind one loopback address, PostgreSQL + Redis, one process killed mid-run.

Usage::

    .venv/bin/python benchmarks/bench_gateway_load.py                    # 100 req/s for 20 s
    .venv/bin/python benchmarks/bench_gateway_load.py --rate 1000 --duration 60
    .venv/bin/python benchmarks/bench_gateway_load.py --balancer python  # the Python balancer, not nginx

What runs (all on 127.0.0.1): a throw-away PostgreSQL and Redis (``tests/fakes/pg_redis.py``), the
Firecrawl fake, two ``hermes toolgateway serve`` processes sharing the database, Redis and the signing
secret (as two hosts would), a load balancer in front of them, and an open-loop client (``loadgen.py``)
sending a mix of ``POST /v2/search`` and ``POST /v2/scrape`` (two operations, metered separately) at
``--rate`` requests per second from two users: eight in ten from one on the paid plan, two in ten from
one on a free plan whose monthly quota runs out during the run (every later call of theirs is a 429).
Halfway through, gateway B is killed with SIGKILL; it is started again (same state directory, so it
replays its usage journal) three seconds later.

The balancer is nginx when it is installed (``apt-get install nginx-light``): round robin over
keep-alive upstream connections, a connection refused by a dead process retried on the other one, and
its own 502 (a request in flight on the killed process) turned into status 599 so the client can tell
it from a gateway's answer. Without nginx, or with ``--balancer python``, a small asyncio TCP balancer
does the same job per connection, not per request: a kept-alive connection stays on the gateway it
first reached, so the load lands unevenly.

Printed: requests sent and answered, statuses, latency p50/p99 before and after the kill (counted from
when each request was due), the CPU each part used; then the checks — every answer a gateway gave has
its usage row (none lost), no usage row twice (unique ``rid``), the quota counter equals the units of
the successful free-plan calls (nothing double counted), the free user got at most their quota, and no
gateway answer was an error other than the free user's 429.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import loadgen  # noqa: E402

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


#: nginx in front of the two gateways; its own 502 (the upstream died under a request) answers 599
NGINX = """
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/nginx-body;
    proxy_temp_path {tmp}/nginx-proxy;
    fastcgi_temp_path {tmp}/nginx-fastcgi;
    uwsgi_temp_path {tmp}/nginx-uwsgi;
    scgi_temp_path {tmp}/nginx-scgi;
    upstream gateways {{
        server 127.0.0.1:{a} max_fails=1 fail_timeout=1s;
        server 127.0.0.1:{b} max_fails=1 fail_timeout=1s;
        keepalive 64;
    }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            proxy_pass http://gateways;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_next_upstream error;
            error_page 502 = @cut;
        }}
        location @cut {{ return 599; }}
    }}
}}
"""
CUT = 599


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


class CpuMeter(threading.Thread):
    """CPU seconds each part used during the run, from /proc: our own children by pid (``names``), the
    servers by command line. Known processes are read twice a second, all of /proc every 3 s (a killed
    process counts up to its last reading; one started during the run counts from its first)."""

    PARTS = (("balancer", re.compile(r"^nginx")), ("postgres", re.compile(r"(^|/)postgres[: ]")),
             ("redis", re.compile(r"(^|/)redis-server ")))

    def __init__(self, names: dict[int, str]) -> None:
        super().__init__(daemon=True)
        self.names = names
        self.first: dict[int, tuple[str, int]] = {}
        self.last: dict[int, int] = {}
        self.done = threading.Event()

    def read(self, pid: int) -> int | None:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return int(fields[11]) + int(fields[12])

    def scan(self) -> None:
        for entry in filter(str.isdigit, os.listdir("/proc")):
            pid = int(entry)
            if pid in self.first:
                continue
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            name = self.names.get(pid) or next((n for n, pattern in self.PARTS if pattern.search(cmd)), None)
            ticks = self.read(pid)
            if name is not None and ticks is not None:
                self.first[pid] = (name, ticks)
                self.last[pid] = ticks

    def sample(self) -> None:
        for pid in self.first:
            ticks = self.read(pid)
            if ticks is not None:
                self.last[pid] = ticks

    def run(self) -> None:
        self.scan()
        rounds = 0
        while not self.done.wait(0.5):
            rounds += 1
            self.scan() if rounds % 6 == 0 else self.sample()

    def stop(self) -> dict[str, float]:
        self.sample()
        self.done.set()
        used: Counter[str] = Counter()
        for pid, (name, ticks) in self.first.items():
            used[name] += (self.last[pid] - ticks) / os.sysconf("SC_CLK_TCK")
        return dict(used)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=100.0, help="requests per second (100)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load (20)")
    parser.add_argument("--quota", type=int, default=300, help="the free user's monthly units (300)")
    parser.add_argument("--balancer", choices=("auto", "nginx", "python"), default="auto",
                        help="nginx when installed (auto), or the Python balancer")
    args = parser.parse_args()
    if args.balancer == "auto":
        args.balancer = "nginx" if shutil.which("nginx") else "python"
    elif args.balancer == "nginx" and not shutil.which("nginx"):
        raise SystemExit("nginx is not installed (apt-get install nginx-light), or use --balancer python")
    pg, rd = PostgresServer(), RedisServer()
    tmp = Path(tempfile.mkdtemp(prefix="bench_gateway_load_"))
    procs: list[subprocess.Popen[bytes]] = []
    previous = signal.signal(signal.SIGTERM, lambda sig, frame: sys.exit(143))  # a timeout's kill still cleans up
    try:
        run(args, pg, rd, tmp, procs)
    finally:
        signal.signal(signal.SIGTERM, previous)
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


#: of every ten requests, eight are the paid user's and two the free user's (kinds FREE and up)
FREE = 8


def requests_for(tokens: list[str], host: str) -> list[bytes]:
    """Search and scrape alternating: four pairs from the paid user, then one pair from the free user."""
    ops = [("/v2/search", b'{"query": "load test", "limit": 3}'),
           ("/v2/scrape", b'{"url": "https://example.com/", "formats": ["markdown"]}')]
    users = [tokens[0]] * (FREE // 2) + [tokens[1]]
    return [loadgen.request_bytes("POST", "/relay/firecrawl" + path, host, body,
                                  {"authorization": f"Bearer {token}", "content-type": "application/json"})
            for token in users for path, body in ops]


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
    lb_port = free_port()
    if args.balancer == "nginx":
        (tmp / "nginx.conf").write_text(NGINX.format(tmp=tmp, a=ports[0], b=ports[1], port=lb_port))
        procs.append(subprocess.Popen(["nginx", "-p", str(tmp), "-c", str(tmp / "nginx.conf"), "-e",
                                       str(tmp / "nginx-error.log")], stdout=subprocess.DEVNULL))
        wait_ready(f"http://127.0.0.1:{lb_port}/readyz")
    print(f"load: {args.rate:g} req/s for {args.duration:g} s through {args.balancer} to 2 gateways "
          f"(PostgreSQL + Redis), {os.cpu_count()} CPUs; gateway B is killed (SIGKILL) at {args.duration / 2:g} s")
    meter = CpuMeter({os.getpid(): "client", procs[0].pid: "vendor fake", gws[0].pid: "gateway A",
                      gws[1].pid: "gateway B (until killed)"})
    kill_at = args.duration / 2
    events: dict[str, float] = {}

    def at(now: float) -> None:  # called once a second by the client
        if "killed" not in events and now >= kill_at:
            gws[1].send_signal(signal.SIGKILL)
            events["killed"] = now
        elif "killed" in events and "restarted" not in events and now >= events["killed"] + 3:
            gws[1].wait()
            gws.append(start_gateway(homes[1], ports[1], config, env))
            procs.append(gws[-1])
            meter.names[gws[-1].pid] = "gateway B (restarted: start-up, journal replay, serving)"
            events["restarted"] = now

    async def scenario() -> list[loadgen.Result]:
        server = None
        port = lb_port
        if args.balancer == "python":
            server = await asyncio.start_server(Balancer(ports).handle, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
        try:
            return await loadgen.drive("127.0.0.1", port, requests_for(tokens, f"127.0.0.1:{port}"), args.rate,
                                       args.duration, at=at)
        finally:
            if server is not None:
                server.close()

    meter.start()
    results: list[loadgen.Result] = loadgen.run(scenario)  # type: ignore[assignment]
    cpu = meter.stop()
    wait_ready(f"http://127.0.0.1:{ports[1]}/readyz")  # B again, its journal replayed
    for url in (f"http://127.0.0.1:{p}" for p in ports):  # each writes out its pending rows for the usage view
        httpx.get(url + "/api/usage", headers={"authorization": f"Bearer {tokens[0]}"}, timeout=30)
    time.sleep(1)
    report(args, pg, dbname, results, cpu)


def report(args: argparse.Namespace, pg: PostgresServer, dbname: str, results: list[loadgen.Result],
           cpu: dict[str, float]) -> None:
    half = args.duration / 2
    answered = [r for r in results if isinstance(r.outcome, int) and r.outcome != CUT]
    statuses = Counter(r.outcome for r in results)
    print(f"sent {len(results)}, answered by a gateway {len(answered)}, statuses {dict(statuses)} "
          f"({CUT}: cut in flight by the kill, said by the balancer)")
    for name, part in (("before the kill", [r for r in answered if r.due < half]),
                       ("after the kill", [r for r in answered if r.due >= half])):
        lat = [r.latency_ms for r in part]
        print(f"  {name:16} {len(part):6} answers  p50 {pct(lat, .5):8.2f} ms  p99 {pct(lat, .99):8.2f} ms")
    lat = [r.latency_ms for r in answered]
    print(f"  {'all':16} {len(answered):6} answers  p50 {pct(lat, .5):8.2f} ms  p99 {pct(lat, .99):8.2f} ms")
    total = sum(cpu.values())
    print(f"CPU during the run: {total:.1f} s of the {args.duration * (os.cpu_count() or 1):.0f} s the machine had, "
          f"{total / len(results) * 1e6:.0f} µs per request sent:")
    for name, seconds in sorted(cpu.items(), key=lambda kv: -kv[1]):
        print(f"  {name:58} {seconds:6.2f} s  {seconds / len(results) * 1e6:6.0f} µs/request")
    rows, distinct = pg.admin("SELECT COUNT(*), COUNT(DISTINCT rid) FROM usage", dbname)[0]
    free_units = pg.admin("SELECT COALESCE(SUM(g.units), 0) FROM usage g JOIN users u ON u.id = g.user_id "
                          "WHERE u.name = 'freeloader' AND g.status = 200", dbname)[0][0]
    used = pg.admin("SELECT COALESCE(SUM(used), 0) FROM quota_counters", dbname)[0][0]
    free = [r for r in answered if r.kind >= FREE]
    free_ok = sum(1 for r in free if r.outcome == 200)
    print(f"usage rows {rows} (unique ids {distinct}) for {len(answered)} answers; quota counter {used}, "
          f"free-plan units recorded {free_units}, free-plan 200s the client saw {free_ok}")
    unexpected = [r for r in answered if r.outcome != 200 and not (r.outcome == 429 and r.kind >= FREE)]
    checks = {
        "no usage row lost (a row for every answer)": rows >= len(answered),
        "no usage row twice (every rid unique)": distinct == rows,
        "nothing double counted (quota counter == free-plan units recorded, give or take calls cut by the kill)":
            0 <= used - free_units <= len(results) - len(answered),
        "the free user got at most the quota": free_units <= args.quota,
        "no gateway answer was an error (other than the free user's 429)": not unexpected,
        "every request ended (an answer, a cut or a transport error)": len(results) == int(args.rate * args.duration),
    }
    print(f"  usage rows beyond the answers the client saw: {rows - len(answered)} (calls on B when it was "
          f"killed); not answered by a gateway: {len(results) - len(answered)}")
    for name, ok in checks.items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    if not all(checks.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
