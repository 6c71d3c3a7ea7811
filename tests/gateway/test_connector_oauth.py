"""The gateway's OAuth connect flow for a connector app: authorization code + PKCE against an OAuth2
provider on loopback, the Gmail-like REST app behind it; tokens sealed, refreshed before they lapse and
after a restart, never returned; reconnect retires the old account; state single-use and bound to the
browser that started."""

from __future__ import annotations

import json
import logging
import re
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

    def press_start(self, url: str, browser: httpx.Client) -> tuple[httpx.Response, httpx.Response]:
        """The start page and its button; (the page, the redirect to the provider)."""
        page = self.browse(url, browser)
        if page.status_code == 200 and "<form" in page.text:  # the page naming who gets the account
            ticket = re.search(r"name=ticket value='([^']+)'", page.text)
            assert ticket is not None, page.text
            resp = browser.post(url.partition("?")[0], data={"ticket": ticket.group(1)})
            self.texts.append(resp.text + json.dumps(dict(resp.headers)))
        else:
            resp = page
        assert resp.status_code in (302, 303), resp.text
        return page, resp

    def sign_in(self, url: str, browser: httpx.Client) -> list[httpx.Response]:
        """The browser's half: the start page (and its button), the provider, the callback page."""
        page, resp = self.press_start(url, browser)
        at_provider = self.browse(resp.headers["location"], browser)
        assert at_provider.status_code == 302
        done = self.browse(at_provider.headers["location"], browser)
        return [page, resp, at_provider, done]

    def connect(self, token: str, body: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[httpx.Response]]:
        """Start a flow, walk its browser half and confirm with the code the page shows; (the flow's final
        status, the browser's answers)."""
        begun = self.api("POST", "/v1/connectors/gmail/connect", token, body or {}).json()
        with httpx.Client(timeout=30) as browser:
            pages = self.sign_in(begun["url"], browser)
        path = f"/v1/connectors/connect/{begun['connect_id']}"
        assert self.api("GET", path, token).json()["status"] == "awaiting_confirmation"
        confirmed = self.api("POST", path + "/confirm", token, {"code": code_of(pages[-1])})
        assert confirmed.status_code == 200, confirmed.text
        status = self.api("GET", path, token).json()
        assert status == confirmed.json()
        return status, pages

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


def code_of(page: httpx.Response) -> str:
    """The confirmation code a callback page shows."""
    found = re.search(r"monospace[^>]*>([A-Z2-9]{4}-[A-Z2-9]{4})<", page.text)
    assert found is not None, page.text
    return found.group(1)


def _person(world: World) -> tuple[int, str]:
    name = f"u{time.monotonic_ns()}"
    user = world.gw.user(name, "paid")
    return user.id, world.gw.token(name, ttl=24 * 3600)


def test_connect_call_refresh_before_lapse_and_after_restart_then_reconnect(world: World,
                                                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    user_id, token = _person(world)
    status, (page, start, _, done) = world.connect(token, {"name": "work"})
    assert status["status"] == "connected", status
    account = status["account"]
    assert (account["name"], account["display_name"], account["status"]) == ("work", "alice@work.example", "active")
    assert done.status_code == 200 and "Type this code into Hermes" in done.text and "alice@work.example" in done.text
    # the start page names the Hermes user who gets the account and waits for its button
    assert page.status_code == 200 and "location" not in page.headers and "<form method=post" in page.text
    name = world.gw.side.conn.execute("SELECT name FROM users WHERE id = ?", (user_id,)).fetchone()[0]
    assert f"the Hermes account {name}" in page.text
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
    start_url, ticket = begun["url"].partition("?")[0], parse_qs(urlsplit(begun["url"]).query)["ticket"][0]
    with httpx.Client(timeout=30) as browser:
        assert browser.get(begun["url"]).status_code == 200  # the page only: opening it twice is harmless
        # its button posted from another site (a page auto-submitting the form) is refused
        assert browser.post(start_url, data={"ticket": ticket}, headers={"sec-fetch-site": "cross-site"}
                            ).status_code == 403
        start = browser.post(start_url, data={"ticket": ticket})
        assert start.status_code == 303
        assert browser.post(start_url, data={"ticket": ticket}).status_code == 400  # the ticket works once
        assert browser.get(begun["url"]).status_code == 400
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
        start = world.press_start(denied["url"], browser)[1]
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


def test_only_the_client_that_started_can_confirm_with_the_code(world: World) -> None:
    _, token = _person(world)
    _, other = _person(world)
    begun = world.api("POST", "/v1/connectors/gmail/connect", token, {"name": "codes"}).json()
    path = f"/v1/connectors/connect/{begun['connect_id']}"
    early = world.api("POST", path + "/confirm", token, {"code": "AAAA-AAAA"})
    assert early.status_code == 409 and early.json()["code"] == "not_awaiting_confirmation"
    with httpx.Client(timeout=30) as browser:
        code = code_of(world.sign_in(begun["url"], browser)[-1])
    assert world.api("POST", path + "/confirm", other, {"code": code}).status_code == 404  # another user
    assert world.api("POST", path + "/confirm", token, {"code": 12345678}).json()["code"] == "invalid_request"
    wrong = world.api("POST", path + "/confirm", token, {"code": "AAAA-AAAA" if code != "AAAA-AAAA" else "BBBBBBBB"})
    assert wrong.status_code == 400 and wrong.json()["code"] == "wrong_code" and wrong.json()["attempts_left"] == 4
    assert world.api("GET", "/v1/connectors/gmail/accounts", token).json()["accounts"] == []
    # typed in lower case without the dash: still the code
    done = world.api("POST", path + "/confirm", token, {"code": code.replace("-", "").lower()})
    assert done.status_code == 200 and done.json()["status"] == "connected", done.text
    assert done.json()["account"]["name"] == "codes"
    again = world.api("POST", path + "/confirm", token, {"code": code})  # single use
    assert again.status_code == 409 and again.json()["code"] == "not_awaiting_confirmation"

    # the code lapses with the flow, ten minutes after connect
    late = world.api("POST", "/v1/connectors/gmail/connect", token, {}).json()
    with httpx.Client(timeout=30) as browser:
        code = code_of(world.sign_in(late["url"], browser)[-1])
    world.clock.offset += 601
    try:
        lapsed = world.api("POST", f"/v1/connectors/connect/{late['connect_id']}/confirm", token, {"code": code})
    finally:
        world.clock.offset -= 601
    assert lapsed.status_code in (404, 410), lapsed.text
    assert len(world.api("GET", "/v1/connectors/gmail/accounts", token).json()["accounts"]) == 1


def test_a_link_opened_by_someone_else_connects_nothing_for_the_sender(world: World) -> None:
    # login CSRF: the attacker starts a flow with their own token and sends the link to the victim, who
    # signs in at the provider in their own browser; the victim's mailbox must not land under the attacker
    attacker_id, attacker = _person(world)
    begun = world.api("POST", "/v1/connectors/gmail/connect", attacker, {"name": "stolen"}).json()
    world.provider.login = "victim@corp.example"
    with httpx.Client(timeout=30) as victim_browser:
        pages = world.sign_in(begun["url"], victim_browser)
    path = f"/v1/connectors/connect/{begun['connect_id']}"
    status = world.api("GET", path, attacker).json()
    assert status["status"] == "awaiting_confirmation" and "account" not in status, status
    assert "victim@corp.example" not in json.dumps(status)
    assert world.api("GET", "/v1/connectors/gmail/accounts", attacker).json()["accounts"] == []
    # without the code the victim's page shows, five guesses end the flow and drop the victim's tokens
    answers = [world.api("POST", path + "/confirm", attacker, {"code": guess}).json()["code"]
               for guess in ("AAAA-AAAA", "BBBB-BBBB", "CCCC-CCCC", "DDDD-DDDD", "EEEE-EEEE")]
    assert answers == ["wrong_code"] * 4 + ["too_many_wrong_codes"]
    assert world.api("GET", path, attacker).json()["status"] == "failed"
    late = world.api("POST", path + "/confirm", attacker, {"code": code_of(pages[-1])})
    assert late.status_code == 409
    rows = world.gw.side.conn.execute("SELECT COUNT(*) FROM connector_accounts WHERE user_id = ?",
                                      (attacker_id,)).fetchone()[0]
    held = world.gw.side.conn.execute("SELECT COUNT(*) FROM relay_jobs WHERE namespace = 'connector-connect' "
                                      "AND job_id = ?", ("k:" + begun["connect_id"],)).fetchone()[0]
    assert rows == 0 and held == 0


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

    def run(*extra: str, typo: bool = False) -> str:
        proc = subprocess.Popen([sys.executable, "-m", "hermes", "connectors", "connect", "gmail", "--no-browser",
                                 *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=dict(os.environ))
        assert proc.stdout is not None
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        url = lines[1].strip()
        assert url.startswith("http://127.0.0.1:") and "/oauth/start?ticket=" in url, lines
        with httpx.Client(timeout=30) as browser:  # the person's browser signs in and shows the code
            code = code_of(world.sign_in(url, browser)[-1])
        typed = ("ZZZZ-ZZZZ\n" if typo and code != "ZZZZ-ZZZZ" else "") + code + "\n"  # the person types it
        out, _ = proc.communicate(typed, timeout=60)
        assert proc.returncode == 0, "".join(lines) + out
        assert "Type the confirmation code the browser shows" in out
        return out

    world.provider.login = "alice@home.example"
    out = run("--name", "home", typo=True)
    assert "Connected the Gmail account home (alice@home.example)." in out and "4 tries left" in out
    world.provider.login = "alice@home.example (again)"
    out = run("--replaces", "home")
    assert "Connected the Gmail account home (alice@home.example (again))." in out and "is retired" in out
    listed = world.api("GET", "/v1/connectors/gmail/accounts", token).json()["accounts"]
    assert sorted((a["name"], a["status"]) for a in listed) == [("home", "active"), ("home", "retired")]

    # no code typed (stdin closed): nothing is connected and the command says so
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "connectors", "connect", "gmail", "--no-browser",
                             "--name", "nocode"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ))
    assert proc.stdout is not None
    url = [proc.stdout.readline(), proc.stdout.readline()][1].strip()
    with httpx.Client(timeout=30) as browser:
        world.sign_in(url, browser)
    out, _ = proc.communicate("", timeout=60)
    assert proc.returncode != 0 and "no confirmation code was typed" in out, out
    listed = world.api("GET", "/v1/connectors/gmail/accounts", token).json()["accounts"]
    assert "nocode" not in {a["name"] for a in listed}
