"""SQLite's usage rows through the usage journal (storage/sqlite_usage.py, storage/usage_journal.py): a real
``serve`` process on a SQLite file answers while its batches cannot commit, is killed, and the next start
inserts every answered row exactly once; batches replayed twice count nothing twice, rows of deleted users
are dropped, and two writers of one process on one state directory never take each other's segments."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from fakes.pg_redis import free_port, hermes
from fakes.vendors import ServerThread
from hermes.toolgateway.storage.sqlite import connect
from hermes.toolgateway.storage.sqlite_usage import ThreadedInsert
from hermes.toolgateway.storage.usage_journal import UsageWriter, journal_dir

CONFIG = """
access_log = "off"
[rate_limit]
per_second = 0
burst = 0
[relays.firecrawl]
scrape = "local"
search = "off"
allow_loopback = true
"""


def _row(rid: str, user_id: int, units: int = 1) -> list[object]:
    return [rid, 1767225600.0, user_id, None, "firecrawl", "local", "scrape", units, 0.0, 200, 1.5]


async def _down(rows: object) -> None:
    """The insert of a database that does not answer."""
    raise ConnectionError("the database is down")


def _collect(inserted: list[str]) -> Callable[[list[list[object]]], Awaitable[None]]:
    """An insert that keeps the ids of the rows it was given, in order."""
    async def up(rows: list[list[object]]) -> None:
        inserted.extend(str(r[0]) for r in rows)
    return up


def _serve(home: Path, config: Path, port: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "toolgateway", "serve", "--port", str(port), "--config",
                             str(config)], env={**os.environ, "HERMES_HOME": str(home)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 40
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the gateway did not start: {proc.communicate(timeout=10)[1]}")
        time.sleep(0.05)


def test_answered_rows_survive_a_kill_while_no_batch_can_commit(tmp_path: Path, pages: ServerThread) -> None:
    home = tmp_path / "home"
    config = tmp_path / "gateway.toml"
    config.write_text(CONFIG)
    hermes(home, "users", "add", "ann", "--plan", "paid")
    token = hermes(home, "tokens", "issue", "ann").stdout.split()[-1]
    db_path = home / "toolgateway" / "gateway.db"
    port = free_port()
    proc = _serve(home, config, port)
    blocker = sqlite3.connect(db_path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")  # holds the write lock: no usage batch can commit meanwhile
        for _ in range(20):
            resp = httpx.post(f"http://127.0.0.1:{port}/relay/firecrawl/v2/scrape",
                              json={"url": pages.url + "/article", "formats": ["markdown"]},
                              headers={"authorization": f"Bearer {token}"}, timeout=30)
            assert resp.status_code == 200, resp.text
        proc.send_signal(signal.SIGKILL)  # answered 20 times, committed none of them
        proc.communicate(timeout=20)
        blocker.execute("ROLLBACK")
        assert blocker.execute("SELECT COUNT(*) FROM usage").fetchone() == (0,)
    finally:
        blocker.close()
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=20)
    journal = journal_dir(home / "toolgateway", str(db_path.resolve()))
    assert sum(len(p.read_text().splitlines()) for p in journal.glob("usage-*.jsonl")) == 20
    before = sorted(p.name for p in journal.glob("usage-*.jsonl"))

    again = _serve(home, config, port)  # replays the killed process's segments at start
    try:
        deadline = time.monotonic() + 20
        conn = sqlite3.connect(db_path)
        while conn.execute("SELECT COUNT(*) FROM usage").fetchone()[0] < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert conn.execute("SELECT COUNT(*), SUM(units), COUNT(DISTINCT rid), MIN(status) FROM usage").fetchone() \
            == (20, 20, 20, 200)
        conn.close()
        assert not set(before) & {p.name for p in journal.glob("usage-*.jsonl")}  # replayed and deleted
    finally:
        again.send_signal(signal.SIGTERM)
        again.communicate(timeout=20)


def test_replayed_batches_count_once_and_rows_of_deleted_users_are_dropped(tmp_path: Path) -> None:
    db_path = tmp_path / "gateway.db"
    conn = connect(db_path)
    conn.execute("INSERT INTO users (uid, name, plan, created) VALUES ('usr_1', 'ann', 'paid', 0)")
    user_id = int(conn.execute("SELECT id FROM users").fetchone()[0])
    journal = tmp_path / "journal"

    async def write(rows: list[list[object]]) -> int:
        insert = ThreadedInsert(db_path)
        writer = UsageWriter(journal, insert, interval=0.01)
        replayed = await writer.start()
        for row in rows:
            writer.record(row)
        await writer.close()
        await insert.close()
        return replayed

    rows = [_row(f"r{i}", user_id) for i in range(30)] + [_row("gone", user_id + 99)]
    rows[5][8] = float("nan")  # a cost the database refuses (NOT NULL): that row alone is dropped
    assert asyncio.run(write(rows)) == 0
    assert asyncio.run(write(rows[:10])) == 0  # the same ids again: a replay after a crash
    assert tuple(conn.execute("SELECT COUNT(*), COUNT(DISTINCT rid) FROM usage").fetchone()) == (29, 29)
    stored = conn.execute("SELECT rid, ts, user_id, jti, category, vendor, operation, units, cost, status, latency_ms "
                          "FROM usage ORDER BY id").fetchall()
    assert [r[0] for r in stored] == [f"r{i}" for i in range(30) if i != 5]  # in the order they were recorded
    assert tuple(stored[0]) == tuple(_row("r0", user_id))  # every column, with its type
    assert [type(v) for v in stored[0]] == [str, float, int, type(None), str, str, str, int, float, int, float]
    assert not list(journal.glob("usage-*.jsonl"))
    conn.close()


def test_two_writers_of_one_process_keep_their_own_segments(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    inserted: list[str] = []
    up = _collect(inserted)

    async def main() -> None:
        first = UsageWriter(journal, _down, interval=0.01)
        await first.start()
        first.record(_row("kept", 1))
        second = UsageWriter(journal, up, interval=0.01)
        assert await second.start() == 0  # the first still runs: its segment is not the second's to replay
        await second.close()
        assert inserted == []
        await first.close()  # still down: the row stays in its segment
        assert list(journal.glob("usage-*.jsonl"))
        third = UsageWriter(journal, up, interval=0.01)
        assert await third.start() == 1
        await third.close()

    asyncio.run(main())
    assert inserted == ["kept"]


def test_a_segment_is_reused_until_full_and_deleted_once_its_rows_are_in(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    inserted: list[str] = []
    up = _collect(inserted)

    def lines() -> list[int]:
        return sorted(len(p.read_text().splitlines()) for p in journal.glob("usage-*.jsonl"))

    async def main() -> None:
        writer = UsageWriter(journal, up, interval=3600, segment_rows=5)
        await writer.start()
        for i in range(3):
            writer.record(_row(f"a{i}", 1))
        await writer.flush()
        assert inserted == ["a0", "a1", "a2"] and lines() == [3]  # inserted, and still the one segment
        for i in range(3):
            writer.record(_row(f"b{i}", 1))
        await writer.flush()  # the segment holds 6 rows: sealed, written, deleted; a new one is open
        assert lines() == [0] and len(inserted) == 6
        writer.record(_row("c0", 1))
        await writer.close()
        assert lines() == [] and inserted[-1] == "c0"

    asyncio.run(main())


def test_a_writer_that_died_is_replayed_by_the_next_and_a_failed_start_leaves_no_lock(tmp_path: Path) -> None:
    """Liveness is the writer's flock alone (owners are random, never the pid: a restarted container's
    gateway has the same pid every time). A lock file without segments is swept too."""
    journal = tmp_path / "journal"
    inserted: list[str] = []
    up = _collect(inserted)

    async def main() -> None:
        quiet = UsageWriter(journal, _down, interval=3600)
        await quiet.start()
        os.close(quiet._lock_fd)  # died before recording anything: only its lock file is left
        dead = UsageWriter(journal, _down, interval=3600)
        await dead.start()  # sweeps the quiet one's lock
        assert not (journal / f"usage-{quiet.owner}.lock").exists()
        dead.record(_row("d0", 1))
        assert str(os.getpid()) not in dead.owner
        os.close(dead._lock_fd)  # its process is gone: the kernel drops the flock
        failing = UsageWriter(journal, _down, interval=3600)
        with pytest.raises(ConnectionError):
            await failing.start()  # the replay of the dead writer's row fails: the start fails, cleanly
        assert not (journal / f"usage-{failing.owner}.lock").exists() and failing._lock_fd == -1
        heir = UsageWriter(journal, up, interval=3600)
        assert await heir.start() == 1
        await heir.close()
        if dead._task is not None:
            dead._task.cancel()
        if quiet._task is not None:
            quiet._task.cancel()

    asyncio.run(main())
    assert inserted == ["d0"]
    assert sorted(p.name for p in journal.iterdir()) == []  # every segment and lock file is gone


def test_gateways_on_one_state_directory_but_two_databases_keep_two_journals(tmp_path: Path) -> None:
    state = tmp_path / "toolgateway"
    first, second = journal_dir(state, "/srv/a/gateway.db"), journal_dir(state, "/srv/b/gateway.db")
    assert first != second and first.parent == second.parent == state / "usage-journal"
    assert journal_dir(state, "/srv/a/gateway.db") == first
