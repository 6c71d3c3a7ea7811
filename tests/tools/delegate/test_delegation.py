"""delegate_task (requirement T-DEL): child agents over real HTTP against the scripted model server."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from fakes.model_server import Reply, call
from hermes.agent.events import RecordingSink
from hermes.agent.session import new_agent
from hermes.config.settings import Overrides, Settings
from hermes.store.sessions import SessionStore
from hermes.tools.toolsets import Surface


def system_of(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def tool_names(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools", [])}


def settings_for(home: Path, url: str, extra: str = "") -> Settings:
    (home / "config.yaml").write_text(f"model:\n  base_url: {url}\n  name: m\n  max_retries: 0\n{extra}")
    return Settings.load(overrides=Overrides())


def test_batch_of_children_returns_summaries(hermes_home: Path, model_server: Any) -> None:
    def script(body: dict[str, Any]) -> Reply:
        system = system_of(body)
        if "Goal: count apples" in system:
            return Reply(content="There are 3 apples.")
        if "Goal: count pears" in system:
            return Reply(content="There are 5 pears.")
        if any(m["role"] == "tool" for m in body["messages"]):
            return Reply(content="3 apples and 5 pears.")
        return call("delegate_task", {"tasks": [
            {"goal": "count apples", "context": "the basket on the left"},
            {"goal": "count pears", "toolsets": ["todo"]}]})

    server = model_server(script)
    settings = settings_for(hermes_home, server.url)
    store = SessionStore(settings.paths.database)
    try:
        agent = new_agent(settings, Surface.CLI, RecordingSink(), store=store)
        assert "delegate_task" in agent.tools
        result = agent.run_turn("count the fruit")
        assert result.final == "3 apples and 5 pears."
        tool_msg = next(m for m in agent.messages if m["role"] == "tool")
        payload = json.loads(tool_msg["content"])
        assert [r["status"] for r in payload["results"]] == ["completed", "completed"]
        assert [r["summary"] for r in payload["results"]] == ["There are 3 apples.", "There are 5 pears."]

        child_requests = [b for b in server.requests if "Goal:" in system_of(b)]
        assert len(child_requests) == 2
        apple = next(b for b in child_requests if "apples" in system_of(b))
        assert "the basket on the left" in system_of(apple)
        assert not tool_names(apple) & {"clarify", "delegate_task", "memory", "execute_code", "cronjob_manage"}
        pear = next(b for b in child_requests if "pears" in system_of(b))
        assert tool_names(pear) == {"todo_list"}  # narrowed to the toolsets the call named
        children = [s for s in store.list_sessions() if s.parent_id == agent.session_id]
        assert len(children) == 2
    finally:
        store.close()


def test_depth_limit_and_bad_arguments(hermes_home: Path, model_server: Any) -> None:
    server = model_server([Reply(content="unused")])
    settings = settings_for(hermes_home, server.url, "delegation:\n  max_depth: 2\n")
    agent = new_agent(settings, Surface.CLI, RecordingSink())
    from hermes.agent.delegation import child_tools

    assert "delegate_task" in child_tools(agent, None, depth_allows=True)
    assert "delegate_task" not in child_tools(agent, None, depth_allows=False)
    from hermes.agent.delegation import run_delegation as handler
    from hermes.errors import ToolArgumentError

    for bad in ({}, {"goal": "x", "tasks": [{"goal": "y"}]}, {"tasks": [{"goal": "y", "toolsets": ["nope"]}]}):
        try:
            handler(bad, agent)
        except ToolArgumentError as exc:
            assert str(exc)
        else:
            raise AssertionError(f"{bad} accepted")
    agent.depth = 2
    from hermes.errors import HermesError

    try:
        handler({"goal": "x"}, agent)
    except HermesError as exc:
        assert "depth limit" in str(exc)
    else:
        raise AssertionError("depth limit not enforced")


def test_interrupting_the_parent_stops_children(hermes_home: Path, model_server: Any) -> None:
    def script(body: dict[str, Any]) -> Reply:
        if "Goal:" in system_of(body):
            return Reply(content="too late", delay=30)
        return call("delegate_task", {"tasks": [{"goal": "slow one"}, {"goal": "slow two"}]})

    server = model_server(script)
    settings = settings_for(hermes_home, server.url)
    agent = new_agent(settings, Surface.CLI, RecordingSink())
    outcome: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: outcome.setdefault("r", agent.run_turn("go")))
    runner.start()
    deadline = time.monotonic() + 15
    while sum("Goal:" in system_of(b) for b in server.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    agent.interrupt()
    runner.join(timeout=15)
    assert not runner.is_alive()
    assert outcome["r"].reason == "interrupted"
    tool_msg = next(m for m in agent.messages if m["role"] == "tool")
    assert "interrupted" in tool_msg["content"]
