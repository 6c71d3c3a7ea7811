"""session_search (requirement T-SS, REG-7): ranking, filters, reading a session, the current session left out,
and the store's ranking window that keeps common words fast."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import pytest

from fakes.providers import Scripted
from hermes.agent.events import NullSink
from hermes.agent.provider import Completion, ToolCall
from hermes.agent.session import new_agent
from hermes.config.settings import Settings
from hermes.errors import ToolError
from hermes.store import sessions as sessions_mod
from hermes.store.sessions import SessionStore
from hermes.tools.results import error_from
from hermes.tools.sessions.dates import parse_when
from hermes.tools.sessions.tool import handle_session_search as handle_call
from hermes.tools.toolsets import Surface


def handle_session_search(args: dict[str, Any], session: Any) -> str:
    """The tool's answer as the model sees it (a refusal as its error result)."""
    try:
        return handle_call(args, session)
    except ToolError as exc:
        return error_from(exc)


DAY = 86400.0
NOW = time.time()


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now
        self.strftime = time.strftime
        self.gmtime = time.gmtime

    def time(self) -> float:
        return self.now


class FakeSession:
    """Stands in for the agent: what the handler reads."""

    def __init__(self, store: SessionStore | None, session_id: str | None = None,
                 settings: Settings | None = None) -> None:
        self.store, self.session_id, self.settings = store, session_id, settings
        self.state: dict[str, Any] = {}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock(NOW - 30 * DAY)
    monkeypatch.setattr(sessions_mod, "time", fake)
    return fake


def add_session(store: SessionStore, clock: Clock, at: float, surface: str, title: str,
                messages: list[dict[str, Any]]) -> str:
    clock.now = at
    sid = store.create_session(surface=surface, model="m", toolsets=[], tools=[], title=title)
    store.append_message(sid, {"role": "system", "content": "system prompt about wombats"})
    for msg in messages:
        clock.now += 1
        store.append_message(sid, msg)
    return sid


@pytest.fixture
def history(tmp_path: Path, clock: Clock) -> dict[str, Any]:
    store = SessionStore(tmp_path / "state.db")
    old = add_session(store, clock, NOW - 20 * DAY, "cli", "Postgres tuning", [
        {"role": "user", "content": "Our postgres vacuum is slow"},
        {"role": "assistant", "content": "Tune autovacuum: postgres postgres vacuum settings."},
    ])
    cron = add_session(store, clock, NOW - 10 * DAY, "cron", "Nightly report", [
        {"role": "user", "content": "Summarise the postgres backup log"},
    ])
    recent = add_session(store, clock, NOW - 2 * DAY, "cli", "Kubernetes", [
        {"role": "user", "content": "Deploy the chart to kubernetes"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "helm"}'}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "helm output " + "x" * 2000},
        {"role": "assistant", "content": "Deployed; postgres sidecar is healthy."},
    ])
    clock.now = NOW
    return {"store": store, "old": old, "cron": cron, "recent": recent}


def search(history: dict[str, Any], current: str | None = None, **args: Any) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(handle_session_search(args, FakeSession(history["store"], current)))
    return out


def test_ranked_hits_grouped_by_session_with_snippets(history: dict[str, Any]) -> None:
    result = search(history, query="postgres")
    ids = [s["session_id"] for s in result["sessions"]]
    assert ids[0] == history["old"] and set(ids) == {history["old"], history["cron"], history["recent"]}
    best = result["sessions"][0]
    assert best["title"] == "Postgres tuning" and best["surface"] == "cli"
    assert any("**postgres**" in m["snippet"] for m in best["matches"])
    assert result["matching_messages"] == 4 and "read" in result["note"]
    assert search(history, query="wombats")["sessions"] == []  # system prompts are not indexed
    assert search(history, query="vacuum postgres")["sessions"][0]["session_id"] == history["old"]


def test_filters_surface_since_until(history: dict[str, Any]) -> None:
    def ids(**kw: Any) -> set[str]:
        return {s["session_id"] for s in search(history, query="postgres", **kw)["sessions"]}

    assert ids(surface="cron") == {history["cron"]}
    assert ids(since="7d") == {history["recent"]}
    assert ids(since="15d", until="5d") == {history["cron"]}
    day = dt.datetime.fromtimestamp(NOW - 10 * DAY).strftime("%Y-%m-%d")
    assert ids(since=day, until=day) == {history["cron"]}  # a bare date as 'until' includes that day
    assert ids(until="30d") == set()
    assert "'since'" in search(history, query="postgres", since="last tuesday")["error"]
    assert "earlier than" in search(history, query="postgres", since="1d", until="5d")["error"]
    assert "'surface'" in search(history, query="x", surface="moon")["error"]
    assert "'query'" in search(history, query="  ")["error"]


def test_current_session_is_left_out_unless_asked(history: dict[str, Any]) -> None:
    result = search(history, current=history["old"], query="vacuum")
    assert result["sessions"] == []
    included = search(history, current=history["old"], query="vacuum", include_current=True)
    assert [s["session_id"] for s in included["sessions"]] == [history["old"]]
    limited = search(history, current=history["old"], query="postgres", limit=2)
    assert limited["matching_messages"] == 2 and history["old"] not in {s["session_id"] for s in limited["sessions"]}


def test_read_pages_and_shortens(history: dict[str, Any]) -> None:
    read = search(history, action="read", session_id=history["recent"], page_size=2)
    assert read["session"]["title"] == "Kubernetes" and read["session"]["message_count"] == 5
    assert [m["index"] for m in read["messages"]] == [1, 2]  # the system prompt (0) is left out
    assert read["messages"][1]["tool_calls"][0]["name"] == "terminal" and read["next_offset"] == 3
    rest = search(history, action="read", session_id=history["recent"][:15], offset=3)
    assert [m["role"] for m in rest["messages"]] == ["tool", "assistant"] and rest["next_offset"] is None
    assert len(rest["messages"][0]["content"]) < 500 and "more characters" in rest["messages"][0]["content"]
    assert "no session" in search(history, action="read", session_id="2099-nope")["error"]
    assert "'session_id'" in search(history, action="read")["error"]
    assert "'page_size'" in search(history, action="read", session_id=history["old"], page_size=0)["error"]


def test_no_store_yet_finds_nothing_and_creates_nothing(hermes_home: Path) -> None:
    result = json.loads(handle_session_search({"query": "x"}, FakeSession(None)))
    assert result["sessions"] == [] and not (hermes_home / "state.db").exists()
    assert "nothing has been stored" in json.loads(
        handle_session_search({"action": "read", "session_id": "abcd"}, FakeSession(None)))["error"]


def test_through_the_agent_loop(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("model:\n  base_url: http://127.0.0.1:9/v1\n  name: m\n")
    settings = Settings.load()
    store = SessionStore(settings.paths.database)
    past = store.create_session(surface="cli", model="m", toolsets=[], tools=[], title="Birds")
    store.append_message(past, {"role": "user", "content": "The albatross nests on the cliff"})
    provider = Scripted([Completion(None, [ToolCall("c1", "session_search", json.dumps({"query": "albatross"}))]),
                         Completion("Found it.")])
    agent = new_agent(settings, Surface.CLI, NullSink(), provider=provider, store=store)
    agent.run_turn("where does the albatross nest? we talked about it")
    result = json.loads(agent.messages[-2]["content"])
    assert [s["session_id"] for s in result["sessions"]] == [past]  # this session (also matching) is left out
    store.close()


def test_dates() -> None:
    now = dt.datetime(2026, 3, 10, 15, 0, tzinfo=dt.UTC)
    assert parse_when("2d", "since", now=now) == now.timestamp() - 2 * DAY
    assert parse_when("3 hours ago", "since", now=now) == now.timestamp() - 3 * 3600
    assert parse_when("today", "since", now=now) == dt.datetime(2026, 3, 10, tzinfo=dt.UTC).timestamp()
    assert parse_when("yesterday", "until", end=True, now=now) == dt.datetime(2026, 3, 10, tzinfo=dt.UTC).timestamp()
    assert parse_when("2026-03-01T12:00Z", "since", now=now) == dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC).timestamp()
    assert parse_when("2026-03-01", "until", end=True, now=now) == dt.datetime(2026, 3, 2, tzinfo=dt.UTC).timestamp()


# -- the store's ranking window (SessionStore.search) ------------------------------------------------


def test_ranking_window_keeps_results_complete(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sessions_mod, "RANK_WINDOW", 5)
    store = SessionStore(tmp_path / "state.db")
    clock.now = NOW - 100 * DAY
    early = store.create_session(surface="cron", model="m", toolsets=[], tools=[])
    strong = store.append_message(early, {"role": "user", "content": "gecko gecko gecko gecko"})
    for i in range(3):
        clock.now += 1
        store.append_message(early, {"role": "user", "content": f"an older gecko {i}"})
    clock.now = NOW - DAY
    late = store.create_session(surface="cli", model="m", toolsets=[], tools=[])
    for i in range(20):
        clock.now += 1
        store.append_message(late, {"role": "user", "content": f"a newer message about one gecko and more {i}"})
    hits = store.search("gecko", limit=3)
    assert len(hits) == 3 and all(h.session_id == late for h in hits)  # only the 5 most recent were ranked
    assert len(store.search("gecko", limit=50)) == 24  # too few in the window: every match is ranked
    cron = store.search("gecko", surface="cron", limit=3)
    assert [h.message_id for h in cron][:1] == [strong] and len(cron) == 3  # filters fall back to all matches
    assert {h.session_id for h in store.search("gecko", until=NOW - 50 * DAY)} == {early}
    assert {h.session_id for h in store.search("gecko", since=NOW - 2 * DAY)} == {late}
    assert {h.session_id for h in store.search("gecko", session_id=early, limit=10)} == {early}
    assert store.search("gecko", since=NOW + DAY) == [] and store.search("gecko", until=NOW - 500 * DAY) == []
    store.close()
