"""Ending a session runs what its tools asked for: background processes of the session are stopped."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from fakes.model_server import Reply, call
from hermes.agent.events import RecordingSink
from hermes.agent.session import new_agent
from hermes.config.settings import Overrides, Settings
from hermes.tools.toolsets import Surface


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0): read its state
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


def test_close_stops_the_sessions_background_processes(hermes_home: Path, model_server: Any) -> None:
    server = model_server([call("terminal", {"command": "sleep 300", "background": True}), Reply(content="started")])
    (hermes_home / "config.yaml").write_text(f"model:\n  base_url: {server.url}\n  name: m\n  max_retries: 0\n")
    agent = new_agent(Settings.load(overrides=Overrides()), Surface.ONESHOT, RecordingSink(), requested=["terminal"])
    result = agent.run_turn("start something slow")
    assert result.final == "started"
    started = json.loads(next(m["content"] for m in agent.messages if m["role"] == "tool"))
    pid = int(started["pid"])
    assert alive(pid)
    agent.close()
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)
    agent.close()  # closing twice is harmless


class ReadyingProvider:
    """A provider that takes a while to get ready (as the embedded model loads and evaluates its prefix)."""

    name = "slow"
    model = "slow"

    def __init__(self) -> None:
        import threading

        self.started = threading.Event()
        self.finished = False
        self.seen: list[Any] = []

    def prepare(self, messages: list[dict[str, Any]], tools: Any, tool_choice: Any = None) -> None:
        self.started.set()
        self.seen.append((messages[0]["role"], tools is not None))
        time.sleep(0.5)
        self.finished = True

    def complete(self, messages: list[dict[str, Any]], tools: Any, options: Any) -> Any:
        raise AssertionError("not called here")


def test_prepare_runs_in_the_background_and_close_waits_for_it(hermes_home: Path) -> None:
    provider = ReadyingProvider()
    (hermes_home / "config.yaml").write_text("model:\n  base_url: http://127.0.0.1:9/v1\n  name: m\n")
    agent = new_agent(Settings.load(overrides=Overrides()), Surface.CLI, RecordingSink(), requested=["todo"],
                      provider=provider)
    started = time.monotonic()
    thread = agent.prepare()
    assert thread is not None and time.monotonic() - started < 0.3  # the caller goes on at once
    assert provider.started.wait(5)
    agent.close()  # waits for it: nothing may free the model under a prefix evaluation
    assert provider.finished and not thread.is_alive()
    assert provider.seen == [("system", True)]  # the session's system prompt and its tools
