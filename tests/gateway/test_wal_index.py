"""The WAL-index header watch (:mod:`hermes.toolgateway.storage.wal_index`) on real database files.

Every commit, by this process or another one, moves the header; reads do not. A serving gateway on
SQLite reads its change counter again only after the header moved, and changes made by hand in another
process still apply on the next request (``test_auth.py`` has the rest of those).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fakes.vendors import FakeFirecrawl, ServerThread
from fakes.vendors.harness import gateway_config
from hermes.toolgateway.app import create_app
from hermes.toolgateway.services import Gateway
from hermes.toolgateway.storage.sqlite import connect
from hermes.toolgateway.storage.wal_index import WalIndexWatch

COUNTER_READ = "SELECT version FROM auth_version WHERE id = 1"


def _commit_elsewhere(db: Path, sql: str) -> None:
    """``sql`` committed by another process through Python's own sqlite3 (no hermes code)."""
    script = f"import sqlite3\nwith sqlite3.connect({str(db)!r}) as db:\n    db.execute({sql!r})\n"
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


def test_the_header_moves_with_every_commit_and_with_nothing_else(tmp_path: Path) -> None:
    db = tmp_path / "gateway.db"
    conn = connect(db)  # WAL mode, migrated: the -shm holds a WAL index
    watch = WalIndexWatch.open(conn)
    assert watch is not None and watch.settled()
    first = watch.header()
    assert len(first) == 48
    conn.execute("SELECT COUNT(*) FROM users").fetchone()
    assert watch.header() == first  # a read commits nothing
    other = sqlite3.connect(db)
    other.execute("UPDATE auth_version SET version = version + 1")
    other.commit()
    second = watch.header()
    assert second != first  # another connection of this process
    _commit_elsewhere(db, "UPDATE auth_version SET version = version + 1")
    third = watch.header()
    assert third not in (first, second)  # another process
    other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()  # the WAL emptied; the next commit restarts it
    _commit_elsewhere(db, "UPDATE auth_version SET version = version + 1")
    assert watch.header() not in (first, second, third)
    assert WalIndexWatch.open(conn) is not None  # a second watch shares the first one's descriptor
    other.close()
    conn.close()


def test_the_watched_file_is_the_one_sqlite_uses(tmp_path: Path) -> None:
    """A database opened through a symbolic link: its -shm is named after the real file, so a stale one
    beside the link (the database moved away and linked back) must not be the one watched."""
    real = tmp_path / "data" / "gateway.db"
    real.parent.mkdir()
    connect(real).close()
    link = tmp_path / "gateway.db"
    link.symlink_to(real)
    stale = connect(tmp_path / "stale.db")  # a real WAL index, of another database
    os.link(tmp_path / "stale.db-shm", str(link) + "-shm")
    conn = connect(link)
    watch = WalIndexWatch.open(conn)
    assert watch is not None
    before = watch.header()
    _commit_elsewhere(real, "UPDATE auth_version SET version = version + 1")
    assert watch.header() != before
    conn.close()
    stale.close()


def test_a_value_read_inside_a_transaction_is_not_trusted(tmp_path: Path) -> None:
    db = tmp_path / "gateway.db"
    conn = connect(db)
    watch = WalIndexWatch.open(conn)
    assert watch is not None
    conn.execute("BEGIN")
    conn.execute("SELECT version FROM auth_version").fetchone()  # the snapshot is taken here
    assert not watch.settled()
    conn.execute("COMMIT")
    assert watch.settled()
    conn.close()


def test_no_watch_without_a_wal_index(tmp_path: Path) -> None:
    plain = tmp_path / "rollback.db"
    with contextlib.closing(sqlite3.connect(plain)) as db:  # rollback journal: no -shm at all
        db.execute("CREATE TABLE t (x)")
        assert WalIndexWatch.open(db) is None
    with contextlib.closing(sqlite3.connect(":memory:")) as db:
        assert WalIndexWatch.open(db) is None
    (tmp_path / "zeros.db-shm").write_bytes(bytes(32768))  # not a WAL index SQLite wrote
    with contextlib.closing(sqlite3.connect(tmp_path / "zeros.db")) as db:
        db.execute("CREATE TABLE t (x)")
        assert WalIndexWatch.open(db) is None


@pytest.fixture()
def vendor() -> Iterator[tuple[FakeFirecrawl, ServerThread]]:
    fake = FakeFirecrawl(api_key="fc-operator-key")
    with ServerThread(fake.app) as server:
        yield fake, server


def test_the_server_reads_the_change_counter_only_after_a_commit(vendor: tuple[FakeFirecrawl, ServerThread],
                                                                tmp_path: Path) -> None:
    config = gateway_config(tmp_path, rate_limit={"per_second": 1000, "burst": 1000},
                            firecrawl={"firecrawl_url": vendor[1].url, "firecrawl_api_key": "fc-operator-key"})
    side = Gateway(config).open()
    side.accounts.add_user("wally", "paid")
    token = side.accounts.issue_access_token(side.accounts.get_user("wally"), ttl=3600).token
    served = Gateway(config)
    statements: list[str] = []
    with ServerThread(create_app(config, gateway=served), lifespan="on") as server:
        served.conn.conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        url = server.url + "/relay/firecrawl/v2/search"
        headers = {"authorization": f"Bearer {token}"}
        with httpx.Client(timeout=30) as client:
            answers = [client.post(url, json={"query": "q", "limit": 1}, headers=headers) for _ in range(40)]
            assert all(a.status_code == 200 for a in answers), answers[-1].text
            reads = statements.count(COUNTER_READ)
            # one read after each commit (the usage batches, every 100 ms), not one a request
            assert 1 <= reads < 20, reads
            _commit_elsewhere(config.db_path, "UPDATE users SET plan = 'none' WHERE name = 'wally'")
            refused = client.post(url, json={"query": "q", "limit": 1}, headers=headers)
            assert refused.status_code == 403 and refused.json()["code"] == "not_entitled"
            assert statements.count(COUNTER_READ) > reads
    side.close_db()
