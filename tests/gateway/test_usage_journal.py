"""The usage journal (storage/usage_journal.py) against a real throw-away PostgreSQL: rows recorded by a process
that is then killed (SIGKILL, its database unreachable) are inserted by the next process, once, and replaying
the same rows again counts nothing twice. Then a real gateway on PostgreSQL + Redis: revocations by hand in
SQL and by the CLI with or without Redis reach cached token rows on the very next request."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx

from fakes.pg_redis import PostgresServer, RedisServer, gateways, hermes
from fakes.vendors import ServerThread
from hermes.toolgateway.storage.pg_async import AsyncPool
from hermes.toolgateway.storage.postgres import PostgresDatabase
from hermes.toolgateway.storage.usage_journal import UsageWriter, insert_params, insert_sql

SRC = str(Path(__file__).resolve().parents[2] / "src")

#: a process whose database is down: it journals 50 rows, says so, and waits to be killed
_DOOMED = textwrap.dedent("""
    import asyncio, os, sys
    from pathlib import Path
    from hermes.toolgateway.storage.usage_journal import UsageWriter

    async def down(rows):
        raise ConnectionError("the database is down")

    async def main():
        writer = UsageWriter(Path(sys.argv[1]), down, interval=0.01)
        await writer.start()
        for i in range(50):
            writer.record([f"rid-{i}", 1767225600.0 + i, int(sys.argv[2]), None, "firecrawl", "searxng", "search",
                           1, 0.5, 200, 1.25])
        await asyncio.sleep(0.1)  # the flusher tried (and failed) at least once
        print("recorded", flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
""")


def test_rows_of_a_killed_process_are_inserted_once(tmp_path: Path, postgres_server: PostgresServer) -> None:
    url = postgres_server.database()
    db = PostgresDatabase(url)
    db.execute("INSERT INTO users (uid, name, plan, created) VALUES ('usr_1', 'ann', 'paid', 0)")
    user_id = int(db.execute("SELECT id FROM users").fetchone()[0])
    db.close()
    journal = tmp_path / "journal"
    doomed = subprocess.Popen([sys.executable, "-c", _DOOMED, str(journal), str(user_id)], stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": SRC})
    assert doomed.stdout is not None and doomed.stdout.readline().strip() == "recorded"
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(10)
    doomed.stdout.close()
    segments = sorted(journal.glob("usage-*.jsonl"))
    assert segments, "the rows are in the journal"
    keep = tmp_path / "copy"
    keep.mkdir()
    for path in segments:
        shutil.copy2(path, keep / path.name)

    async def replay(directory: Path) -> tuple[int, int]:
        pool = AsyncPool(url)
        statement = insert_sql()

        async def insert(rows: object) -> None:
            await pool.executemany(statement, [insert_params(r) for r in rows])  # type: ignore[attr-defined]

        writer = UsageWriter(directory, insert)
        replayed = await writer.start()
        await writer.close()
        count = await pool.fetchone("SELECT COUNT(*), SUM(units), COUNT(DISTINCT rid) FROM usage")
        await pool.close()
        return replayed, tuple(count)  # type: ignore[return-value]

    replayed, counts = asyncio.run(replay(journal))
    assert replayed == 50 and counts == (50, 50, 50)
    assert not list(journal.glob("usage-*.jsonl"))  # replayed segments are deleted
    assert asyncio.run(replay(journal)) == (0, (50, 50, 50))  # nothing left to replay
    # the same segments once more (a crash right after their batch committed): nothing is counted twice
    replayed, counts = asyncio.run(replay(keep))
    assert replayed == 50 and counts == (50, 50, 50)


def test_revocation_reaches_cached_rows_at_once(tmp_path: Path, postgres_server: PostgresServer,
                                               redis_server: RedisServer, pages: ServerThread) -> None:
    db_url = postgres_server.database()
    dbname = db_url.rsplit("/", 1)[1]
    body = {"url": pages.url + "/article", "formats": ["markdown"]}
    with gateways(tmp_path, db_url, redis_server.url, rate=100000, burst=100000) as gw:
        gw.cli("users", "add", "ann", "--plan", "paid")
        gw.cli("users", "add", "bob", "--plan", "paid")
        tokens = [gw.cli("tokens", "issue", "ann").stdout.split()[-1] for _ in range(3)]
        bob = gw.cli("tokens", "issue", "bob").stdout.split()[-1]

        def status(token: str, url: str) -> tuple[int, str]:
            resp = httpx.post(f"{url}/relay/firecrawl/v2/scrape", json=body,
                              headers={"authorization": f"Bearer {token}"}, timeout=30)
            return resp.status_code, resp.json().get("code", "")

        for token in (*tokens, bob):  # every row is cached now, on both processes
            for url in gw.urls:
                assert status(token, url)[0] == 200
        # 1. by hand in SQL (no hermes, no Redis): the database's notification drops the cached rows
        postgres_server.admin("UPDATE access_tokens SET revoked = 1 WHERE jti = (SELECT jti FROM access_tokens "
                              "ORDER BY issued LIMIT 1)", dbname)
        assert [status(tokens[0], url) for url in gw.urls] == [(401, "token_revoked")] * 2
        # 2. the CLI with the Redis URL: the revocation version moves in the same step
        hermes(gw.homes[0], "tokens", "revoke", tokens[1], "--database-url", db_url, "--redis-url", redis_server.url)
        assert [status(tokens[1], url) for url in gw.urls] == [(401, "token_revoked")] * 2
        # 3. a disabled user: every cached token of theirs is refused; others are unaffected
        gw.cli("users", "disable", "bob")
        assert [status(bob, url) for url in gw.urls] == [(403, "account_disabled")] * 2
        assert [status(tokens[2], url)[0] for url in gw.urls] == [200, 200]
    # every answered call is recorded (the journal is written out at shutdown); refusals before metering are not
    assert postgres_server.admin("SELECT COUNT(*), SUM(units) FROM usage WHERE status = 200", dbname) == [(10, 10)]


def test_a_journal_of_the_layout_before_per_database_folders_is_replayed(tmp_path: Path,
                                                                          postgres_server: PostgresServer) -> None:
    """Segments a gateway on PostgreSQL left in ``<state dir>/usage-journal/`` itself (the layout before
    per-database folders, owner = pid) are replayed into that database by the next start, and deleted."""
    from fakes.vendors.harness import GatewayHarness
    from hermes.toolgateway.storage.usage_journal import journal_dir

    url = postgres_server.database()
    with GatewayHarness(tmp_path, database_url=url) as gw:
        user_id = gw.user("ann").id
        state = gw.config.state_dir
    legacy = state / "usage-journal"
    line = f'["old-1",1767225600.0,{user_id},null,"firecrawl","firecrawl","search",1,0.0,200,1.5]\n'
    (legacy / "usage-424242-1.jsonl").write_text(line)
    (legacy / "usage-424242.lock").write_text("")
    with GatewayHarness(tmp_path, database_url=url):
        pass
    db = PostgresDatabase(url)
    assert [tuple(r) for r in db.execute("SELECT rid, units FROM usage").fetchall()] == [("old-1", 1)]
    db.close()
    assert not (legacy / "usage-424242-1.jsonl").exists() and not (legacy / "usage-424242.lock").exists()
    from hermes.store.postgres import mask_url

    assert journal_dir(state, mask_url(url)).is_dir()  # the new layout, next to it
