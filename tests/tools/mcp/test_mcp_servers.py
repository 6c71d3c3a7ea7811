"""MCP servers for real: mcp-server-time from PyPI over stdio, a Streamable HTTP server on 127.0.0.1, and
servers that crash mid-call, hang, or send malformed frames — the agent's tools survive each and say so."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tools.mcp.conftest import McpHome, flaky_command, garbage_command, stdio, time_server_command, unwrap


def call(home: McpHome, reg: object, name: str, args: dict[str, object]) -> dict[str, object]:
    result = home.session(reg).dispatch(name, args)
    data = json.loads(result.text)
    assert isinstance(data, dict)
    return data


def test_time_server_over_stdio_is_offered_and_called(mcp_home: McpHome) -> None:
    mcp_home.configure({"time": stdio(time_server_command())})
    reg = mcp_home.load()
    states = mcp_home.settle("time")
    assert states["time"].status == "ready", states["time"]
    reg = mcp_home.load()  # a session started after the listing arrived
    assert {"mcp_time_get_current_time", "mcp_time_convert_time"} <= set(reg.names())
    entry = reg.get("mcp_time_get_current_time")
    assert entry.toolset == "mcp-time"
    assert entry.schema["parameters"]["required"] == ["timezone"]
    assert "MCP server 'time'" in entry.description

    data = call(mcp_home, reg, "mcp_time_get_current_time", {"timezone": "UTC"})
    assert data["structured_content"]["timezone"] == "UTC"
    assert "datetime" in data["structured_content"]

    wrong = call(mcp_home, reg, "mcp_time_get_current_time", {"timezone": 5})
    assert "timezone" in wrong["error"]
    bad_zone = call(mcp_home, reg, "mcp_time_get_current_time", {"timezone": "Mars/Olympus"})
    assert "error" in bad_zone and "time" in bad_zone["error"]


def test_start_up_does_not_wait_for_a_server(mcp_home: McpHome, tmp_path: Path) -> None:
    # a "server" that never answers the handshake: loading returns while it is still connecting
    mcp_home.configure({"silent": {"command": "sleep", "args": ["600"], "connect_timeout": 30}})
    mcp_home.load()
    assert mcp_home.manager.states()["silent"].status == "connecting"


def test_the_last_listing_is_offered_before_the_server_answers(mcp_home: McpHome) -> None:
    mcp_home.configure({"flaky": stdio(flaky_command())})
    mcp_home.load()
    assert mcp_home.settle("flaky")["flaky"].status == "ready"
    mcp_home.restart_process()
    reg = mcp_home.load()  # a new process: the server is starting, its tools are there already
    assert mcp_home.manager.states()["flaky"].status == "connecting"
    assert "mcp_flaky_echo" in reg.names()
    assert unwrap(call(mcp_home, reg, "mcp_flaky_echo", {"text": "early"})["result"]) == "early"


def test_streamable_http_with_headers_and_an_image(mcp_home: McpHome, http_server: object,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    token = "tok-4f9a1c77e0b24d2a"
    url = http_server(token)  # type: ignore[operator]
    monkeypatch.setenv("FLAKY_HTTP_TOKEN", token)
    mcp_home.configure({"web": {"url": url, "headers": {"X-Test-Token": "${FLAKY_HTTP_TOKEN}"}},
                        "locked": {"url": url, "headers": {"X-Test-Token": "wrong-but-secret-value"}}})
    mcp_home.load()
    states = mcp_home.settle("web", "locked")
    assert states["web"].status == "ready", states["web"]
    assert states["locked"].status != "ready" and states["locked"].error
    reg = mcp_home.load()
    assert unwrap(call(mcp_home, reg, "mcp_web_add", {"a": 2, "b": 3})["result"]) == "5"
    picture = call(mcp_home, reg, "mcp_web_pixel", {})
    (file,) = picture["files"]
    assert file["mime_type"] == "image/png" and Path(file["path"]).read_bytes().startswith(b"\x89PNG")
    refused = call(mcp_home, reg, "mcp_locked_echo", {"text": "x"})
    assert "'locked'" in refused.get("error", "") or "mcp_locked_echo" in refused.get("error", "")
    # neither header value is written anywhere under HERMES_HOME but where the person wrote it
    for path in mcp_home.home.rglob("*"):
        if path.is_file() and path.name != "config.yaml":
            text = path.read_text(errors="replace")
            assert token not in text and "wrong-but-secret-value" not in text, path


def test_a_server_that_crashes_mid_call_is_reconnected(mcp_home: McpHome) -> None:
    mcp_home.configure({"flaky": stdio(flaky_command())})
    mcp_home.load()
    assert mcp_home.settle("flaky")["flaky"].status == "ready"
    reg = mcp_home.load()
    crashed = call(mcp_home, reg, "mcp_flaky_crash", {})
    assert "MCP server 'flaky'" in crashed["error"]
    # the server's stderr log is private (it may hold what the server printed about its tokens)
    import stat

    log = mcp_home.home / "logs" / "mcp" / "flaky.log"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600 and stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    # the next call waits for the reconnection and works
    assert unwrap(call(mcp_home, reg, "mcp_flaky_echo", {"text": "back"})["result"]) == "back"


def test_a_server_that_hangs_times_out_and_keeps_serving(mcp_home: McpHome) -> None:
    mcp_home.configure({"flaky": stdio(flaky_command(), timeout=2)})
    mcp_home.load()
    assert mcp_home.settle("flaky")["flaky"].status == "ready"
    reg = mcp_home.load()
    hung = call(mcp_home, reg, "mcp_flaky_hang", {})
    assert hung["error"] == "MCP server 'flaky' did not answer 'hang' within 2 s"
    assert unwrap(call(mcp_home, reg, "mcp_flaky_add", {"a": 1, "b": 1})["result"]) == "2"


def test_malformed_frames_end_in_an_error_naming_the_server(mcp_home: McpHome) -> None:
    mcp_home.configure({"garbage": stdio(garbage_command(), timeout=2),
                        "mute": stdio(garbage_command("--garbage-handshake"), connect_timeout=3)})
    mcp_home.load()
    states = mcp_home.settle("garbage", "mute")
    assert states["garbage"].status == "ready", states["garbage"]
    assert states["mute"].status in ("reconnecting", "failed") and states["mute"].error
    reg = mcp_home.load()
    answer = call(mcp_home, reg, "mcp_garbage_noise", {})
    assert "MCP server 'garbage'" in answer["error"]
    # the catalog and the manager still work after the garbage
    from hermes.tools.mcp.tool import report_lines, server_report

    lines = "\n".join(report_lines(server_report(mcp_home.settings())))
    assert "garbage" in lines and "mute" in lines and "✗" in lines


def test_include_exclude_and_the_environment(mcp_home: McpHome, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_TEST_API_KEY", "sk-not-for-children-0123456789")
    mcp_home.configure({"flaky": stdio(flaky_command(), env={"GREETING": "hello"},
                                       tools={"include": ["env_value", "echo", "crash"], "exclude": ["crash"]})})
    mcp_home.load()
    assert mcp_home.settle("flaky")["flaky"].status == "ready"
    reg = mcp_home.load()
    assert sorted(n for n in reg.names() if n.startswith("mcp_")) == ["mcp_flaky_echo", "mcp_flaky_env_value"]
    assert unwrap(call(mcp_home, reg, "mcp_flaky_env_value", {"name": "GREETING"})["result"]) == "hello"
    # the child gets a small safe environment, never this process's secrets
    assert unwrap(call(mcp_home, reg, "mcp_flaky_env_value", {"name": "HERMES_TEST_API_KEY"})["result"]) == "<unset>"
    assert "PATH" in os.environ


def test_a_removed_server_takes_its_tools_away(mcp_home: McpHome) -> None:
    mcp_home.configure({"flaky": stdio(flaky_command())})
    mcp_home.load()
    assert mcp_home.settle("flaky")["flaky"].status == "ready"
    mcp_home.configure({"other": {"command": "sleep", "args": ["600"]}})
    reg = mcp_home.load()
    assert not [n for n in reg.names() if n.startswith("mcp_flaky")]
    assert "flaky" not in mcp_home.manager.states()


def test_servers_whose_names_could_meet_get_suffixed_names_whatever_the_order(mcp_home: McpHome) -> None:
    from hermes.connectors.mcp.names import function_name

    # "fl" + tool "x_echo" and "fl_x" + tool "echo" would both be mcp_fl_x_echo: neither gets a plain name
    mcp_home.configure({"fl": stdio(flaky_command()), "fl_x": stdio(flaky_command())})
    mcp_home.load()
    assert {s.status for s in mcp_home.settle("fl", "fl_x").values()} == {"ready"}
    names = {n for n in mcp_home.load().names() if n.startswith("mcp_")}
    assert function_name("fl", "echo", suffixed=True) in names
    assert function_name("fl_x", "echo", suffixed=True) in names
    assert not names & {"mcp_fl_echo", "mcp_fl_x_echo"}
    # a server alone keeps its plain names
    mcp_home.configure({"fl": stdio(flaky_command())})
    assert "mcp_fl_echo" in mcp_home.load().names()
