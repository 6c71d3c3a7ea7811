"""Index mode: many MCP tools reach the model through the one ``connections`` tool (a short index; an
action's schema loaded on demand), against real servers: mcp-server-time from PyPI and SDK servers."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from tools.mcp.conftest import PY, SERVERS, McpHome, flaky_command, free_port, stdio, time_server_command, unwrap


def many(prefix: str, count: int = 40) -> dict[str, Any]:
    return stdio([PY, str(SERVERS / "many_server.py"), "--prefix", prefix, "--count", str(count)])


def call(home: McpHome, reg: Any, args: dict[str, Any]) -> dict[str, Any]:
    data = json.loads(home.session(reg).dispatch("connections", args).text)
    assert isinstance(data, dict)
    return data


def managed_login(monkeypatch: pytest.MonkeyPatch) -> None:
    """A portal login whose token carries the ``managed_tools`` claim (claims are read offline)."""
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    claims = {"sub": "alice", "exp": time.time() + 3600, "managed_tools": True, "paid_access": True}
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", f"{part({'alg': 'none'})}.{part(claims)}.sig")
    # managed connectors are asked on loopback, where nothing listens (only 127.0.0.1 is a test target)
    monkeypatch.setenv("CONNECTOR_GATEWAY_URL", f"http://127.0.0.1:{free_port()}")


@pytest.fixture
def managed(monkeypatch: pytest.MonkeyPatch) -> None:
    managed_login(monkeypatch)


def definition_chars(reg: Any) -> int:
    """What the MCP part of every request costs: the JSON of its tool definitions."""
    names = [n for n in reg.names() if n.startswith("mcp_") or n == "connections"]
    return len(json.dumps(reg.definitions(names)))


def test_three_servers_of_forty_tools_cost_a_tenth_through_the_index(
        mcp_home: McpHome, monkeypatch: pytest.MonkeyPatch) -> None:
    servers = {"crm": many("crm"), "docs": many("docs"), "tickets": many("tickets")}
    mcp_home.configure(servers, mcp={"tool_index": "always"})
    mcp_home.load()
    states = mcp_home.settle("crm", "docs", "tickets")
    assert all(s.status == "ready" for s in states.values()), states
    # without the managed_tools claim there is no connections tool: every server's tools stay their own
    plain = mcp_home.load()
    assert "connections" not in plain.names()
    assert len([n for n in plain.names() if n.startswith("mcp_")]) == 120

    managed_login(monkeypatch)
    mcp_home.configure(servers)
    indexed = mcp_home.load()
    assert not [n for n in indexed.names() if n.startswith("mcp_")]
    entry = indexed.get("connections")
    assert entry is not None and entry.toolset == "connections"
    assert "- crm (ready): 40 actions — crm_list_issue" in entry.description
    assert "+34 more" in entry.description

    mcp_home.configure(servers, mcp={"tool_index": "never"})
    direct = mcp_home.load()
    assert "connections" not in direct.names()
    assert len([n for n in direct.names() if n.startswith("mcp_")]) == 120
    ratio = definition_chars(indexed) / definition_chars(direct)
    print(f"index mode: {ratio:.1%} of the definitions of every schema")
    assert ratio <= 0.10, ratio

    # the threshold decides: 120 tools over a threshold of 200 stay their own tools
    mcp_home.configure(servers, mcp={"index_threshold": 200})
    assert "connections" not in mcp_home.load().names()

    # through the index the model finds an action, reads its schema, and calls it
    mcp_home.configure(servers)
    reg = mcp_home.load()
    found = call(mcp_home, reg, {"action": "search", "query": "archive invoice"})
    assert found["matches"][0]["tool"].endswith("_archive_invoice"), found
    app = {"name": "docs", "mcp": True}
    described = call(mcp_home, reg, {"action": "describe", "app": app, "tool": "docs_update_contact"})
    assert described.get("input_schema", {}).get("required") == ["item_id"], described
    done = call(mcp_home, reg, {"action": "call", "app": app, "tool": "docs_update_contact",
                                "arguments": {"item_id": "c-9", "limit": 3}})
    assert json.loads(done["structured_content"]["result"]) == {
        "tool": "docs_update_contact", "item_id": "c-9", "limit": 3, "archived": False}
    wrong = call(mcp_home, reg, {"action": "call", "app": app, "tool": "docs_update_contact",
                                 "arguments": {"limit": "many"}})
    assert "item_id" in wrong["error"] or "limit" in wrong["error"]


def test_connections_with_the_time_server_and_a_crashing_one(mcp_home: McpHome, managed: None) -> None:
    mcp_home.configure({"time": stdio(time_server_command()), "flaky": stdio(flaky_command())},
                       mcp={"tool_index": "always"}, agent={"disabled_toolsets": []})
    mcp_home.load()
    assert mcp_home.settle("time", "flaky")["time"].status == "ready"
    reg = mcp_home.load()
    assert "mcp_time_get_current_time" not in reg.names()
    listed = call(mcp_home, reg, {"action": "list"})
    assert {"app": {"name": "time", "mcp": True}, "status": "ready", "actions": 2} in listed["apps"]
    time_app = {"name": "time", "mcp": True}
    actions = call(mcp_home, reg, {"action": "list", "app": time_app})["actions"]
    assert {a["tool"] for a in actions} == {"get_current_time", "convert_time"}
    now = call(mcp_home, reg, {"action": "call", "app": time_app, "tool": "get_current_time",
                               "arguments": {"timezone": "UTC"}})
    assert now["structured_content"]["timezone"] == "UTC"

    # a bare name means a managed connector (no gateway answers here): the error names the local spelling
    bare = call(mcp_home, reg, {"action": "list", "app": "time"})
    assert 'managed connector' in bare["error"] and '{"name": "time", "mcp": true}' in bare["error"]
    assert "cannot reach the connector gateway at http://127.0.0.1:" in bare["error"]
    unknown = call(mcp_home, reg, {"action": "describe", "app": time_app, "tool": "get_current_tim"})
    assert "get_current_time" in unknown["error"]
    missing = call(mcp_home, reg, {"action": "list", "app": {"name": "linear", "mcp": True}})
    assert "linear" in missing["error"] and "flaky, time" in missing["error"]

    # a server crashing mid-call answers an error; the others keep serving
    flaky = {"name": "flaky", "mcp": True}
    crashed = call(mcp_home, reg, {"action": "call", "app": flaky, "tool": "crash", "arguments": {}})
    assert "flaky" in crashed["error"]
    echo = call(mcp_home, reg, {"action": "call", "app": flaky, "tool": "echo", "arguments": {"text": "back"}})
    assert unwrap(echo["result"]) == "back"
    assert call(mcp_home, reg, {"action": "search", "query": "convert"})["matches"][0]["tool"] == "convert_time"


def test_a_disabled_server_toolset_is_left_out_of_the_index(mcp_home: McpHome, managed: None) -> None:
    mcp_home.configure({"flaky": stdio(flaky_command()), "other": stdio(flaky_command())},
                       mcp={"tool_index": "always"}, agent={"disabled_toolsets": ["mcp-other"]})
    mcp_home.load()
    mcp_home.settle("flaky", "other")
    reg = mcp_home.load()
    apps = [a["app"]["name"] for a in call(mcp_home, reg, {"action": "list"})["apps"]]
    assert apps == ["flaky"]
    refused = call(mcp_home, reg, {"action": "call", "app": {"name": "other", "mcp": True}, "tool": "echo",
                                   "arguments": {"text": "x"}})
    assert "other" in refused["error"]
