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
