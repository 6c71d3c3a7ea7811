"""The gateway's OAuth connect flow for a connector app: authorization code + PKCE against an OAuth2
provider on loopback, the Gmail-like REST app behind it; tokens sealed, refreshed before they lapse and
after a restart, never returned; reconnect retires the old account; state single-use and bound to the
browser that started."""

from __future__ import annotations

import json
import logging
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from fakes.vendors.harness import GatewayHarness
from fakes.vendors.mailapp import MailApp, document
from fakes.vendors.oauth_provider import Provider
from fakes.vendors.server import ServerThread

SECRET = "cs-very-secret-client-value"
TTL = 3600


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class World:
    """The mail app, its provider and a gateway that can be restarted on the same home and port."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = _free_port()
        self.redirect = f"http://127.0.0.1:{self.port}/relay/connector/v1/connectors/oauth/callback"
        self.mail = MailApp({})
        self.provider = Provider(self.mail.tokens, client_id="hermes-gw", client_secret=SECRET,
                                 redirect_uri=self.redirect, ttl=TTL)
        self.mail_server = ServerThread(self.mail.app()).start()
        self.provider_server = ServerThread(self.provider.app()).start()
        doc = home / "mail.openapi.json"
        doc.write_text(json.dumps(document(self.mail_server.url)))
        base = self.provider_server.url
        self.apps = {
            "gmail": {"openapi": str(doc), "oauth": {
                "authorize_url": f"{base}/authorize", "token_url": f"{base}/token", "client_id": "hermes-gw",
                "client_secret_env": "GMAIL_CLIENT_SECRET", "scopes": ["mail.read", "mail.send"],
                "userinfo_url": f"{base}/userinfo", "authorize_params": {"access_type": "offline"}}},
            "plain": {"openapi": str(doc)},
        }
        self.clock = Clock()
        self.texts: list[str] = []  # every answer a client or browser got
        self.gw = self._gateway()

    def _gateway(self) -> GatewayHarness:
        # the client secret comes from the environment variable the config names
        return GatewayHarness(self.home, clock=self.clock, port=self.port, env={"GMAIL_CLIENT_SECRET": SECRET},
                              rate_limit={"per_second": 1000, "burst": 1000},
                              connectors={"oauth_redirect_uri": self.redirect, "apps": self.apps}).start()

    def restart(self) -> None:
        self.gw.stop()
        self.gw = self._gateway()

    def close(self) -> None:
        self.gw.stop()
        self.mail_server.stop()
        self.provider_server.stop()

    # -- the account holder ---------------------------------------------------------------------------
    def api(self, method: str, path: str, token: str, body: Any = None) -> httpx.Response:
        resp = httpx.request(method, self.gw.relay_url("connector") + path, json=body, timeout=30,
                             headers={"authorization": f"Bearer {token}"})
        self.texts.append(resp.text)
        return resp

    def browse(self, url: str, browser: httpx.Client) -> httpx.Response:
        resp = browser.get(url)
        self.texts.append(resp.text + json.dumps(dict(resp.headers)))
        return resp

    def connect(self, token: str, body: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[httpx.Response]]:
        """Start a flow and walk its browser half; (the flow's final status, the browser's answers)."""
        begun = self.api("POST", "/v1/connectors/gmail/connect", token, body or {}).json()
        with httpx.Client(timeout=30) as browser:
            start = self.browse(begun["url"], browser)
            assert start.status_code == 302, start.text
            at_provider = self.browse(start.headers["location"], browser)
            assert at_provider.status_code == 302
            done = self.browse(at_provider.headers["location"], browser)
        status = self.api("GET", f"/v1/connectors/connect/{begun['connect_id']}", token).json()
        return status, [start, at_provider, done]

    def call(self, token: str, account: str, q: str = "invoice") -> httpx.Response:
        return self.api("POST", "/v1/connectors/gmail/actions/search_messages", token,
                        {"account": account, "arguments": {"q": q}})


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = World(tmp_path_factory.mktemp("gw_oauth"))
    try:
        yield w
    finally:
        w.close()


def _person(world: World) -> tuple[int, str]:
    name = f"u{time.monotonic_ns()}"
    user = world.gw.user(name, "paid")
    return user.id, world.gw.token(name, ttl=24 * 3600)


def test_connect_call_refresh_before_lapse_and_after_restart_then_reconnect(world: World,
                                                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    user_id, token = _person(world)
    status, (start, _, done) = world.connect(token, {"name": "work"})
    assert status["status"] == "connected", status
    account = status["account"]
    assert (account["name"], account["display_name"], account["status"]) == ("work", "alice@work.example", "active")
    assert done.status_code == 200 and "Gmail connected" in done.text
    # the authorization request: the configured redirect URI, PKCE S256, the configured scopes and extras
    query = world.provider.authorize_queries[-1]
    assert query["redirect_uri"] == world.redirect and query["code_challenge_method"] == "S256"
    assert query["scope"] == "mail.read mail.send" and query["access_type"] == "offline"
    cookie = start.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "path=/relay/connector/v1/connectors/oauth" in cookie

    first = world.call(token, account["id"])
    assert first.status_code == 200, first.text
    assert first.json()["result"]["mailbox"] == "alice@work.example"
    sent_first = world.mail.seen_tokens[-1]

    # 60 s before the token lapses (by the gateway's clock): refreshed before the call, the old one never sent
    world.clock.offset = TTL - 60
    before = world.provider.stats["refreshes"]
    again = world.call(token, account["id"])
    assert again.status_code == 200 and world.provider.stats["refreshes"] == before + 1
    assert world.mail.seen_tokens[-1] != sent_first and world.mail.seen_tokens[-1] in world.mail.tokens

    # the gateway is down while the token lapses; after the restart the first call refreshes it
    world.gw.stop()
    world.provider.expire_all()
    world.clock.offset += 3 * TTL
    world.restart()
    refused, seen = world.provider.stats["refused"], len(world.mail.seen_tokens)
    after = world.call(token, account["id"])
    assert after.status_code == 200, after.text
    assert len(world.mail.seen_tokens) == seen + 1  # refreshed from the stored expiry: no lapsed token sent
    assert world.provider.stats["refreshes"] == before + 2 and world.provider.stats["refused"] == refused

    # revoked early at the provider (the app answers 401): refreshed once and sent again
    world.provider.expire_all()
    early = world.call(token, account["id"])
    assert early.status_code == 200, early.text
    assert world.provider.stats["refreshes"] == before + 3

    # reconnecting replaces it under the same name and retires the old one (its token dropped)
    world.provider.login = "alice@work.example (reconnected)"
    status, _ = world.connect(token, {"replaces": "work"})
    new = status["account"]
    assert (new["name"], new["display_name"]) == ("work", "alice@work.example (reconnected)")
    listed = {a["id"]: a for a in world.api("GET", "/v1/connectors/gmail/accounts", token).json()["accounts"]}
    assert listed[account["id"]]["status"] == "retired" and listed[account["id"]]["replaced_by"] == new["id"]
    assert world.call(token, account["id"]).json()["code"] == "account_retired"
    assert world.call(token, new["id"]).json()["result"]["mailbox"] == "alice@work.example (reconnected)"
    rows = world.gw.side.conn.execute("SELECT id, credential FROM connector_accounts WHERE user_id = ?",
                                      (user_id,)).fetchall()
    creds = {r[0]: r[1] for r in rows}
    assert creds[account["id"]] is None and creds[new["id"]].startswith("v1.")

    # provider tokens, codes and the client secret never reached a client or a browser, nor the database bare
    everything = "\n".join(world.texts)
    assert SECRET not in everything and "at-" not in everything and "rt-" not in everything
    assert "at-" not in creds[new["id"]] and "rt-" not in creds[new["id"]]
    assert caplog.records  # the gateway and its HTTP clients did log
    logged = caplog.text  # every log line of the gateway (and the test's clients), debug included
    assert SECRET not in logged and "at-" not in logged and "rt-" not in logged


def test_state_is_single_use_bound_to_the_browser_and_the_user(world: World) -> None:
    _, token = _person(world)
    _, other = _person(world)
    begun = world.api("POST", "/v1/connectors/gmail/connect", token, {"name": "home"}).json()
    # the flow's id answers only the person who started it
    assert world.api("GET", f"/v1/connectors/connect/{begun['connect_id']}", other).status_code == 404
    with httpx.Client(timeout=30) as browser:
        start = browser.get(begun["url"])
        assert start.status_code == 302
        assert browser.get(begun["url"]).status_code == 400  # the ticket works once
        back = browser.get(start.headers["location"]).headers["location"]
    assert urlsplit(back)._replace(query="").geturl() == world.redirect
    with httpx.Client(timeout=30) as stranger:  # another browser (no cookie) brings the code back: refused
        refused = stranger.get(back)
    assert refused.status_code == 400 and "different browser" in refused.text
    status = world.api("GET", f"/v1/connectors/connect/{begun['connect_id']}", token).json()
    assert status["status"] == "failed" and "different browser" in status["error"]
    with httpx.Client(timeout=30) as browser:  # and the state is gone: replaying it anywhere fails
        assert browser.get(back).status_code == 400
    code = parse_qs(urlsplit(back).query)["code"][0]
    assert code in world.provider.codes  # never redeemed

    # a provider that refuses: the flow fails with its error code only
    denied = world.api("POST", "/v1/connectors/gmail/connect", token, {}).json()
    with httpx.Client(timeout=30) as browser:
        start = browser.get(denied["url"])
        state = parse_qs(urlsplit(start.headers["location"]).query)["state"][0]
        page = browser.get(world.redirect, params={"error": "access_denied<script>", "state": state})
    assert page.status_code == 400 and "<script>" not in page.text and "access_denied" in page.text
    assert world.api("GET", f"/v1/connectors/connect/{denied['connect_id']}", token).json()["status"] == "failed"

    # an app without a provider, a bad name, an unknown field
    assert world.api("POST", "/v1/connectors/plain/connect", token, {}).json()["code"] == "no_oauth"
    assert world.api("POST", "/v1/connectors/gmail/connect", token, {"name": "Bad Name!"}).status_code == 400
    assert world.api("POST", "/v1/connectors/gmail/connect", token,
                     {"redirect_uri": "https://evil.example/cb"}).json()["code"] == "invalid_request"
    with httpx.Client(timeout=30) as browser:
        assert browser.get(world.redirect, params={"code": "x", "state": "made-up"}).status_code == 400


def test_the_redirect_uri_must_be_the_gateways_callback(tmp_path: Path) -> None:
    from hermes.errors import ConfigError
    from hermes.toolgateway.config import load_config

    oauth = {"authorize_url": "https://p.example/a", "token_url": "https://p.example/t", "client_id": "c",
             "redirect_uri": "https://evil.example/steal"}
    doc = tmp_path / "d.json"
    doc.write_text(json.dumps(document("https://mail.example")))
    with pytest.raises(ConfigError, match="redirect_uri"):
        load_config(None, overrides={"connectors": {"apps": {"gmail": {"openapi": str(doc), "oauth": oauth}}}},
                    env={}, home=tmp_path)
    oauth = {**oauth, "redirect_uri": None, "client_secret_env": "NOT_SET_HERE"}
    with pytest.raises(ConfigError, match="NOT_SET_HERE"):
        load_config(None, overrides={"public_url": "https://gw.example",
                                     "connectors": {"apps": {"gmail": {"openapi": str(doc), "oauth": oauth}}}},
                    env={}, home=tmp_path)
    del oauth["client_secret_env"]
    config = load_config(None, overrides={"public_url": "https://gw.example",
                                          "connectors": {"apps": {"gmail": {"openapi": str(doc), "oauth": oauth}}}},
                         env={}, home=tmp_path)
    provider = config.connector_apps["gmail"].oauth
    assert provider is not None
    assert provider.redirect_uri == "https://gw.example/relay/connector/v1/connectors/oauth/callback"


def test_an_mcp_app_cannot_have_an_oauth_provider(tmp_path: Path) -> None:
    # an MCP app's server runs with the operator's env credentials: OAuth users would act as the operator
    from hermes.errors import ConfigError
    from hermes.toolgateway.config import load_config

    oauth = {"authorize_url": "https://p.example/a", "token_url": "https://p.example/t", "client_id": "c"}
    mcp = {"command": sys.executable, "args": ["-c", "pass"], "env": {"MAIL_TOKEN": "operator-token"}}
    with pytest.raises(ConfigError, match=r"connectors\.apps\.mail has both mcp and oauth.*operator"):
        load_config(None, overrides={"public_url": "https://gw.example",
                                     "connectors": {"apps": {"mail": {"mcp": mcp, "oauth": oauth}}}},
                    env={}, home=tmp_path)
    config = load_config(None, overrides={"public_url": "https://gw.example",
                                          "connectors": {"apps": {"mail": {"mcp": mcp}}}}, env={}, home=tmp_path)
    assert config.connector_apps["mail"].oauth is None and config.connector_apps["mail"].mcp is not None


def test_hermes_connectors_connect_walks_the_flow_and_reconnects(world: World, hermes_home: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import subprocess

    _, token = _person(world)
    monkeypatch.setenv("CONNECTOR_GATEWAY_URL", world.gw.relay_url("connector"))
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", token)

    def run(*extra: str) -> str:
        proc = subprocess.Popen([sys.executable, "-m", "hermes", "connectors", "connect", "gmail", "--no-browser",
                                 *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=dict(os.environ))
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        url = lines[1].strip()
        assert url.startswith("http://127.0.0.1:") and "/oauth/start?ticket=" in url, lines
        with httpx.Client(timeout=30) as browser:  # the person's browser signs in
            at_provider = browser.get(url).headers["location"]
            browser.get(browser.get(at_provider).headers["location"])
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, "".join(lines) + out
        return out

    world.provider.login = "alice@home.example"
    assert "Connected the Gmail account home (alice@home.example)." in run("--name", "home")
    world.provider.login = "alice@home.example (again)"
    out = run("--replaces", "home")
    assert "Connected the Gmail account home (alice@home.example (again))." in out and "is retired" in out
    listed = world.api("GET", "/v1/connectors/gmail/accounts", token).json()["accounts"]
    assert sorted((a["name"], a["status"]) for a in listed) == [("home", "active"), ("home", "retired")]
