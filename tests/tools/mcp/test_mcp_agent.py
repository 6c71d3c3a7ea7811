"""An agent session with an MCP server: the tools are offered at start (from the last listing, while the
server is still starting) and a model's call goes all the way to the real server and back."""

from __future__ import annotations

import json
from typing import Any

from fakes.model_server import Reply, call
from hermes.agent.events import RecordingSink
from hermes.agent.session import new_agent
from hermes.tools.registry import ToolRegistry
from hermes.tools.toolsets import Surface
from tools.mcp.conftest import McpHome, flaky_command, stdio, unwrap


def test_a_session_offers_and_calls_an_mcp_tool(mcp_home: McpHome, model_server: Any) -> None:
    server = model_server([call("mcp_flaky_echo", {"text": "through the agent"}), Reply(content="done")])
    mcp_home.configure({"flaky": stdio(flaky_command())},
                       model={"base_url": server.url, "name": "m", "max_retries": 0})
    mcp_home.load()
    assert mcp_home.settle("flaky")["flaky"].status == "ready"
    mcp_home.restart_process()

    agent = new_agent(mcp_home.settings(), Surface.ONESHOT, RecordingSink(), requested=["mcp-flaky"],
                      reg=ToolRegistry())
    assert mcp_home.manager.states()["flaky"].status == "connecting"  # start-up did not wait
    offered = {d["function"]["name"] for d in agent.tool_definitions}
    assert {"mcp_flaky_echo", "mcp_flaky_add"} <= offered
    result = agent.run_turn("echo something")
    assert result.final == "done"
    tool_message = next(m for m in agent.messages if m["role"] == "tool")
    assert unwrap(json.loads(tool_message["content"])["result"]) == "through the agent"
