"""The SQLite session store: connection settings, migrations, messages, lookup, search, threads."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.errors import SessionNotFound, StoreError
from hermes.store import (
    MIGRATIONS,
    SessionStore,
    connect,
    fts_query,
    migrate,
    schema_version,
    searchable_text,
)
from hermes.store import sessions as sessions_mod

TOOL_CALL_MSG: dict[str, Any] = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{
        "id": "call_1", "type": "function",
        "function": {"name": "weather_lookup", "arguments": '{"city": "Reykjavik", "units": "metric"}'},
    }],
}
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are hermes. Secret system words: zebracorn."},
    {"role": "user", "content": "What's the weather like in Reykjavik? ☃ ünïcödé"},
    TOOL_CALL_MSG,
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": -3, "sky": "snowing heavily"}'},
    {"role": "assistant", "content": "It is -3 °C and snowing.", "refusal": None},
    {"role": "user", "content": [
        {"type": "text", "text": "And this picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ], "name": "alice"},
]


class FakeClock:
    """Stands in for the ``time`` module inside hermes.store.sessions."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self.strftime = time.strftime
        self.gmtime = time.gmtime

    def time(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with SessionStore(tmp_path / "state.db") as s:
        yield s


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(sessions_mod, "time", fake)
    return fake


def new(store: SessionStore, surface: str = "cli", **kw: Any) -> str:
    return store.create_session(surface=surface, model="test-model", toolsets=["web"], tools=["web_search"], **kw)


# -- connection and migrations ---------------------------------------------------------------------


def test_connect_creates_folder_and_sets_pragmas(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "state.db"
    conn = connect(path)
    try:
        assert path.exists()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
        assert conn.execute("PRAGMA user_version").fetchone()[0] == schema_version() == len(MIGRATIONS)
        assert isinstance(conn.execute("SELECT 1 AS one").fetchone(), sqlite3.Row)
    finally:
        conn.close()


def test_open_twice_is_idempotent_and_keeps_data(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SessionStore(path) as s:
        sid = new(s, title="kept")
        s.append_message(sid, {"role": "user", "content": "persist me"})
    with SessionStore(path) as s:
        assert s.get_session(sid).title == "kept"
        assert s.messages(sid) == [{"role": "user", "content": "persist me"}]
        assert [h.session_id for h in s.search("persist")] == [sid]
    conn = connect(path)
    try:
        assert migrate(conn) == schema_version()
        assert conn.execute("PRAGMA user_version").fetchone()[0] == schema_version()
    finally:
        conn.close()


def test_migrations_are_applied_in_order_once(tmp_path: Path) -> None:
    calls: list[str] = []

    def m002_extra(conn: sqlite3.Connection) -> None:
        calls.append("m002")
        conn.execute("CREATE TABLE extra (x INTEGER)")

    conn = connect(tmp_path / "state.db")
    try:
        assert migrate(conn, [*MIGRATIONS, m002_extra]) == len(MIGRATIONS) + 1
        assert migrate(conn, [*MIGRATIONS, m002_extra]) == len(MIGRATIONS) + 1
        assert calls == ["m002"]
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) + 1
    finally:
        conn.close()


def test_failed_migration_rolls_back_and_keeps_version(tmp_path: Path) -> None:
    def m002_broken(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("boom")

    conn = connect(tmp_path / "state.db")
    try:
        with pytest.raises(RuntimeError):
            migrate(conn, [*MIGRATIONS, m002_broken])
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchone() is None
    finally:
        conn.close()


def test_unopenable_path_raises_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="database"):
        SessionStore(blocker / "state.db")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match=r"garbage\.db"):
        SessionStore(garbage)


def test_open_default_uses_hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "home"))
    with SessionStore.open_default() as s:
        assert s.path == tmp_path / "home" / "state.db"
    assert (tmp_path / "home" / "state.db").exists()


# -- sessions and messages -------------------------------------------------------------------------


def test_messages_round_trip_exactly(store: SessionStore) -> None:
    sid = new(store)
    ids = [store.append_message(sid, m) for m in CONVERSATION]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert store.messages(sid) == CONVERSATION
    assert store.messages(sid)[2]["content"] is None
    info = store.get_session(sid)
    assert info.message_count == len(CONVERSATION)
    assert info.updated_at >= info.created_at


def test_create_session_fields(store: SessionStore) -> None:
    parent = new(store)
    sid = store.create_session(surface="cron", model="m1", toolsets=["file", "web"], tools=["read_file"],
                               title="Nightly", parent_id=parent, meta={"task_id": "t1", "n": 2})
    info = store.get_session(sid)
    assert (info.surface, info.model, info.title, info.parent_id) == ("cron", "m1", "Nightly", parent)
    assert info.toolsets == ["file", "web"] and info.tools == ["read_file"]
    assert info.meta == {"task_id": "t1", "n": 2} and info.message_count == 0
    assert len(sid) == len("20261129-233455-a1b2c3") and sid[8] == "-" and sid[15] == "-"
    with pytest.raises(SessionNotFound, match="parent"):
        new(store, parent_id="nope")


def test_append_to_unknown_session_and_bad_messages(store: SessionStore) -> None:
    with pytest.raises(SessionNotFound):
        store.append_message("20200101-000000-abcdef", {"role": "user", "content": "x"})
    sid = new(store)
    with pytest.raises(StoreError, match="role"):
        store.append_message(sid, {"content": "no role"})
    with pytest.raises(StoreError, match="JSON"):
        store.append_message(sid, {"role": "user", "content": object()})
    assert store.get_session(sid).message_count == 0
    assert store.messages(sid) == []


def test_prefix_lookup_and_ambiguity(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = iter(["20260101-101010-aaaaaa", "20260101-101010-aaabbb", "20270101-101010-cccccc"])
    monkeypatch.setattr(sessions_mod, "new_session_id", lambda now=None: next(ids))
    a, b, c = new(store), new(store), new(store)
    assert store.get_session(a).id == a
    assert store.get_session("2027").id == c
    assert store.get_session("20260101-101010-aaab").id == b
    assert store.get_session(f"  {c}  ").id == c
    with pytest.raises(SessionNotFound, match="ambiguous") as err:
        store.get_session("20260101-101010-aaa")
    assert a in str(err.value) and b in str(err.value)
    with pytest.raises(SessionNotFound, match="at least 4"):
        store.get_session("202")
    with pytest.raises(SessionNotFound, match="no session"):
        store.get_session("2099")
    with pytest.raises(SessionNotFound):
        store.get_session("")
    assert store.messages("2027") == []


def test_list_latest_and_filters(store: SessionStore, clock: FakeClock) -> None:
    assert store.latest_session() is None and store.list_sessions() == []
    first = new(store, "cli")
    clock.now += 10
    second = new(store, "cron")
    clock.now += 10
    third = new(store, "cli")
    clock.now += 10
    store.append_message(first, {"role": "user", "content": "bump"})
    assert [s.id for s in store.list_sessions()] == [first, third, second]
    assert [s.id for s in store.list_sessions(limit=2)] == [first, third]
    assert [s.id for s in store.list_sessions(surface="cron")] == [second]
    assert store.list_sessions(limit=0) == []
    latest = store.latest_session()
    assert latest is not None and latest.id == first and latest.updated_at == clock.now
    latest_cron = store.latest_session("cron")
    assert latest_cron is not None and latest_cron.id == second
    assert store.latest_session("telegram") is None


def test_title_meta_and_previews(store: SessionStore) -> None:
    sid = new(store, meta={"a": 1, "b": 2})
    store.set_title(sid, "Renamed")
    store.update_meta(sid, b=3, c=[1, 2])
    info = store.get_session(sid)
    assert info.title == "Renamed" and info.meta == {"a": 1, "b": 3, "c": [1, 2]}
    store.append_message(sid, {"role": "system", "content": "sys"})
    store.append_message(sid, {"role": "user", "content": "first question"})
    store.append_message(sid, {"role": "user", "content": "second"})
    empty = new(store)
    assert store.previews([sid, empty]) == {sid: "first question"}
    with pytest.raises(SessionNotFound):
        store.set_title("20990101-000000-000000", "x")
    with pytest.raises(SessionNotFound):
        store.update_meta("20990101-000000-000000", x=1)


def test_export(store: SessionStore) -> None:
    sid = new(store, title="T")
    for m in CONVERSATION:
        store.append_message(sid, m)
    data = store.export(sid[:10])
    assert data["messages"] == CONVERSATION
    assert data["session"]["id"] == sid and data["session"]["title"] == "T"
    assert set(data["session"]) == {"id", "created_at", "updated_at", "surface", "model", "title",
                                    "message_count", "toolsets", "tools", "parent_id", "meta"}


def test_delete_removes_messages_and_search_entries(store: SessionStore) -> None:
    keep, gone = new(store), new(store)
    child = new(store, parent_id=gone)
    for sid in (keep, gone):
        store.append_message(sid, {"role": "user", "content": f"platypus facts for {sid}"})
        store.append_message(sid, TOOL_CALL_MSG)
    assert {h.session_id for h in store.search("platypus")} == {keep, gone}
    store.delete_session(gone)
    assert {h.session_id for h in store.search("platypus")} == {keep}
    assert {h.session_id for h in store.search("weather_lookup")} == {keep}
    with pytest.raises(SessionNotFound):
        store.get_session(gone)
    with pytest.raises(SessionNotFound):
        store.delete_session(gone)
    assert store.get_session(child).parent_id is None
    conn = store._conn
    assert conn.execute("SELECT count(*) FROM messages WHERE session_id = ?", (gone,)).fetchone()[0] == 0
    conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")


def test_truncate_drops_the_tail_and_its_search_entries(store: SessionStore) -> None:
    sid, other = new(store), new(store)
    for message in CONVERSATION:
        store.append_message(sid, message)
    store.append_message(other, {"role": "user", "content": "snowing in another session"})
    assert store.truncate_messages(sid, 2) == len(CONVERSATION) - 2
    assert store.messages(sid) == CONVERSATION[:2]
    assert store.get_session(sid).message_count == 2
    assert {h.session_id for h in store.search("snowing")} == {other}
    assert store.search("weather_lookup") == []
    store.append_message(sid, {"role": "assistant", "content": "a new answer"})  # appends after the kept ones
    assert store.messages(sid) == [*CONVERSATION[:2], {"role": "assistant", "content": "a new answer"}]
    assert store.truncate_messages(sid, 10) == 0
    store._conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")


def test_closed_store_raises_store_error(tmp_path: Path) -> None:
    s = SessionStore(tmp_path / "state.db")
    s.close()
    s.close()
    with pytest.raises(StoreError):
        s.list_sessions()


# -- search ----------------------------------------------------------------------------------------


def test_searchable_text() -> None:
    assert searchable_text(CONVERSATION[0]) == ""
    assert "Reykjavik" in searchable_text(CONVERSATION[1])
    call_text = searchable_text(TOOL_CALL_MSG)
    assert "weather_lookup" in call_text and '"units": "metric"' in call_text
    assert "snowing" in searchable_text(CONVERSATION[3])
    assert searchable_text(CONVERSATION[5]) == "And this picture?"
    assert searchable_text({"role": "assistant", "content": None}) == ""


def test_fts_query_quotes_everything() -> None:
    assert fts_query("hello world") == '"hello" "world"'
    assert fts_query("hello world", any_term=True) == '"hello" OR "world"'
    assert fts_query('"exact phrase" weath*') == '"exact phrase" "weath"*'
    assert fts_query('AND OR NEAR( ) * " ^') == '"AND" "OR" "NEAR("'
    assert fts_query("") == "" and fts_query('  " * ( ) ') == ""


def test_search_finds_all_kinds_of_text(store: SessionStore) -> None:
    sid = new(store, title="Iceland trip")
    for m in CONVERSATION:
        store.append_message(sid, m)
    user = store.search("Reykjavik")
    assert {h.role for h in user} == {"user", "assistant"}  # the question and the tool call arguments
    assert store.search("weather_lookup")[0].role == "assistant"
    tool = store.search("snowing heavily")
    assert tool[0].role == "tool" and "**snowing**" in tool[0].snippet
    assert store.search("zebracorn") == []  # system prompts are not indexed
    assert store.search("picture")[0].title == "Iceland trip"
    assert store.search("snow*")  # prefix
    assert store.search("unicode") and store.search("ünïcödé")  # diacritics folded
    assert store.search('"heavily snowing"') == [] and store.search('"snowing heavily"')


def test_search_ranking_and_snippets(store: SessionStore) -> None:
    sid = new(store)
    weak = store.append_message(sid, {"role": "user", "content": "A long message about many things. " * 20
                                       + "It mentions quokka once."})
    strong = store.append_message(sid, {"role": "assistant", "content": "quokka quokka: the quokka!"})
    hits = store.search("quokka")
    assert [h.message_id for h in hits] == [strong, weak]
    assert hits[0].score > hits[1].score
    assert "**quokka**" in hits[1].snippet and "…" in hits[1].snippet and "\n" not in hits[1].snippet
    assert hits[0].session_id == sid and hits[0].surface == "cli"


def test_search_all_terms_first_then_any(store: SessionStore) -> None:
    sid = new(store)
    both = store.append_message(sid, {"role": "user", "content": "kiwi and mango smoothie"})
    one = store.append_message(sid, {"role": "user", "content": "kiwi alone"})
    assert [h.message_id for h in store.search("kiwi mango")] == [both]
    assert {h.message_id for h in store.search("kiwi durian")} == {one, both}
    assert store.search("durian") == []


def test_search_filters(store: SessionStore, clock: FakeClock) -> None:
    cli = new(store, "cli")
    store.append_message(cli, {"role": "user", "content": "armadillo early"})
    clock.now += 100
    cron = new(store, "cron")
    store.append_message(cron, {"role": "user", "content": "armadillo late"})
    t0 = clock.now - 100
    assert len(store.search("armadillo")) == 2
    assert [h.session_id for h in store.search("armadillo", surface="cron")] == [cron]
    assert [h.session_id for h in store.search("armadillo", since=t0 + 50)] == [cron]
    assert [h.session_id for h in store.search("armadillo", until=t0 + 50)] == [cli]
    assert store.search("armadillo", since=t0, until=t0) == []
    assert [h.session_id for h in store.search("armadillo", session_id=cli)] == [cli]
    assert store.search("armadillo", session_id="2099") == []
    assert len(store.search("armadillo", limit=1)) == 1 and store.search("armadillo", limit=0) == []
    assert store.search("armadillo", surface="cli")[0].created_at == t0


HOSTILE = ['"', "AND", "OR", "NOT", "*", "NEAR(", ")", "(", "a AND", "NEAR(a b, 2)", "text:foo", "^foo",
           '"unbalanced', "foo\"bar", "-", "+", "{a b}", "\x00", "", "   ", "'; DROP TABLE messages; --",
           "a OR", "* OR *", ":", "col : term", "\\", "\u200b", "🙂", "NEAR", '""""']


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(store: SessionStore, query: str) -> None:
    sid = new(store)
    store.append_message(sid, {"role": "user", "content": "foo bar AND near text"})
    assert isinstance(store.search(query), list)
    assert store.messages(sid)  # still there


def test_empty_query_returns_nothing(store: SessionStore) -> None:
    store.append_message(new(store), {"role": "user", "content": "anything"})
    assert store.search("") == [] and store.search("  ") == [] and store.search('"" * ()') == []


def test_any_query_string_is_safe(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "state.db") as s:
        s.append_message(new(s), {"role": "user", "content": "some words to match: alpha beta gamma"})

        @settings(max_examples=300, deadline=None)
        @given(st.text())
        def check(query: str) -> None:
            assert isinstance(s.search(query), list)

        check()


# -- threads ---------------------------------------------------------------------------------------


def test_concurrent_appends_from_threads(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    per_thread, threads = 40, 8
    with SessionStore(path) as s, SessionStore(path) as other:
        shared = new(s)
        own = [new(s) for _ in range(threads)]
        errors: list[BaseException] = []

        def work(i: int) -> None:
            try:
                target = s if i % 2 else other  # two connections, so the busy timeout is exercised too
                for j in range(per_thread):
                    target.append_message(shared, {"role": "user", "content": f"thread {i} msg {j} wombat"})
                    target.append_message(own[i], {"role": "assistant", "content": f"{j}"})
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert errors == []
        assert s.get_session(shared).message_count == per_thread * threads
        msgs = s.messages(shared)
        assert len(msgs) == per_thread * threads
        for i in range(threads):  # each thread's messages keep their order
            mine = [m["content"] for m in msgs if m["content"].startswith(f"thread {i} ")]
            assert mine == [f"thread {i} msg {j} wombat" for j in range(per_thread)]
            assert [m["content"] for m in s.messages(own[i])] == [str(j) for j in range(per_thread)]
        assert len(s.search("wombat", limit=1000)) == per_thread * threads
