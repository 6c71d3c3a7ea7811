"""``hermes toolgateway migrate --to postgresql://…``: a SQLite gateway database copied into a real throw-away
PostgreSQL (fixtures in tests/conftest.py), idempotent and verified; then a gateway runs on the copy."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from fakes.pg_redis import PostgresServer, hermes
from hermes.toolgateway.config import load_config
from hermes.toolgateway.services import Gateway
from hermes.toolgateway.storage.connector_store import ConnectorStore
from hermes.toolgateway.storage.copy_to_pg import checksum, source_tables
from hermes.toolgateway.storage.jobs import JobTable
from hermes.toolgateway.storage.uploads import UploadStore, new_upload_id

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


def fill_every_table(home: Path) -> Path:
    """A SQLite gateway database with rows in every table, written through the gateway's own stores."""
    gw = Gateway(load_config(None, home=home, env={})).open()
    try:
        acc, oauth, meter = gw.accounts, gw.oauth, gw.meter
        alice = acc.add_user("alice", "free")
        bob = acc.add_user("bob", "paid", plan_expires=2_000_000_000.5)
        acc.set_disabled("bob", True)
        acc.issue_access_token(alice, ttl=3600)
        acc.revoke(acc.issue_access_token(alice, ttl=60).jti)
        grant = oauth.start_device("cli", None)  # → device code, then a token family, refresh token and token
        oauth.decide(grant.user_code, alice, True)
        oauth.poll(grant.device_code, "cli")
        oauth.start_device("cli", "tool:invoke")  # a pending one
        oauth.create_login_link(alice)
        meter.reserve(alice.id, "firecrawl", 3, 100, 1_767_225_600.25)
        for i in range(1200):  # more than one insert batch
            meter.record(user_id=alice.id if i % 3 else bob.id, jti=None if i % 7 == 0 else f"j{i}",
                         category="firecrawl", vendor="searxng", operation="search", units=1, cost=0.001 * i,
                         status=200 if i % 5 else 502, latency_ms=1.0 + i / 3, now=1_767_225_600.0 + i)
        ConnectorStore(gw.conn, gw.clock).add(alice.id, "gmail", name="work", display_name="alice@work.example")
        UploadStore(gw.conn, home / "uploads").add(user_id=alice.id, vendor="fal", filename="a.png",
                                                   content_type="image/png", ext="png", data=PNG,
                                                   now=gw.clock(), ttl=3600, upload_id=new_upload_id())
        asyncio.run(JobTable(lambda: gw.conn, "fal-queue").remember("req-1", alice.uid, {"model": "fal-ai/x"}))
        db_path = gw.config.db_path
    finally:
        gw.close_db()
    with sqlite3.connect(db_path) as conn:
        for table in source_tables(conn):
            assert conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0] > 0, f"{table} is empty"
    return db_path


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("sqlite-gw")
    fill_every_table(home)
    return home


def table_lines(stdout: str) -> dict[str, list[str]]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("TABLE"))
    return {line.split()[0]: line.split() for line in lines[start + 1:-1]}


def test_migrate_copies_every_table_once_and_verifies(source: Path, postgres_server: PostgresServer) -> None:
    url = postgres_server.database()
    first = hermes(source, "migrate", "--to", url)
    assert postgres_server.password not in first.stdout + first.stderr  # the URL is printed masked
    with sqlite3.connect(source / "toolgateway" / "gateway.db") as conn:
        tables = source_tables(conn)
        counts = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
    assert tables.index("users") < tables.index("access_tokens") < tables.index("refresh_tokens")
    rows = table_lines(first.stdout)
    assert set(rows) == set(tables) and len(tables) >= 11
    for table, cols in rows.items():  # TABLE SOURCE COPIED ALREADY TARGET CHECKSUM match
        assert cols[1:5] == [str(counts[table]), str(counts[table]), "0", str(counts[table])], cols
        assert cols[-1] == "match"
    assert first.stdout.splitlines()[-1].startswith(f"all {len(tables)} tables match")
    db = url.rsplit("/", 1)[1]
    assert postgres_server.admin("SELECT COUNT(*), SUM(units) FROM usage", db) == [(1200, 1200)]

    second = hermes(source, "migrate", "--to", url)  # idempotent: nothing copied twice
    for table, cols in table_lines(second.stdout).items():
        assert cols[1:5] == [str(counts[table]), "0", str(counts[table]), str(counts[table])], cols
    assert second.stdout.splitlines()[-1].endswith(", 0 copied now")
    assert postgres_server.admin("SELECT COUNT(*) FROM usage", db) == [(1200,)]

    # the copy is a working gateway database: the tokens are there, and new rows get fresh ids
    env = {"HERMES_GATEWAY_DATABASE_URL": url}
    listed = hermes(source, "tokens", "list", "alice", env=env).stdout
    assert listed.count("revoked") == 1 and listed.count("active") == 2
    hermes(source, "users", "add", "carol", "--plan", "paid", env=env)
    ids = postgres_server.admin("SELECT name, id FROM users ORDER BY id", db)
    assert [name for name, _ in ids] == ["alice", "bob", "carol"] and ids[2][1] == 3

    # a row changed on the target is found by the checksum (and nothing is overwritten)
    postgres_server.admin("UPDATE usage SET units = 2 WHERE id = 5", db)
    third = hermes(source, "migrate", "--to", url, check=False)
    assert third.returncode == 1
    verdicts = table_lines(third.stdout)
    assert "MISMATCH" in verdicts["usage"] and "MISMATCH" in verdicts["users"]  # carol is not in the source
    assert "MISMATCH" not in verdicts["access_tokens"]
    assert third.stdout.splitlines()[-1].startswith("MISMATCH in users, usage")


def test_migrate_refuses_bad_targets(source: Path, tmp_path: Path, postgres_server: PostgresServer) -> None:
    not_pg = hermes(source, "migrate", "--to", "mysql://x@127.0.0.1/db", check=False)
    assert not_pg.returncode != 0 and "postgresql://" in not_pg.stderr
    missing = hermes(tmp_path, "migrate", "--to", postgres_server.database(), check=False)
    assert missing.returncode != 0 and "no SQLite gateway database" in missing.stderr
    assert "Traceback" not in not_pg.stderr + missing.stderr


def test_checksum_ignores_row_order_and_number_spelling() -> None:
    assert checksum([(1, 2.0, "a"), (2, None, "b")]) == checksum([(2, None, "b"), (1.0, 2, "a")])
    assert checksum([(1, "a")]) != checksum([(1, "b")])
    assert checksum([("a\x1fb",)]) != checksum([("a", "b")])
