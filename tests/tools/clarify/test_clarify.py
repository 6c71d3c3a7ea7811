"""requirement T-CLAR: the `clarify` tool's semantics through the registry, the core state and a fuzz of bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes.model_server import call, text
from hermes.agent.events import Request as EventsRequest
from hermes.tools.clarify.core import (
    NO_CHAT_SURFACE,
    NOT_DELIVERED,
    ClarifyRequest,
    ClarifySession,
    Question,
    no_reply_notice,
)
from hermes.tools.clarify.tool import DEFAULT_TIMEOUT, timeout_of
from hermes.tools.context import SessionView
from hermes.tools.registry import registry
from hermes.tools.requests import Request
from hermes.tools.toolsets import CORE_TOOLS, TOOLSETS, Surface


# -- a fake session ---------------------------------------------------------------------------------
class ScriptedSink:
    """Answers ask() with a scripted value (or by calling it with the request); records requests."""

    def __init__(self, answer: Any = None) -> None:
        self.answer = answer
        self.requests: list[Request] = []

    def emit(self, event: Any) -> None:
        return None

    def ask(self, request: Request) -> Any:
        self.requests.append(request)
        return self.answer(request) if callable(self.answer) else self.answer


class FakeSettings:
    def __init__(self, values: dict[str, Any] | None = None) -> None:
        self.values = values or {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


@dataclass
class FakeSession:
    surface: Surface = Surface.CLI
    sink: ScriptedSink = field(default_factory=ScriptedSink)
    state: dict[str, Any] = field(default_factory=dict)
    settings: Any = None
    task_id: str = "task-1"


def run(args: Any, session: FakeSession | None = None) -> dict[str, Any]:
    kw: dict[str, Any] = {"task_id": "task-1"}
    if session is not None:
        kw["session"] = session
    out = json.loads(registry.dispatch("clarify", args, **kw))
    assert isinstance(out, dict)
    return out


Q2 = {"questions": [{"question": "Which database?", "choices": ["PostgreSQL", "SQLite"]},
                    {"question": "Project name?"}]}


def answered(*values: Any, outcome: str = "submitted") -> Callable[[Request], dict[str, Any]]:
    """A surface that answers question i with values[i] (None: skipped)."""
    def reply(request: Request) -> dict[str, Any]:
        qs = request.payload["questions"]
        return {"outcome": outcome, "responses": [
            {"question": q["question"], "status": "answered" if v is not None else "skipped", "user_response": v}
            for q, v in zip(qs, values, strict=False)]}
    return reply


# -- registration -----------------------------------------------------------------------------------
def test_registered_interactive_in_the_clarify_toolset() -> None:
    entry = registry.get("clarify")
    assert entry is not None and entry.toolset == "clarify" and entry.interactive
    assert TOOLSETS["clarify"].tools == ("clarify",) and "clarify" in CORE_TOOLS
    params = entry.schema["parameters"]
    assert params["required"] == ["questions"]
    assert params["properties"]["questions"]["minItems"] == 1
    assert params["properties"]["questions"]["maxItems"] == 5


def test_fake_session_satisfies_the_protocol() -> None:
    assert isinstance(FakeSession(), SessionView)


def test_request_moved_but_still_importable_from_events() -> None:
    assert EventsRequest is Request
    req = ClarifyRequest.build([Question("q?", ("a",))], 12)
    assert isinstance(req, Request) and req.kind == "clarify"
    assert req.payload == {"questions": [{"question": "q?", "choices": ["a"], "multi_select": False}],
                           "timeout_seconds": 12}


# -- nobody to ask ----------------------------------------------------------------------------------
def _assert_undelivered(out: dict[str, Any], notice: str = NO_CHAT_SURFACE) -> None:
    assert out["outcome"] == "undelivered"
    assert out["notice"] == notice
    assert [r["status"] for r in out["responses"]] == ["unanswered", "unanswered"]
    assert all(r["user_response"] is None for r in out["responses"])


def test_no_session_is_undelivered() -> None:
    out = run(Q2)
    _assert_undelivered(out)
    assert out["notice"] == "[clarify prompt could not be delivered: no chat surface]"
    assert out["responses"][0] == {"question": "Which database?", "choices_offered": ["PostgreSQL", "SQLite"],
                                   "status": "unanswered", "user_response": None}


@pytest.mark.parametrize("surface", [Surface.ONESHOT, Surface.CRON, Surface.KANBAN])
def test_surfaces_without_a_person_are_undelivered_without_asking(surface: Surface) -> None:
    session = FakeSession(surface=surface, sink=ScriptedSink(answered("x", "y")))
    _assert_undelivered(run(Q2, session))
    assert session.sink.requests == []


def test_sink_answering_none_is_undelivered() -> None:
    session = FakeSession(surface=Surface.CLI, sink=ScriptedSink(None))
    _assert_undelivered(run(Q2, session))
    assert len(session.sink.requests) == 1


def test_broken_or_nonsense_surfaces_are_undelivered_never_no_reply() -> None:
    def boom(request: Request) -> Any:
        raise ConnectionError("socket closed")

    _assert_undelivered(run(Q2, FakeSession(sink=ScriptedSink(boom))), NOT_DELIVERED)
    _assert_undelivered(run(Q2, FakeSession(sink=ScriptedSink(42))), NOT_DELIVERED)


# -- answers ----------------------------------------------------------------------------------------
def test_request_carries_questions_and_timeout_and_result_is_in_order() -> None:
    session = FakeSession(sink=ScriptedSink(answered("SQLite", "hermes")))
    out = run(Q2, session)
    (req,) = session.sink.requests
    assert req.kind == "clarify"
    assert [q["question"] for q in req.payload["questions"]] == ["Which database?", "Project name?"]
    assert req.payload["timeout_seconds"] == DEFAULT_TIMEOUT == 300
    assert out == {"outcome": "submitted", "responses": [
        {"question": "Which database?", "choices_offered": ["PostgreSQL", "SQLite"], "status": "answered",
         "user_response": "SQLite"},
        {"question": "Project name?", "choices_offered": [], "status": "answered", "user_response": "hermes"},
    ]}
    assert list(out["responses"][0]) == ["question", "choices_offered", "status", "user_response"]


def test_skipped_and_multi_select_answers() -> None:
    args = {"questions": [{"question": "Colours?", "choices": ["red", "green", "blue"], "multi_select": True},
                          {"question": "Anything else?"}]}
    out = run(args, FakeSession(sink=ScriptedSink(answered(["red", "blue"], None))))
    assert out["outcome"] == "submitted"
    assert out["responses"][0]["user_response"] == ["red", "blue"]
    assert out["responses"][1] == {"question": "Anything else?", "choices_offered": [], "status": "skipped",
                                   "user_response": None}


def test_surface_may_answer_with_the_session_it_drove() -> None:
    def drive(request: Request) -> ClarifySession:
        state = ClarifySession([Question(q["question"]) for q in request.payload["questions"]])
        state.answer(0, "PostgreSQL")
        state.time_out()
        return state

    out = run(Q2, FakeSession(sink=ScriptedSink(drive)))
    assert out["outcome"] == "timed_out" and "notice" not in out
    assert [r["status"] for r in out["responses"]] == ["answered", "unanswered"]


def test_timeout_keeps_confirmed_answers() -> None:
    out = run(Q2, FakeSession(sink=ScriptedSink({"outcome": "timed_out", "notice": no_reply_notice(300),
                                                  "responses": [{"status": "answered", "user_response": "SQLite"},
                                                                {"status": "unanswered", "user_response": None}]})))
    assert out["outcome"] == "timed_out" and out["notice"] == "[user did not respond within 5m]"
    assert [(r["status"], r["user_response"]) for r in out["responses"]] == [("answered", "SQLite"),
                                                                             ("unanswered", None)]


def test_inconsistent_surface_replies_are_normalised() -> None:
    # cancelled keeps nothing; submitted leaves nothing unanswered; unknown outcome = nobody answered
    out = run(Q2, FakeSession(sink=ScriptedSink(answered("SQLite", "x", outcome="cancelled"))))
    assert out["outcome"] == "cancelled"
    assert [(r["status"], r["user_response"]) for r in out["responses"]] == [("skipped", None)] * 2
    out = run(Q2, FakeSession(sink=ScriptedSink({"outcome": "submitted", "responses": [
        {"status": "answered", "user_response": "SQLite"}]})))
    assert [r["status"] for r in out["responses"]] == ["answered", "skipped"]
    out = run(Q2, FakeSession(sink=ScriptedSink({"outcome": "whatever", "responses": "nope"})))
    assert out["outcome"] == "timed_out" and [r["status"] for r in out["responses"]] == ["unanswered"] * 2
    out = run(Q2, FakeSession(sink=ScriptedSink({"outcome": "submitted", "responses": [
        {"status": "answered", "user_response": "  "}, {"status": "answered", "user_response": None}]})))
    assert [r["status"] for r in out["responses"]] == ["skipped", "skipped"]


@pytest.mark.parametrize(("value", "expected"), [
    (None, 300.0), (42, 42.0), ("90", 90.0), (0, 300.0), (-5, 300.0), ("soon", 300.0), (True, 300.0),
    (float("nan"), 300.0),
])
def test_timeout_config(value: Any, expected: float) -> None:
    settings_obj = FakeSettings({} if value is None else {"clarify.timeout_seconds": value})
    assert timeout_of(FakeSession(settings=settings_obj)) == expected  # type: ignore[arg-type]


def test_configured_timeout_reaches_the_surface() -> None:
    session = FakeSession(settings=FakeSettings({"clarify.timeout_seconds": 45}), sink=ScriptedSink(None))
    run(Q2, session)
    assert session.sink.requests[0].payload["timeout_seconds"] == 45


# -- validation -------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    {}, {"questions": []}, {"questions": [{"question": f"q{i}"} for i in range(6)]},
    {"questions": "which?"}, {"questions": [{"choices": ["a"]}]}, {"questions": [{"question": "  "}]},
    {"questions": [{"question": "q", "choices": [str(i) for i in range(9)]}]},
    {"questions": [{"question": "q", "multi_select": "yes"}]}, {"questions": ["plain string"]},
])
def test_bad_arguments_name_the_field(args: dict[str, Any]) -> None:
    out = run(args, FakeSession(sink=ScriptedSink(answered("x"))))
    assert set(out) == {"error"}
    assert "questions" in out["error"]


def test_choices_are_cleaned() -> None:
    q = Question.from_payload({"question": " Pick ", "choices": ["a", " a ", "", "b"], "multi_select": True})
    assert q == Question("Pick", ("a", "b"), True)
    assert Question.from_payload({"question": "open", "multi_select": True}).multi_select is False


# -- the core ---------------------------------------------------------------------------------------
def test_core_interpret_numbers_text_and_own_words() -> None:
    q = Question("db?", ("PostgreSQL", "SQLite"))
    assert q.interpret("2") == "SQLite" and q.interpret("postgresql") == "PostgreSQL"
    assert q.interpret("9") == "9" and q.interpret("DuckDB") == "DuckDB" and q.interpret("   ") is None
    m = Question("c?", ("red", "green", "blue"), True)
    assert m.interpret("1, 3") == ["red", "blue"] and m.interpret("green,teal,2") == ["green", "teal"]


def test_core_state_machine() -> None:
    s = ClarifySession([Question("a"), Question("b"), Question("c")])
    s.move(1)
    s.answer(1, "B")  # answering the second moves on to the next unanswered, wrapping around
    assert s.current == 2 and not s.done
    s.skip(2)
    assert s.current == 0
    s.answer(0, "A")
    assert s.outcome == "submitted" and s.statuses == ["answered", "answered", "skipped"]
    with pytest.raises(RuntimeError):
        s.answer(0, "again")
    t = ClarifySession([Question("a"), Question("b")])
    t.answer(0, "")  # a blank answer is a skip
    assert t.statuses[0] == "skipped"
    t.submit()
    assert t.result()["outcome"] == "submitted" and t.statuses == ["skipped", "skipped"]
    assert no_reply_notice(3600) == "[user did not respond within 60m]"
    assert no_reply_notice(0.5) == "[user did not respond within 1m]"


# -- fuzz -------------------------------------------------------------------------------------------
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=12), inner, max_size=6),
    max_leaves=25,
)
QUESTIONISH = st.fixed_dictionaries(
    {}, optional={"question": JSON | st.text(max_size=30), "choices": JSON | st.lists(JSON, max_size=10),
                  "multi_select": JSON},
)
ARGS = (JSON | st.dictionaries(st.sampled_from(["questions", "question", "choices"]),
                               JSON | st.lists(QUESTIONISH | JSON, max_size=7), max_size=3)
        | st.text(max_size=40) | st.binary(max_size=20))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=ARGS, reply=JSON, surface=st.sampled_from(list(Surface)))
def test_fuzz_malformed_payloads_never_escape_dispatch(args: Any, reply: Any, surface: Surface) -> None:
    out = json.loads(registry.dispatch("clarify", args, task_id="t",
                                       session=FakeSession(surface=surface, sink=ScriptedSink(reply))))
    assert isinstance(out, dict)
    if "error" not in out:
        assert out["outcome"] in ("submitted", "cancelled", "timed_out", "undelivered")
        for r in out["responses"]:
            assert r["status"] in ("answered", "skipped", "unanswered")
            assert (r["user_response"] is None) == (r["status"] != "answered")


# -- end to end: the real CLI ------------------------------------------------------------------------
def _hermes(home: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI") and k != "HERMES_MODEL"}
    env["HERMES_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=env,
                          input=input, timeout=45)


def _clarify_result(server: Any) -> dict[str, Any]:
    tool = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    out = json.loads(tool[-1]["content"])
    assert isinstance(out, dict)
    return out


def test_e2e_oneshot_is_undelivered(hermes_home: Path, model_server: Any) -> None:
    server = model_server([call("clarify", Q2), text("I assumed SQLite.")])
    proc = _hermes(hermes_home, "-z", "set it up", "--base-url", server.url, "--model", "m")
    assert proc.returncode == 0, proc.stderr
    out = _clarify_result(server)
    assert out["outcome"] == "undelivered" and out["notice"] == NO_CHAT_SURFACE


def test_e2e_interactive_chat_answers_from_piped_lines(hermes_home: Path, model_server: Any) -> None:
    server = model_server([call("clarify", Q2), text("Using SQLite.")])
    proc = _hermes(hermes_home, "chat", "--base-url", server.url, "--model", "m", input="set it up\n2\n\n/exit\n")
    assert proc.returncode == 0, proc.stderr
    out = _clarify_result(server)
    assert out["outcome"] == "submitted"
    assert [(r["status"], r["user_response"]) for r in out["responses"]] == [("answered", "SQLite"),
                                                                             ("skipped", None)]
    assert "Which database?" in proc.stdout and "Using SQLite." in proc.stdout
