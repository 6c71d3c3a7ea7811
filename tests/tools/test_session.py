"""ToolSession: the one dispatch path, typed results, session tools and the wrappers around tools."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from hermes.errors import ToolError
from hermes.tools.registry import ToolRegistry
from hermes.tools.requests import Request
from hermes.tools.results import ToolResult
from hermes.tools.session import SessionContext, ToolSession
from hermes.tools.toolsets import Surface


def schema(name: str, **props: Any) -> dict[str, Any]:
    return {"name": name, "description": name, "parameters": {"type": "object", "properties": props}}


class Answering:
    """A person who answers every request with ``answer`` and remembers what was asked."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[Request] = []

    def ask(self, request: Request) -> Any:
        self.asked.append(request)
        return self.answer


@pytest.fixture
def reg() -> ToolRegistry:
    return ToolRegistry()


def test_results_are_typed_and_errors_are_flagged_without_parsing(reg: ToolRegistry) -> None:
    reg.register(name="ok", toolset="t", schema=schema("ok"), handler=lambda a, **k: {"fine": True})
    reg.register(name="bad", toolset="t", schema=schema("bad"), handler=lambda a, **k: (_ for _ in ()).throw(
        ToolError("no such thing")))
    reg.register(name="crash", toolset="t", schema=schema("crash"), handler=lambda a, **k: 1 / 0)
    session = ToolSession(reg, ["ok", "bad", "crash"], SessionContext(surface=Surface.CLI))
    assert session.dispatch("ok", "{}") == ToolResult('{"fine": true}', False)
    bad = session.dispatch("bad", {})
    assert bad.is_error and json.loads(bad.text) == {"error": "no such thing"}
    crash = session.dispatch("crash", {})
    assert crash.is_error and "ZeroDivisionError" in json.loads(crash.text)["error"]
    broken = session.dispatch("ok", "{not json")
    assert broken.is_error and "error" in json.loads(broken.text)


def test_a_session_offers_only_its_own_tools(reg: ToolRegistry) -> None:
    for name in ("mine", "other"):
        reg.register(name=name, toolset="t", schema=schema(name), handler=lambda a, **k: "{}")
    session = ToolSession(reg, ["mine"], SessionContext())
    assert [d["function"]["name"] for d in session.definitions()] == ["mine"]
    refused = session.dispatch("other", {})
    assert refused.is_error and "not enabled in this session" in refused.text and "mine" in refused.text
    assert "does not exist" in session.dispatch("ghost", {}).text


def test_a_session_state_tool_is_one_handler_and_one_marker(reg: ToolRegistry) -> None:
    def tally(args: dict[str, Any], *, session: ToolSession, **kw: Any) -> str:
        counts: dict[str, int] = session.state.setdefault("tally", {})
        counts[args["word"]] = counts.get(args["word"], 0) + 1
        return json.dumps(counts)

    reg.register(name="tally", toolset="t", schema=schema("tally", word={"type": "string"}), handler=tally,
                 needs_session=True)
    first, second = ToolSession(reg, ["tally"], SessionContext()), ToolSession(reg, ["tally"], SessionContext())
    first.dispatch("tally", {"word": "a"})
    assert json.loads(first.dispatch("tally", {"word": "a"}).text) == {"a": 2}
    assert json.loads(second.dispatch("tally", {"word": "a"}).text) == {"a": 1}  # state is per session
    outside = json.loads(reg.dispatch("tally", {"word": "a"}))
    assert "must be called from a session" in outside["error"]
    assert reg.get("tally") is not None and reg.get("tally").runs_alone  # type: ignore[union-attr]


def test_handlers_see_the_context_the_session_was_built_with(reg: ToolRegistry, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def look(args: dict[str, Any], **kw: Any) -> str:
        session = kw["session"]
        seen.update(task=kw["task_id"], surface=session.surface, channels=session.context.channels)
        return "{}"

    reg.register(name="look", toolset="t", schema=schema("look"), handler=look)
    ToolSession(reg, ["look"], SessionContext(surface=Surface.CRON, task_id="t-7", channels=("home",))).dispatch(
        "look", {})
    assert seen == {"task": "t-7", "surface": Surface.CRON, "channels": ("home",)}
    reg.dispatch("look", {})  # the catalog's own dispatch passes no session
    assert "session" not in seen or seen["task"] == "t-7"


@pytest.mark.parametrize(("answer", "runs", "asks_again"), [
    ("once", True, True), ("session", True, False), ("deny", False, True), (None, False, True),
])
def test_approval_required_tools_ask_first(reg: ToolRegistry, answer: Any, runs: bool, asks_again: bool) -> None:
    calls: list[dict[str, Any]] = []
    reg.register(name="launch", toolset="t", schema=schema("launch", target={"type": "string"}),
                 handler=lambda a, **k: calls.append(a) or "{}", requires_approval=True)
    person = Answering(answer)
    session = ToolSession(reg, ["launch"], SessionContext(surface=Surface.CLI, sink=person))
    result = session.dispatch("launch", {"target": "moon"})
    assert result.is_error is not runs
    assert calls == ([{"target": "moon"}] if runs else [])
    assert person.asked[0].kind == "approval" and "launch" in person.asked[0].payload["command"]
    session.dispatch("launch", {"target": "mars"})
    assert len(person.asked) == (2 if asks_again else 1)


def test_approval_without_a_person_is_a_refusal(reg: ToolRegistry) -> None:
    reg.register(name="launch", toolset="t", schema=schema("launch"), handler=lambda a, **k: "{}",
                 requires_approval=True)
    result = ToolSession(reg, ["launch"], SessionContext()).dispatch("launch", {})
    assert result.is_error and "approval" in json.loads(result.text)["error"]


def test_a_lone_surrogate_in_a_spilled_result_never_escapes(reg: ToolRegistry, tmp_path: Path) -> None:
    reg.register(name="odd", toolset="t", schema=schema("odd"), handler=lambda a, **k: "x\ud800" * 40_000)
    session = ToolSession(reg, ["odd"], SessionContext(result_budget=2_000, spill_dir=tmp_path))
    result = session.dispatch("odd", {})
    assert not result.is_error and "[hermes: tool result truncated" in result.text
    assert len(list(tmp_path.iterdir())) == 1


def test_execute_code_children_act_for_their_parent(reg: ToolRegistry) -> None:
    parent = ToolSession(reg, [], SessionContext(surface=Surface.CLI, task_id="p"))
    child = parent.child(task_id="p:script", tools=[])
    assert child.parent is parent and child.task_id == "p:script" and child.surface is Surface.CLI
    assert child.state is not parent.state


def test_the_tools_offered_at_the_start_are_frozen(reg: ToolRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LATE_KEY", raising=False)
    reg.register(name="late", toolset="t", schema=schema("late"), handler=lambda a, **k: '{"ran": true}',
                 check_fn=lambda: bool(os.environ.get("LATE_KEY")), requires_env=["LATE_KEY"])
    session = ToolSession(reg, ["late"], SessionContext())
    assert session.definitions() == []
    monkeypatch.setenv("LATE_KEY", "now-it-is-set")
    reg.invalidate_checks()
    result = session.dispatch("late", {})
    assert result.is_error and "not enabled in this session" in result.text


def test_a_garbage_tool_name_gets_a_short_error(reg: ToolRegistry) -> None:
    result = ToolSession(reg, [], SessionContext()).dispatch("x" * 1_000_000, {})
    assert result.is_error and len(result.text) < 1_000


def test_masking_stays_linear_on_repeated_key_prefixes(reg: ToolRegistry) -> None:
    """'sk-sk-sk-…' once backtracked quadratically (minutes for 100 kB); the suite's timeout guards it."""
    reg.register(name="echo", toolset="t", schema=schema("echo"), handler=lambda a, **k: "sk-" * 300_000)
    result = ToolSession(reg, ["echo"], SessionContext(result_budget=10_000_000)).dispatch("echo", {})
    assert not result.is_error and result.text.startswith("sk-sk-")
