"""The session host: a stored session per conversation key, a turn queue each, round trips, events."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Reply, call, error
from hermes.agent.events import Event, Request, TextDelta, TurnFinished
from hermes.config.settings import Overrides, Settings
from hermes.surfaces.host import LiveSession, RoundTripCancelled, SessionHost
from hermes.surfaces.messaging.clarify import run_messaging_clarify
from hermes.tools.clarify.core import request_questions, request_timeout
from hermes.tools.toolsets import Surface


def last_user(body: dict[str, Any]) -> str:
    return str(next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user"))


def echo(body: dict[str, Any]) -> Reply:
    return Reply(content=f"re: {last_user(body)}")


class Listener:
    """Records each conversation's events; answers clarify through the messaging engine."""

    def __init__(self) -> None:
        self.events: dict[str, list[Event]] = {}
        self.cards: list[str] = []
        self.finished = threading.Condition()

    def on_event(self, session: LiveSession, event: Event) -> None:
        with self.finished:
            self.events.setdefault(session.key, []).append(event)
            self.finished.notify_all()

    def on_request(self, session: LiveSession, request: Request) -> Any | None:
        if request.kind != "clarify":
            return None
        listener = self

        class Transport:
            def send_card(self, question: str, choices: Any, index: int, total: int) -> bool:
                listener.cards.append(question)
                with listener.finished:
                    listener.finished.notify_all()
                return True

            def send_text(self, text: str) -> bool:
                return True

            def next_reply(self, timeout: float) -> str | None:
                try:
                    return session.next_reply(timeout)
                except RoundTripCancelled:
                    from hermes.surfaces.messaging.clarify import ClarifyCancelled

                    raise ClarifyCancelled() from None

        return run_messaging_clarify(request_questions(request), Transport(), request_timeout(request))

    def finals(self, key: str) -> list[TurnFinished]:
        return [e for e in self.events.get(key, []) if isinstance(e, TurnFinished)]

    def wait_finals(self, key: str, n: int, timeout: float = 30) -> list[TurnFinished]:
        with self.finished:
            assert self.finished.wait_for(lambda: len(self.finals(key)) >= n, timeout), self.events.get(key)
        return self.finals(key)


def settings_for(home: Path, url: str) -> Settings:
    (home / "config.yaml").write_text(f"model:\n  base_url: {url}\n  name: m\n  max_retries: 0\n  stream: true\n")
    return Settings.load(overrides=Overrides())


@pytest.fixture
def listener() -> Listener:
    return Listener()


def test_each_key_gets_its_own_stored_session_and_a_restart_resumes_it(
        hermes_home: Path, model_server: Any, listener: Listener) -> None:
    server = model_server(echo)
    host = SessionHost(settings_for(hermes_home, server.url))
    assert host.submit("irc:#a:", "hello a", listener, toolsets=["clarify"]) == "started"
    assert host.submit("irc:#b:", "hello b", listener, toolsets=["clarify"]) == "started"
    assert listener.wait_finals("irc:#a:", 1)[0].final == "re: hello a"
    assert listener.wait_finals("irc:#b:", 1)[0].final == "re: hello b"
    assert any(isinstance(e, TextDelta) for e in listener.events["irc:#a:"])  # the event stream is forwarded
    first_a, first_b = host.session_id("irc:#a:"), host.session_id("irc:#b:")
    assert first_a and first_b and first_a != first_b
    host.close()

    again = SessionHost(settings_for(hermes_home, server.url))
    restarted = Listener()
    again.submit("irc:#a:", "second", restarted)
    assert restarted.wait_finals("irc:#a:", 1)[0].final == "re: second"
    assert again.session_id("irc:#a:") == first_a
    contents = [m.get("content") for m in server.requests[-1]["messages"]]
    assert "hello a" in contents and "re: hello a" in contents and "hello b" not in contents
    again.reset("irc:#a:")
    again.submit("irc:#a:", "fresh", restarted)
    restarted.wait_finals("irc:#a:", 2)
    assert again.session_id("irc:#a:") not in (None, first_a)
    assert "hello a" not in [m.get("content") for m in server.requests[-1]["messages"]]
    again.close()


def test_a_message_during_a_turn_waits_for_it(hermes_home: Path, model_server: Any, listener: Listener) -> None:
    gate = threading.Event()

    def script(body: dict[str, Any]) -> Reply:
        if last_user(body) == "slow":
            gate.wait(20)
        return echo(body)

    server = model_server(script)
    host = SessionHost(settings_for(hermes_home, server.url))
    try:
        assert host.submit("k", "slow", listener) == "started"
        assert host.submit("k", "next", listener) == "queued"
        gate.set()
        finals = listener.wait_finals("k", 2)
        assert [f.final for f in finals] == ["re: slow", "re: next"]
        assert host.wait_idle("k", 10)
    finally:
        gate.set()
        host.close()


def test_interrupt_mode_stops_the_running_turn_and_runs_the_new_message(
        hermes_home: Path, model_server: Any, listener: Listener) -> None:
    def script(body: dict[str, Any]) -> Reply:
        if last_user(body) == "long":
            return Reply(content="word " * 400, chunk_delay=0.05)
        return echo(body)

    server = model_server(script)
    host = SessionHost(settings_for(hermes_home, server.url), busy_mode="interrupt")
    try:
        host.submit("k", "long", listener)
        with listener.finished:  # wait until the long answer streams
            listener.finished.wait_for(lambda: any(isinstance(e, TextDelta) for e in listener.events.get("k", [])), 20)
        assert host.submit("k", "stop that", listener) == "interrupting"
        finals = listener.wait_finals("k", 2)
        assert [f.reason for f in finals] == ["interrupted", "answered"]
        assert finals[1].final == "re: stop that"
    finally:
        host.close()


def test_clarify_round_trip_takes_the_next_message_as_the_reply(
        hermes_home: Path, model_server: Any, listener: Listener) -> None:
    server = model_server([
        call("clarify", {"questions": [{"question": "Which colour?", "choices": ["red", "blue"]}]}),
        Reply(content="blue it is"),
    ])
    host = SessionHost(settings_for(hermes_home, server.url))
    try:
        host.submit("k", "paint it", listener, toolsets=["clarify"])
        with listener.finished:
            assert listener.finished.wait_for(lambda: listener.cards == ["Which colour?"], 20)
        assert host.submit("k", "2", listener) == "reply"
        assert listener.wait_finals("k", 1)[0].final == "blue it is"
        tool_result = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"]
        assert '"user_response": "blue"' in tool_result and '"submitted"' in tool_result
    finally:
        host.close()


def test_an_interrupt_cancels_a_waiting_round_trip(hermes_home: Path, model_server: Any, listener: Listener) -> None:
    server = model_server([call("clarify", {"questions": [{"question": "Sure?"}]}), Reply(content="ok")])
    host = SessionHost(settings_for(hermes_home, server.url))
    try:
        host.submit("k", "go", listener, toolsets=["clarify"])
        with listener.finished:
            assert listener.finished.wait_for(lambda: listener.cards == ["Sure?"], 20)
        assert host.interrupt("k")
        assert listener.wait_finals("k", 1)[0].reason == "interrupted"
        assert not host.get("k").awaiting_reply  # type: ignore[union-attr]
    finally:
        host.close()


def test_a_failing_turn_is_reported_and_the_conversation_goes_on(
        hermes_home: Path, model_server: Any, listener: Listener) -> None:
    server = model_server([error(500, "the model is down"), Reply(content="back")])
    host = SessionHost(settings_for(hermes_home, server.url))
    try:
        host.submit("k", "one", listener)
        assert listener.wait_finals("k", 1)[0].reason == "error"
        assert any("the model is down" in getattr(e, "message", "") for e in listener.events["k"])
        host.submit("k", "two", listener)
        assert listener.wait_finals("k", 2)[1].final == "back"
    finally:
        host.close()


def test_idle_conversations_are_let_go_and_resume_from_the_store(
        hermes_home: Path, model_server: Any, listener: Listener) -> None:
    server = model_server(echo)
    host = SessionHost(settings_for(hermes_home, server.url), surface=Surface.MESSAGING)
    try:
        host.submit("k", "one", listener)
        listener.wait_finals("k", 1)
        sid = host.session_id("k")
        assert host.wait_idle("k", 10)
        assert host.evict_idle(0) == 1 and host.live_count == 0
        host.submit("k", "two", listener)
        listener.wait_finals("k", 2)
        assert host.session_id("k") == sid
        assert "one" in [m.get("content") for m in server.requests[-1]["messages"]]
    finally:
        host.close()
