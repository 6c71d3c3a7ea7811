"""A connector app served by an MCP server the gateway runs: ``mcp-server-time`` (from PyPI) and the test
suite's flaky server over stdio, their tools as the apps' actions through ``/v1/connectors/*``, metered,
under the gateway-held deadline, a crash or a hang an error naming the app."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakes.vendors.harness import GatewayHarness
from hermes.toolgateway.storage.connector_store import ConnectorStore

pytest.importorskip("mcp_server_time")
FLAKY = Path(__file__).resolve().parents[1] / "tools" / "mcp" / "servers" / "flaky_server.py"


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@pytest.fixture(scope="module")
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory, clock: Clock) -> Iterator[GatewayHarness]:
    apps = {"clock": {"title": "Clock", "mcp": {"command": sys.executable,
                                                "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}},
            "flaky": {"mcp": {"command": sys.executable, "args": [str(FLAKY)], "timeout": 60,
                              "env": {"FLAKY_SECRET": "s3cr3t-of-the-server"}}},
            "broken": {"mcp": {"command": "/nonexistent/mcp-server", "connect_timeout": 5}}}
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_mcp"), clock=clock,
                             rate_limit={"per_second": 1000, "burst": 1000}, connectors={"apps": apps})
    os.environ["HERMES_TEST_GATEWAY_ONLY"] = "gateway-process-secret"  # the gateway's, never its servers'
    try:
        with harness:
            yield harness
    finally:
        del os.environ["HERMES_TEST_GATEWAY_ONLY"]


def _person(gw: GatewayHarness) -> tuple[str, dict[str, str]]:
    name = f"u{time.monotonic_ns()}"
    user = gw.user(name, "paid")
    store = ConnectorStore(gw.side.conn)
    ids = {app: store.add(user.id, app, name="main").id for app in ("clock", "flaky")}
    return gw.token(name), ids


def _api(gw: GatewayHarness, method: str, path: str, token: str, body: Any = None) -> httpx.Response:
    return httpx.request(method, gw.relay_url("connector") + path, json=body, timeout=60,
                         headers={"authorization": f"Bearer {token}"})


def test_an_mcp_servers_tools_are_the_apps_actions_and_calls_are_metered(gw: GatewayHarness) -> None:
    token, ids = _person(gw)
    actions = _api(gw, "GET", "/v1/connectors/clock/actions", token).json()
    assert actions["app_title"] == "Clock"
    assert {a["action"] for a in actions["actions"]} == {"get_current_time", "convert_time"}
    described = _api(gw, "GET", "/v1/connectors/clock/actions/get_current_time", token).json()
    assert "timezone" in described["input_schema"]["properties"]
    apps = {a["app"]: a["actions"] for a in _api(gw, "GET", "/v1/connectors/apps", token).json()["apps"]}
    assert apps["clock"] == 2 and apps["flaky"] >= 5

    done = _api(gw, "POST", "/v1/connectors/clock/actions/get_current_time", token,
                {"account": ids["clock"], "arguments": {"timezone": "Europe/Paris"}})
    assert done.status_code == 200, done.text
    answer = done.json()
    assert answer["account"] == "main" and "Europe/Paris" in answer["result"]["result"]
    converted = _api(gw, "POST", "/v1/connectors/clock/actions/convert_time", token, {
        "account": ids["clock"], "arguments": {"source_timezone": "UTC", "time": "12:00",
                                               "target_timezone": "Asia/Tokyo"}}).json()
    assert "21:00" in converted["result"]["result"]
    bad = _api(gw, "POST", "/v1/connectors/clock/actions/get_current_time", token,
               {"account": ids["clock"], "arguments": {"timezone": "Mars/Olympus"}})
    assert bad.status_code == 502 and "clock" in bad.json()["error"]
    rows = gw.usage_rows("SELECT operation, units, status FROM usage WHERE category = 'connectors' "
                                "AND vendor = 'clock' ORDER BY id")
    assert [tuple(r) for r in rows][-3:] == [("clock.get_current_time", 1, 200), ("clock.convert_time", 1, 200),
                                             ("clock.get_current_time", 0, 502)]
    # the server gets its configured env, never the gateway process's own
    def env(name: str) -> Any:
        return _api(gw, "POST", "/v1/connectors/flaky/actions/env_value", token,
                    {"account": ids["flaky"], "arguments": {"name": name}}).json()["result"]["result"]

    assert env("FLAKY_SECRET") == "s3cr3t-of-the-server"
    assert env("HERMES_TEST_GATEWAY_ONLY") == "<unset>"


def test_a_hang_is_held_to_the_gateways_deadline_and_a_crash_is_an_error(gw: GatewayHarness, clock: Clock) -> None:
    token, ids = _person(gw)
    out: list[httpx.Response] = []
    worker = threading.Thread(target=lambda: out.append(_api(gw, "POST", "/v1/connectors/flaky/actions/hang", token,
                                                             {"account": ids["flaky"], "arguments": {},
                                                              "call_id": "call-hang-0001"})))
    worker.start()
    time.sleep(1.0)  # the call is in flight at the server
    clock.offset += 301
    worker.join(30)
    clock.offset -= 301
    assert out and out[0].status_code == 504 and out[0].json()["code"] == "deadline_exceeded"
    crashed = _api(gw, "POST", "/v1/connectors/flaky/actions/crash", token, {"account": ids["flaky"], "arguments": {}})
    assert crashed.status_code == 502 and "flaky" in crashed.json()["error"]
    # the gateway's supervisor restarts the server: the next call works
    echoed = _api(gw, "POST", "/v1/connectors/flaky/actions/echo", token,
                  {"account": ids["flaky"], "arguments": {"text": "back again"}})
    assert echoed.status_code == 200, echoed.text
    assert echoed.json()["result"]["result"] == "back again"


def test_a_server_that_cannot_start_is_reported_and_leaves_the_other_apps_alone(gw: GatewayHarness) -> None:
    token, _ = _person(gw)
    broken = _api(gw, "GET", "/v1/connectors/broken/actions", token)
    assert broken.status_code == 503 and broken.json()["code"] == "app_unavailable"
    assert "MCP server is not ready" in broken.json()["error"]
    apps = {a["app"]: a["actions"] for a in _api(gw, "GET", "/v1/connectors/apps", token).json()["apps"]}
    assert apps["clock"] == 2 and apps["broken"] == 0
