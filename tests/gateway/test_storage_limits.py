"""PostgreSQL under the gateway's storage limits, on a throw-away cluster (``postgres_server``, conftest.py):
the per-user upload cap holds when many connections claim room at once, and every session has TCP
keepalives and a statement timeout (a server that stops answering costs seconds, not minutes)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

from fakes.pg_redis import PostgresServer
from hermes.toolgateway.config import load_config
from hermes.toolgateway.services import Gateway
from hermes.toolgateway.storage.postgres import PostgresDatabase
from hermes.toolgateway.storage.uploads import StorageFull, UploadStore, new_upload_id


def test_upload_cap_holds_across_connections(tmp_path: Path, postgres_server: PostgresServer) -> None:
    """Ten processes' worth of connections claim room for one user at once: the cap admits exactly three."""
    url = postgres_server.database()
    gw = Gateway(load_config(None, overrides={"database_url": url}, env={}, home=tmp_path)).open()
    user = gw.accounts.add_user("ulla", "paid").id
    stores = [UploadStore(PostgresDatabase(url), tmp_path / "uploads") for _ in range(10)]
    data, now = b"\x89PNG\r\n\x1a\n" + b"\x00" * 1000, time.time()
    start = threading.Barrier(len(stores))
    outcomes: list[str] = []

    def claim(store: UploadStore) -> None:
        start.wait()
        try:
            store.add(user_id=user, vendor="nous", filename="a.png", content_type="image/png", ext="png", data=data,
                      now=now, ttl=60, upload_id=new_upload_id(), cap=3 * len(data) + 10)
            outcomes.append("stored")
        except StorageFull:
            outcomes.append("full")

    try:
        threads = [threading.Thread(target=claim, args=(store,)) for store in stores]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert Counter(outcomes) == {"stored": 3, "full": 7}
        assert stores[0].stored_bytes(user, now) == (3 * len(data), now + 60)
    finally:
        for store in stores:
            store.conn.close()
        gw.close_db()


def test_postgres_sessions_have_keepalives_and_a_statement_timeout(postgres_server: PostgresServer) -> None:
    db = PostgresDatabase(postgres_server.database())
    try:
        assert db.execute("SHOW statement_timeout").fetchone()[0] == "5s"
        assert db._conn is not None
        params = db._conn.info.get_parameters()
        assert (params["keepalives"], params["keepalives_idle"], params["tcp_user_timeout"]) == ("1", "5", "3000")
    finally:
        db.close()
    # what the URL sets is kept; its own options keep theirs
    url = postgres_server.database() + "?keepalives_idle=30&options=-c%20work_mem%3D8MB"
    db = PostgresDatabase(url)
    try:
        assert db.execute("SHOW work_mem").fetchone()[0] == "8MB"
        assert db.execute("SHOW statement_timeout").fetchone()[0] == "5s"
        assert db._conn is not None and db._conn.info.get_parameters()["keepalives_idle"] == "30"
    finally:
        db.close()
