"""Quotas and rate limits: exact under concurrency (threads over HTTP, and processes sharing the file)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fakes.vendors import FakeFirecrawl, ServerThread
from fakes.vendors.harness import GatewayHarness
from hermes.toolgateway.storage.metering import Meter, QuotaExceeded, month_period, next_period_start, row_id
from hermes.toolgateway.storage.ratelimit import RateLimiter
from hermes.toolgateway.storage.sqlite import connect

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture(scope="module")
def fake() -> Iterator[tuple[FakeFirecrawl, ServerThread]]:
    vendor = FakeFirecrawl()
    with ServerThread(vendor.app) as server:
        yield vendor, server


def test_free_allowance_is_exact_under_200_concurrent_requests(fake: tuple[FakeFirecrawl, ServerThread],
                                                               tmp_path: Path) -> None:
    vendor, server = fake
    harness = GatewayHarness(tmp_path, plans={"free": {"monthly": {"firecrawl": 50}}},
                             rate_limit={"per_second": 0, "burst": 0},
                             firecrawl={"firecrawl_url": server.url, "firecrawl_api_key": "fc-test"})
    with harness:
        harness.user("fred", "free")
        tokens = [harness.token("fred") for _ in range(4)]  # several tokens: the allowance is per user
        before = len(vendor.requests)
        started = time.time()
        barrier = threading.Barrier(200)
        results: list[httpx.Response] = []
        lock = threading.Lock()

        client = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=200, max_keepalive_connections=200))

        def one(i: int) -> None:
            barrier.wait()
            resp = client.post(harness.relay_url("firecrawl") + "/v2/search", json={"query": f"q{i}", "limit": 1},
                               headers={"authorization": f"Bearer {tokens[i % 4]}"})
            with lock:
                results.append(resp)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(200)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        client.close()
        statuses = Counter(r.status_code for r in results)
        assert statuses == {200: 50, 429: 150}
        assert len(vendor.requests) - before == 50  # refused calls never reach the vendor
        refused = [r for r in results if r.status_code == 429]
        assert all(r.json()["code"] == "quota_exceeded" for r in refused)
        for r in refused:
            assert 0 < int(r.headers["retry-after"]) <= int(next_period_start(started) - started) + 2
        usage = httpx.get(harness.url + "/api/usage", headers={"authorization": f"Bearer {tokens[0]}"}).json()
        assert usage["allowances"]["firecrawl"]["used"] == 50
        assert usage["allowances"]["firecrawl"]["limit"] == 50
        assert usage["totals"]["units"] == 50 and usage["totals"]["calls"] == 200


def test_failed_calls_are_refunded(fake: tuple[FakeFirecrawl, ServerThread], tmp_path: Path) -> None:
    vendor, server = fake
    harness = GatewayHarness(tmp_path, plans={"free": {"monthly": {"firecrawl": 2}}},
                             limits={"vendor_retries": 0},
                             firecrawl={"firecrawl_url": server.url, "firecrawl_api_key": "fc-test"})
    with harness:
        harness.user("fred", "free")
        auth = {"authorization": f"Bearer {harness.token('fred')}"}
        url = harness.relay_url("firecrawl") + "/v2/search"
        vendor.fail_next = [500, 500, 500]
        for _ in range(3):
            assert httpx.post(url, json={"query": "x"}, headers=auth).status_code == 502
        assert httpx.post(url, json={"limit": 3}, headers=auth).status_code == 400
        assert [httpx.post(url, json={"query": "x"}, headers=auth).status_code for _ in range(3)] == [200, 200, 429]


_WORKER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {src!r})
    from pathlib import Path
    from hermes.toolgateway.storage.sqlite import connect
    from hermes.toolgateway.storage.metering import Meter, QuotaExceeded
    conn = connect(Path({db!r}))
    meter = Meter(conn)
    while time.time() < {start}:
        time.sleep(0.001)
    ok = 0
    for _ in range(60):
        try:
            meter.reserve(1, "firecrawl", 1, 100, time.time())
            ok += 1
        except QuotaExceeded:
            pass
    print(ok)
""")


def test_quota_is_exact_across_processes_sharing_the_file(tmp_path: Path) -> None:
    db = tmp_path / "gateway.db"
    conn = connect(db)
    conn.execute("INSERT INTO users (uid, name, plan, created) VALUES ('usr_1', 'fred', 'free', 0)")
    start = time.time() + 1.0
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER.format(src=SRC, db=str(db), start=start)],
                              stdout=subprocess.PIPE, text=True) for _ in range(4)]
    granted = sum(int(p.communicate(timeout=60)[0].strip()) for p in procs)
    assert granted == 100
    assert Meter(conn).used(1, "firecrawl", month_period(time.time())) == 100
    conn.close()


def test_meter_reserve_refund_and_periods(tmp_path: Path) -> None:
    conn = connect(tmp_path / "g.db")
    conn.execute("INSERT INTO users (uid, name, plan, created) VALUES ('usr_1', 'fred', 'free', 0)")
    meter = Meter(conn)
    jan = 1_736_000_000.0  # 2025-01-04
    r = meter.reserve(1, "fal", 3, 5, jan)
    with pytest.raises(QuotaExceeded) as info:
        meter.reserve(1, "fal", 3, 5, jan)
    assert info.value.used == 3 and info.value.limit == 5
    assert info.value.retry_after == int(next_period_start(jan) - jan) + 1
    meter.refund(r)
    meter.reserve(1, "fal", 5, 5, jan)
    with pytest.raises(QuotaExceeded):
        meter.reserve(1, "fal", 6, 5, jan + 40 * 86400)  # more than the whole allowance
    assert meter.reserve(1, "fal", 5, 5, jan + 40 * 86400).period == "2025-02"  # a new month starts at zero
    assert meter.reserve(1, "fal", 1000, None, jan).units == 0  # unlimited: nothing reserved
    assert next_period_start(1_734_000_000.0) == 1_735_689_600.0  # December → 1 January (UTC)
    conn.close()


def test_month_names_are_remembered_only_within_their_month() -> None:
    jan_start = 1_735_689_600.0  # 2025-01-01T00:00:00Z
    for now, name in ((jan_start + 86400, "2025-01"), (jan_start - 0.001, "2024-12"), (jan_start, "2025-01"),
                      (1_738_367_999.999, "2025-01"), (1_738_368_000.0, "2025-02"), (jan_start + 5, "2025-01"),
                      (951_782_400.0, "2000-02"), (4_102_444_800.0, "2100-01")):
        assert month_period(now) == name == time.strftime("%Y-%m", time.gmtime(now)), now


def test_usage_row_ids_are_unique_and_a_forked_child_draws_its_own() -> None:
    ids = [row_id() for _ in range(1000)]
    assert len(set(ids)) == 1000 and all(re.fullmatch(r"[0-9a-f]{24}", rid) for rid in ids)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its ids must not repeat the parent's next ones
        os.close(read)
        os.write(write, " ".join(row_id() for _ in range(10)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read().split()
    os.waitpid(pid, 0)
    parent = [row_id() for _ in range(10)]
    assert len(child) == 10 and not set(child) & set(parent) and child[0][:16] != parent[0][:16]


def test_rate_limit_per_token(fake: tuple[FakeFirecrawl, ServerThread], tmp_path: Path) -> None:
    harness = GatewayHarness(tmp_path, rate_limit={"per_second": 0.5, "burst": 3},
                             firecrawl={"firecrawl_url": fake[1].url, "firecrawl_api_key": "fc-test"})
    with harness:
        harness.user("alice", "paid")
        first, second = harness.token("alice"), harness.token("alice")
        url = harness.relay_url("firecrawl") + "/v2/search"
        codes = [httpx.post(url, json={"query": "x"}, headers={"authorization": f"Bearer {first}"}).status_code
                 for _ in range(3)]
        assert codes == [200, 200, 200]
        # the same credential, differently spelled: still the same bucket
        limited = httpx.post(url, json={"query": "x"}, headers={"authorization": f"bearer   {first}"})
        assert limited.status_code == 429 and limited.json()["code"] == "rate_limited"
        assert 1 <= int(limited.headers["retry-after"]) <= 2
        # another token has its own bucket
        assert httpx.post(url, json={"query": "x"}, headers={"authorization": f"Bearer {second}"}).status_code == 200


def test_rate_limiter_refills() -> None:
    now = [0.0]
    limiter = RateLimiter(2.0, 2, clock=lambda: now[0], max_keys=1)
    assert limiter.acquire("a") == 0 and limiter.acquire("a") == 0
    assert limiter.acquire("a") == pytest.approx(0.5)
    now[0] += 0.5
    assert limiter.acquire("a") == 0
    assert limiter.acquire("b") == 0  # pruning the full bucket of nobody keeps working
    assert RateLimiter(0, 0).acquire("x") == 0.0
    assert RateLimiter.retry_after(0.2) == 1 and RateLimiter.retry_after(2.1) == 3
