"""Several gateway processes behind one address: PostgreSQL holds accounts, tokens, usage and quotas,
Redis the rate-limit buckets. Real ``hermes toolgateway serve`` subprocesses, a throw-away PostgreSQL
cluster and redis-server (fixtures in conftest.py, helpers in fakes/pg_redis.py)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakes.pg_redis import Gateways, PostgresServer, RedisServer, free_port, gateways, hermes
from fakes.vendors import ServerThread
from fakes.vendors.harness import GatewayHarness
from hermes.errors import ConfigError
from hermes.toolgateway.config import load_config
from hermes.toolgateway.storage.urls import mask_url

SRC = str(Path(__file__).resolve().parents[2] / "src")


def scrape(pages: ServerThread) -> dict[str, Any]:
    return {"url": pages.url + "/article", "formats": ["markdown"]}


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def assert_no_secret(texts: list[str], *secrets: str) -> None:
    joined = "\n".join(texts)
    for secret in secrets:
        assert secret not in joined
    assert "Traceback" not in joined


# -- the acceptance test: exact quota over two processes ------------------------------------------------
def test_quota_exact_across_two_gateways(tmp_path: Path, postgres_server: PostgresServer,
                                         redis_server: RedisServer, pages: ServerThread) -> None:
    db_url = postgres_server.database()
    with gateways(tmp_path, db_url, redis_server.url, rate=100000, burst=100000) as gw:
        gw.cli("users", "add", "fred", "--plan", "free")
        tokens = [gw.cli("tokens", "issue", "fred").stdout.split()[-1] for _ in range(4)]

        async def burst() -> list[httpx.Response]:
            # all 1,000 requests start at once; 64 of them are on the wire at any moment (more sockets only
            # slow two shared cores down, and httpx's pool is slow with a thousand waiters in its queue)
            wire = asyncio.Semaphore(64)
            limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
            async with httpx.AsyncClient(timeout=90, limits=limits) as client:

                async def one(i: int) -> httpx.Response:
                    async with wire:
                        return await client.post(f"{gw.urls[i % 2]}/relay/firecrawl/v2/scrape", json=scrape(pages),
                                                 headers=bearer(tokens[i % 4]))

                return await asyncio.gather(*(one(i) for i in range(1000)))

        responses = asyncio.run(burst())
        assert Counter(r.status_code for r in responses) == {200: 100, 429: 900}
        refused = [r for r in responses if r.status_code == 429]
        assert {r.json()["code"] for r in refused} == {"quota_exceeded"}
        assert all(int(r.headers["retry-after"]) >= 1 for r in refused)
        assert all("Test Article" in r.json()["data"]["metadata"]["title"] for r in responses if r.status_code == 200)

        # the usage rows are journalled before each answer and inserted in batches every few milliseconds
        deadline = time.monotonic() + 15
        while True:
            rows = postgres_server.admin("SELECT COUNT(*), SUM(units), SUM(CASE WHEN status = 200 THEN 1 ELSE 0 "
                                         "END) FROM usage", db_url.rsplit("/", 1)[1])
            if rows[0][0] >= 1000 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert rows == [(1000, 100, 100)]
        assert postgres_server.admin("SELECT used FROM quota_counters", db_url.rsplit("/", 1)[1]) == [(100,)]
        for url in gw.urls:  # either process reports the same shared usage
            usage = httpx.get(url + "/api/usage", headers=bearer(tokens[0])).json()
            assert usage["allowances"]["firecrawl"]["used"] == 100
            assert usage["totals"]["calls"] == 1000 and usage["totals"]["units"] == 100
    assert "rate limits in redis://:***@" in "\n".join(gw.output)
    assert_no_secret(gw.output, postgres_server.password, redis_server.password)


# -- accounts, tokens and the rate limiter on two processes ---------------------------------------------
@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, postgres_server: PostgresServer,
           redis_server: RedisServer) -> Iterator[Gateways]:
    """Two gateways with a small shared bucket: 4 requests per token, refilled at one per 100 s (so a loaded
    machine, where eight requests can take seconds, does not refill it mid-test)."""
    with gateways(tmp_path_factory.mktemp("shared"), postgres_server.database(), redis_server.url,
                  rate=0.01, burst=4) as group:
        yield group
    assert_no_secret(group.output, postgres_server.password, redis_server.password)


def test_cli_accounts_and_revocation_across_processes(shared: Gateways, pages: ServerThread,
                                                      postgres_server: PostgresServer) -> None:
    a, b = shared.urls
    shared.cli("users", "add", "alice", "--plan", "paid")
    # the environment variable works like the flag
    issued = hermes(shared.homes[0], "tokens", "issue", "alice", env={"HERMES_GATEWAY_DATABASE_URL": shared.db_url})
    token = issued.stdout.split()[-1]
    assert httpx.post(f"{a}/relay/firecrawl/v2/scrape", json=scrape(pages), headers=bearer(token)).status_code == 200
    assert httpx.post(f"{b}/relay/firecrawl/v2/scrape", json=scrape(pages), headers=bearer(token)).status_code == 200
    listing = shared.cli("tokens", "list", "alice", "--json").stdout
    assert '"state": "active"' in listing and token not in listing
    shared.cli("tokens", "revoke", token)
    for url in (b, a):  # refused at once, on both processes
        resp = httpx.post(f"{url}/relay/firecrawl/v2/scrape", json=scrape(pages), headers=bearer(token))
        assert resp.status_code == 401 and resp.json()["code"] == "token_revoked"
    # a disabled user is refused everywhere on the next request
    other = shared.cli("tokens", "issue", "alice").stdout.split()[-1]
    shared.cli("users", "disable", "alice")
    resp = httpx.post(f"{b}/relay/firecrawl/v2/scrape", json=scrape(pages), headers=bearer(other))
    assert resp.status_code == 403 and resp.json()["code"] == "account_disabled"
    shared.cli("users", "enable", "alice")
    assert_no_secret(shared.output, postgres_server.password)


def test_device_login_and_refresh_rotation_across_processes(shared: Gateways, pages: ServerThread) -> None:
    a, b = shared.urls
    shared.cli("users", "add", "dora", "--plan", "paid")
    grant = httpx.post(f"{a}/api/oauth/device/code", data={"client_id": "hermes-cli", "scope": "tool:invoke"}).json()
    shared.cli("device", "approve", grant["user_code"], "dora")
    poll = {"grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": grant["device_code"],
            "client_id": "hermes-cli"}
    first = httpx.post(f"{b}/api/oauth/token", data=poll).json()
    assert first["token_type"] == "Bearer"
    assert httpx.post(f"{a}/api/oauth/token", data=poll).json()["error"] == "invalid_grant"  # exchanged once
    refresh = {"grant_type": "refresh_token", "client_id": "hermes-cli"}
    second = httpx.post(f"{a}/api/oauth/token", data=refresh,
                        headers={"x-nous-refresh-token": first["refresh_token"]}).json()
    resp = httpx.post(f"{b}/relay/firecrawl/v2/scrape", json=scrape(pages), headers=bearer(second["access_token"]))
    assert resp.status_code == 200
    reused = httpx.post(f"{b}/api/oauth/token", data=refresh, headers={"x-nous-refresh-token": first["refresh_token"]})
    assert reused.status_code == 400 and reused.json()["error"] == "refresh_token_reused"
    resp = httpx.post(f"{a}/relay/firecrawl/v2/scrape", json=scrape(pages), headers=bearer(second["access_token"]))
    assert resp.status_code == 401 and resp.json()["code"] == "token_revoked"


def test_rate_limit_bucket_is_shared_by_both_processes(shared: Gateways, pages: ServerThread) -> None:
    shared.cli("users", "add", "rita", "--plan", "paid")
    token, spare = (shared.cli("tokens", "issue", "rita").stdout.split()[-1] for _ in range(2))
    codes, retry = [], []
    for i in range(8):  # alternating processes: one bucket of 4, not one per process
        resp = httpx.post(f"{shared.urls[i % 2]}/relay/firecrawl/v2/scrape", json=scrape(pages),
                          headers=bearer(token))
        codes.append(resp.status_code)
        if resp.status_code == 429:
            assert resp.json()["code"] == "rate_limited"
            retry.append(int(resp.headers["retry-after"]))
    assert codes == [200] * 4 + [429] * 4
    assert all(1 <= r <= 100 for r in retry) and len(retry) == 4
    # another token of the same user has its own bucket
    resp = httpx.post(f"{shared.urls[1]}/relay/firecrawl/v2/scrape", json=scrape(pages), headers=bearer(spare))
    assert resp.status_code == 200


def test_lost_database_connection_is_a_503_then_reconnects(shared: Gateways, pages: ServerThread,
                                                           postgres_server: PostgresServer) -> None:
    shared.cli("users", "add", "lena", "--plan", "paid")
    token = shared.cli("tokens", "issue", "lena").stdout.split()[-1]
    url = f"{shared.urls[0]}/relay/firecrawl/v2/scrape"
    assert httpx.post(url, json=scrape(pages), headers=bearer(token)).status_code == 200
    # a token the process has not seen yet: its row must be read (a cached one needs no database: the usage row
    # waits in the journal)
    token = shared.cli("tokens", "issue", "lena").stdout.split()[-1]
    dbname = shared.db_url.rsplit("/", 1)[1]
    killed = postgres_server.admin(
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
        f"WHERE datname = '{dbname}' AND application_name = 'hermes-toolgateway'")
    assert killed and all(row[0] for row in killed)
    lost = httpx.post(url, json=scrape(pages), headers=bearer(token))
    assert lost.status_code == 503 and lost.json()["code"] == "storage_unavailable"
    assert lost.headers["retry-after"] == "1" and "127.0.0.1" not in lost.text
    assert httpx.post(url, json=scrape(pages), headers=bearer(token)).status_code == 200
    # the process's other connection (portal, usage views) finds out on its next statement, and reconnects too
    usage = f"{shared.urls[0]}/api/usage"
    assert httpx.get(usage, headers=bearer(token)).status_code == 503
    assert httpx.get(usage, headers=bearer(token)).status_code == 200


# -- migrations -----------------------------------------------------------------------------------------
_MIGRATOR = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {src!r})
    from hermes.toolgateway.storage.postgres import PostgresDatabase
    while time.time() < {start}:
        time.sleep(0.001)
    db = PostgresDatabase({url!r})
    print(db.migrated)
    db.close()
""")


def test_migrations_run_once_when_processes_start_together(postgres_server: PostgresServer) -> None:
    from hermes.toolgateway.storage.pg_schema import MIGRATIONS

    url = postgres_server.database()
    start = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, "-c", _MIGRATOR.format(src=SRC, url=url, start=start)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in results]
    applied = sorted(int(out) for out, _ in results)
    assert applied == [0, 0, 0, len(MIGRATIONS)]  # one process migrated, the others found nothing to do
    versions = postgres_server.admin("SELECT version FROM gateway_schema ORDER BY version", url.rsplit("/", 1)[1])
    assert versions == [(v,) for v in range(1, len(MIGRATIONS) + 1)]


# -- Redis down, bad URLs, configuration ------------------------------------------------------------------
def test_redis_down_fails_closed_with_503(tmp_path: Path, pages: ServerThread,
                                          caplog: pytest.LogCaptureFixture) -> None:
    redis = RedisServer()
    try:
        harness = GatewayHarness(tmp_path, redis_url=redis.url, rate_limit={"per_second": 5, "burst": 10},
                                 firecrawl={"scrape": "local", "search": "off", "allow_loopback": True})
        with harness, caplog.at_level(logging.WARNING, logger="hermes.toolgateway"):
            harness.user("alice", "paid")
            auth = bearer(harness.token("alice"))
            url = harness.relay_url("firecrawl") + "/v2/scrape"
            assert httpx.post(url, json=scrape(pages), headers=auth).status_code == 200
            redis.stop()
            for _ in range(2):
                down = httpx.post(url, json=scrape(pages), headers=auth)
                assert down.status_code == 503 and down.json()["code"] == "rate_limiter_unavailable"
                assert redis.password not in down.text and str(redis.port) not in down.text
            ready = httpx.get(harness.url + "/readyz")
            assert ready.status_code == 503 and "Redis" in ready.json()["error"]
            redis.start()
            assert httpx.post(url, json=scrape(pages), headers=auth).status_code == 200
            assert httpx.get(harness.url + "/readyz").status_code == 200
        messages = [r.getMessage() for r in caplog.records if r.name == "hermes.toolgateway"]
        assert any(mask_url(redis.url) in m for m in messages)
        assert all(redis.password not in m for m in messages)
        assert not any(r.exc_info for r in caplog.records)
    finally:
        redis.close()


def test_unreachable_services_are_one_line_errors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = free_port()  # nothing listens there
    secret = "s3cr3t-pw"
    pg = hermes(home, "users", "list", "--database-url", f"postgresql://gw:{secret}@127.0.0.1:{port}/gw",
                check=False)
    assert pg.returncode == 1 and "hermes: error: the gateway database postgresql://gw:***@127.0.0.1" in pg.stderr
    served = hermes(home, "serve", "--port", str(free_port()), "--redis-url", f"redis://:{secret}@127.0.0.1:{port}/0",
                    check=False)
    assert served.returncode == 1 and f"Redis at redis://:***@127.0.0.1:{port}/0 does not answer" in served.stderr
    wrong = hermes(home, "tokens", "list", "--database-url", f"mysql://root:{secret}@db/gw", check=False)
    assert wrong.returncode == 1 and "database_url must be a postgresql:// or postgres:// URL" in wrong.stderr
    assert_no_secret([pg.stdout, pg.stderr, served.stdout, served.stderr, wrong.stdout, wrong.stderr], secret)


def test_config_keys_flags_and_environment(tmp_path: Path) -> None:
    file = tmp_path / "gw.toml"
    file.write_text('database_url = "postgresql://f:filepw@file/db"\nredis_url = "redis://file:6379/0"\n')
    env = {"HERMES_GATEWAY_DATABASE_URL": "postgresql://e:envpw@env/db", "HERMES_GATEWAY_REDIS_URL": "redis://env/1"}
    assert load_config(file, env={}, home=tmp_path).database_url == "postgresql://f:filepw@file/db"
    from_env = load_config(file, env=env, home=tmp_path)
    assert (from_env.database_url, from_env.redis_url) == (env["HERMES_GATEWAY_DATABASE_URL"], "redis://env/1")
    flagged = load_config(file, overrides={"database_url": "postgres://flag/db"}, env=env, home=tmp_path)
    assert flagged.database_url == "postgres://flag/db" and flagged.redis_url == "redis://env/1"
    assert "pw" not in repr(from_env)
    with pytest.raises(ConfigError) as info:
        load_config(None, overrides={"redis_url": "http://:hunter2@redis/0"}, env={}, home=tmp_path)
    assert "hunter2" not in str(info.value) and "***" in str(info.value)
    assert mask_url("postgresql://u:p%40ss@h:5432/db?sslmode=require&password=x") == \
        "postgresql://u:***@h:5432/db?sslmode=require&password=***"
    assert mask_url("redis://localhost:6379/0") == "redis://localhost:6379/0"


# -- one schema, one set of answers on both engines -----------------------------------------------------------
def test_postgres_schema_mirrors_the_sqlite_one(tmp_path: Path, postgres_server: PostgresServer) -> None:
    from hermes.toolgateway.storage.sqlite import connect
    from hermes.toolgateway.storage.sqlite_schema import SQLITE_ONLY_TABLES

    lite = connect(tmp_path / "g.db")
    names = lite.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    tables = sorted(r[0] for r in names if r[0] not in SQLITE_ONLY_TABLES)
    sqlite_columns = {t: [r["name"] for r in lite.execute(f"PRAGMA table_info({t})")] for t in tables}
    sqlite_indexes = sorted(r[0] for r in lite.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                                       "AND name NOT LIKE 'sqlite_%'"))
    lite.close()
    url = postgres_server.database()
    from hermes.toolgateway.storage.postgres import PostgresDatabase

    PostgresDatabase(url).close()
    dbname = url.rsplit("/", 1)[1]
    rows = postgres_server.admin("SELECT table_name, column_name FROM information_schema.columns "
                                 "WHERE table_schema = 'public' AND table_name <> 'gateway_schema' "
                                 "ORDER BY table_name, ordinal_position", dbname)
    pg_columns: dict[str, list[str]] = {}
    for table, column in rows:
        pg_columns.setdefault(str(table), []).append(str(column))
    assert pg_columns == sqlite_columns  # a SQLite migration without its PostgreSQL twin fails here
    pg_indexes = sorted(str(r[0]) for r in postgres_server.admin(
        "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND indexname NOT LIKE '%_pkey' "
        "AND indexname NOT LIKE '%_key'", dbname))
    assert pg_indexes == sqlite_indexes


def test_meter_answers_the_same_on_both_engines(tmp_path: Path, postgres_server: PostgresServer) -> None:
    from hermes.toolgateway.storage.metering import Meter, QuotaExceeded

    answers = []
    for overrides in ({"database": str(tmp_path / "g.db")}, {"database_url": postgres_server.database()}):
        from hermes.toolgateway.services import Gateway

        gw = Gateway(load_config(None, overrides=overrides, env={}, home=tmp_path)).open()
        try:
            user = gw.accounts.add_user("fred", "free").id
            meter: Meter = gw.meter
            jan = 1_736_000_000.5  # 2025-01-04 14:13:20.5 UTC
            held = meter.reserve(user, "fal", 3, 5, jan)
            with pytest.raises(QuotaExceeded) as info:
                meter.reserve(user, "fal", 3, 5, jan)
            meter.refund(held)
            meter.refund(held)  # never below zero
            meter.reserve(user, "fal", 5, 5, jan)
            for i, (status, units) in enumerate([(200, 5), (502, 0), (200, 2), (429, 0)]):
                meter.record(user_id=user, jti="tok_x", category="fal" if i < 2 else "firecrawl", vendor="v",
                             operation="op", units=units, cost=units * 0.25, status=status, latency_ms=1.5 + i,
                             now=jan + i * 86400)
            answers.append((info.value.used, meter.summary(user_id=None, since=0, until=jan + 10 * 86400),
                            meter.daily(user_id=user, since=0, until=jan + 10 * 86400),
                            meter.allowances(user, {"fal": 5, "firecrawl": 7}, jan)))
        finally:
            gw.close_db()
    assert answers[0] == answers[1]
    assert answers[0][2][0] == {"day": "2025-01-04", "category": "fal", "calls": 1, "units": 5, "cost": 1.25}


def test_job_ownership_is_shared_through_postgresql(tmp_path: Path, postgres_server: PostgresServer) -> None:
    """A FAL/Krea job started on one process can be polled on another; nobody can take it over."""
    import asyncio

    from hermes.toolgateway.services import Gateway
    from hermes.toolgateway.storage.jobs import JobTable

    url = postgres_server.database()
    one = Gateway(load_config(None, overrides={"database_url": url}, env={}, home=tmp_path)).open()
    two = Gateway(load_config(None, overrides={"database_url": url}, env={}, home=tmp_path)).open()
    try:
        started = JobTable(lambda: one.conn, "fal-queue")
        polled = JobTable(lambda: two.conn, "fal-queue")

        async def scenario() -> None:
            assert await started.remember("req-1", "usr_a", {"model": "fal-ai/x", "status_url": "https://q/1"})
            assert await polled.get("req-1", "usr_a") == {"model": "fal-ai/x", "status_url": "https://q/1"}
            assert await polled.get("req-1", "usr_b") is None
            assert not await polled.remember("req-1", "usr_b", {"model": "stolen"})
            assert await started.get("req-1", "usr_a") == {"model": "fal-ai/x", "status_url": "https://q/1"}

        asyncio.run(scenario())
    finally:
        one.close_db()
        two.close_db()


# -- values PostgreSQL cannot store ------------------------------------------------------------------------
def test_nul_characters_are_400_not_500_on_postgresql(shared: Gateways, postgres_server: PostgresServer) -> None:
    from hermes.toolgateway.storage.postgres import InvalidValue, PostgresDatabase

    a = shared.urls[0]  # (the other one may still hold the connection the test above cut)
    resp = httpx.post(f"{a}/api/oauth/device/code", data={"client_id": "hermes\x00cli"})
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_request", resp.text
    # past the OAuth checks, the storage layer answers 400 for any value PostgreSQL refuses
    grant = httpx.post(f"{a}/api/oauth/device/code", data={"client_id": "hermes-cli"}).json()
    admin = (shared.homes[0] / "toolgateway" / "admin_token").read_text().strip()
    form = {"user_code": grant["user_code"], "admin_token": admin, "user": "nobody\x00"}
    resp = httpx.post(f"{a}/device", data=form)
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_request", resp.text
    db = PostgresDatabase(postgres_server.database())
    try:
        with pytest.raises(InvalidValue) as info:
            db.execute("SELECT ?::text", ("a\x00b",))
        assert info.value.status == 400 and postgres_server.password not in str(info.value)
        assert db.execute("SELECT 1").fetchone()[0] == 1  # the connection is still fine
    finally:
        db.close()
    assert_no_secret(shared.output, postgres_server.password)
