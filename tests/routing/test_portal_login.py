"""The portal login against the real gateway server on loopback: device code, auth.json, refresh, expiry.

The test approves each device code itself, through the server's accounts API (``gw.side``), as the person
would on the approval page. Login, refresh rotation, the refresh lock, subscription expiry (GW-10), the
portal origin rule for tokens, logout, and the ``hermes portal login`` command in a subprocess.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fakes.vendors.harness import GatewayHarness
from hermes.errors import ConfigError, GatewayError
from hermes.routing import check_entitlement, load_credentials, resolve_route
from hermes.routing.portal_auth import AuthStore, LoginRequired, fresh_credentials, refresh_stored, resolve_portal_url
from hermes.routing.portal_http import PortalError, check_portal_url
from hermes.routing.portal_login import DeviceCode, login, logout

NOUS_CONFIG = {"web": {"backend": "nous"}, "tts": {"provider": "nous"}}


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    with GatewayHarness(tmp_path_factory.mktemp("gw_login"), org_id="acme") as harness:
        for name in ("alice", "bob", "carol", "dave", "erin"):
            harness.user(name, "paid")
        harness.user("fred", "free")
        yield harness


def approve(gw: GatewayHarness, user: str, seen: list[DeviceCode] | None = None) -> Callable[[DeviceCode], None]:
    def show(code: DeviceCode) -> None:
        if seen is not None:
            seen.append(code)
        assert gw.side.oauth.decide(code.user_code, gw.side.accounts.get_user(user), True)
    return show


def log_in(gw: GatewayHarness, auth: Path, user: str, env: dict[str, str] | None = None) -> None:
    login(auth, env or {}, gw.url, show=approve(gw, user), sleep=lambda _: None)


def refresh_status(gw: GatewayHarness, token: str) -> str:
    with gw.client() as c:
        resp = c.post("/api/oauth/token", data={"grant_type": "refresh_token", "client_id": "hermes-cli"},
                      headers={"x-nous-refresh-token": token})
    return "ok" if resp.status_code == 200 else str(resp.json()["error"])


def test_login_stores_tokens_0600_and_logout_removes_them(gw: GatewayHarness, tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    auth = tmp_path / "auth.json"
    # an existing file with another provider's entry is kept
    auth.write_text(json.dumps({"version": 1, "providers": {"other": {"access_token": "x"}}}))
    seen: list[DeviceCode] = []
    result = login(auth, {}, gw.url, show=approve(gw, "alice", seen), sleep=lambda _: None)
    assert seen[0].verification_uri_complete.endswith(seen[0].user_code)
    assert stat.S_IMODE(auth.stat().st_mode) == 0o600
    doc = json.loads(auth.read_text())
    entry = doc["providers"]["nous"]
    assert doc["version"] == 1 and doc["providers"]["other"] == {"access_token": "x"}
    assert entry["portal_base_url"] == gw.url and entry["client_id"] == "hermes-cli"
    assert set(entry["scope"].split()) == {"inference:invoke", "tool:invoke"}
    assert entry["access_token"].count(".") == 2 and entry["refresh_token"].startswith("rt_")
    assert entry["expires_in"] == gw.config.access_token_ttl and entry["expires_at"].endswith("Z")
    assert result.credentials.paid_access and result.account is not None
    assert result.account["user"]["name"] == "alice"
    assert not list(tmp_path.glob(".auth.json.*.tmp"))  # the atomic write left nothing behind
    assert entry["access_token"] not in caplog.text and entry["refresh_token"] not in caplog.text
    # the tokens work at the gateway
    with gw.client() as c:
        assert c.get("/api/oauth/account", headers={"authorization": f"Bearer {entry['access_token']}"}
                     ).status_code == 200
    assert logout(auth) is True
    doc = json.loads(auth.read_text())
    assert doc == {"version": 1, "providers": {"other": {"access_token": "x"}}}
    assert not load_credentials(auth, {}).logged_in
    assert logout(auth) is False
    # with nothing else in it, logging out removes the file
    log_in(gw, auth, "alice")
    auth.write_text(json.dumps({"version": 1, "providers": {"nous": json.loads(auth.read_text())["providers"]
                                                            ["nous"]}}))
    assert logout(auth) and not auth.exists()


def test_refresh_before_expiry_rotates_and_stores(gw: GatewayHarness, tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    auth = tmp_path / "auth.json"
    log_in(gw, auth, "bob")
    first = dict(AuthStore(auth).nous() or {})
    # far from expiry: nothing is sent, nothing changes
    assert fresh_credentials(auth, {}).access_token == first["access_token"]
    assert AuthStore(auth).nous() == first
    # within the 120 s margin: refreshed, the rotated refresh token stored, the file still 0600
    soon = time.time() + gw.config.access_token_ttl - 60
    creds = fresh_credentials(auth, {}, now=soon)
    second = AuthStore(auth).nous() or {}
    assert creds.access_token == second["access_token"] != first["access_token"]
    assert second["refresh_token"] != first["refresh_token"] and creds.paid_access and not creds.warnings
    assert stat.S_IMODE(auth.stat().st_mode) == 0o600
    # the old refresh token is spent: presenting it again is reuse, which revokes the whole login
    assert refresh_status(gw, first["refresh_token"]) == "refresh_token_reused"
    # now the stored refresh token is refused too: the stale token stays, with a warning, and a tool on
    # the gateway gets the GW-10 error (log in again, or switch to a key) — no stack trace, no token
    caplog.set_level(logging.WARNING)
    later = time.time() + gw.config.access_token_ttl + 10
    stale = fresh_credentials(auth, {}, now=later)
    assert stale.access_token == second["access_token"]
    assert any("hermes portal login" in w for w in stale.warnings)
    route = resolve_route("tts", NOUS_CONFIG, {}, stale)
    with pytest.raises(GatewayError) as err:
        check_entitlement(route, stale, now=later)
    text = str(err.value)
    assert "login has expired" in text and "hermes portal login" in text and "hermes tools" in text
    for secret in (first["access_token"], first["refresh_token"], second["access_token"], second["refresh_token"]):
        assert secret not in text and secret not in caplog.text and all(secret not in w for w in stale.warnings)
    with pytest.raises(LoginRequired):
        refresh_stored(auth, {}, force=True)


def test_concurrent_refreshes_spend_the_refresh_token_once(gw: GatewayHarness, tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    log_in(gw, auth, "carol")
    doc = json.loads(auth.read_text())  # the stored expiry says "in a minute": due for a refresh
    doc["providers"]["nous"]["expires_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 60))
    auth.write_text(json.dumps(doc))
    results: list[bool] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(refresh_stored(auth, {}))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and sorted(results) == [False, False, False, True]
    # the login survived (no reuse detected): the stored refresh token still works
    assert refresh_status(gw, str((AuthStore(auth).nous() or {})["refresh_token"])) == "ok"


def test_expired_subscription_gives_the_portal_error(gw: GatewayHarness, tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    log_in(gw, auth, "dave")
    route = resolve_route("web.extract", NOUS_CONFIG, {}, load_credentials(auth, {}))
    assert check_entitlement(route, load_credentials(auth, {})) is not None
    gw.side.accounts.set_plan("dave", "paid", time.time() - 1)
    creds = fresh_credentials(auth, {}, now=time.time() + gw.config.access_token_ttl - 30)
    assert not creds.paid_access and not creds.warnings
    with pytest.raises(GatewayError) as err:
        check_entitlement(resolve_route("web.extract", NOUS_CONFIG, {}, creds), creds)
    assert "no active subscription" in str(err.value)
    assert f"{gw.url}/manage-subscription" in str(err.value) and "hermes tools" in str(err.value)


def test_free_tier_login_covers_only_its_categories(gw: GatewayHarness, tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    log_in(gw, auth, "fred")
    creds = load_credentials(auth, {})
    assert creds.free_tier
    assert check_entitlement(resolve_route("web.extract", NOUS_CONFIG, {}, creds), creds) is not None
    with pytest.raises(GatewayError, match="free tool tier does not cover it"):
        check_entitlement(resolve_route("tts", NOUS_CONFIG, {}, creds), creds)


def test_tokens_go_only_to_the_portal_that_issued_them(gw: GatewayHarness, tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    log_in(gw, auth, "erin")
    entry = AuthStore(auth).nous() or {}
    soon = time.time() + gw.config.access_token_ttl - 60
    # another portal configured now: the stored tokens are not sent there (nor anywhere)
    other = {"HERMES_PORTAL_BASE_URL": "http://127.0.0.1:9"}
    creds = fresh_credentials(auth, other, now=soon)
    assert creds.access_token == entry["access_token"]
    assert any("names another one" in w for w in creds.warnings)
    # a stored portal that is neither configured nor a known portal host is not trusted either
    doc = json.loads(auth.read_text())
    doc["providers"]["nous"]["portal_base_url"] = "https://portal.example.com"
    auth.write_text(json.dumps(doc))
    with pytest.raises(PortalError, match="not a known portal host"):
        refresh_stored(auth, {}, now=soon)
    # the refresh token was never spent
    doc["providers"]["nous"]["portal_base_url"] = gw.url
    auth.write_text(json.dumps(doc))
    assert refresh_stored(auth, {"NOUS_PORTAL_BASE_URL": gw.url + "/"}, now=soon)


def test_denied_and_unreachable_logins_save_nothing(gw: GatewayHarness, tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"

    def deny(code: DeviceCode) -> None:
        gw.side.oauth.decide(code.user_code, None, False)

    with pytest.raises(PortalError, match="denied"):
        login(auth, {}, gw.url, show=deny, sleep=lambda _: None)
    assert not auth.exists()
    with pytest.raises(PortalError, match="could not reach the Nous Portal"):
        login(auth, {}, "http://127.0.0.1:9", show=deny, sleep=lambda _: None)
    assert not auth.exists()


@pytest.mark.parametrize(("flag", "env", "expected"), [
    ("http://127.0.0.1:5000/", {"HERMES_PORTAL_BASE_URL": "https://a.example"}, "http://127.0.0.1:5000"),
    (None, {"HERMES_PORTAL_BASE_URL": "https://a.example", "NOUS_PORTAL_BASE_URL": "https://b.example"},
     "https://a.example"),
    (None, {"NOUS_PORTAL_BASE_URL": "https://b.example/portal/"}, "https://b.example/portal"),
    (None, {}, "https://portal.nousresearch.com"),
])
def test_portal_url_precedence(flag: str | None, env: dict[str, str], expected: str) -> None:
    assert resolve_portal_url(flag, env) == expected


@pytest.mark.parametrize("url", ["http://portal.example.com", "https://user:pw@portal.example.com",
                                 "ftp://portal.example.com", "https://portal.example.com\\@evil"])
def test_portal_url_must_be_https_or_loopback(url: str) -> None:
    with pytest.raises(ConfigError) as err:
        check_portal_url(url)
    assert "pw" not in str(err.value) and "evil" not in str(err.value)


def test_portal_login_command(gw: GatewayHarness, hermes_home: Path) -> None:
    """``hermes portal login`` in a subprocess: the test reads the code it prints and approves it."""
    (hermes_home / "config.yaml").write_text("model:\n  provider: openai  # kept\n  name: gpt-4o\n")
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    env.pop("DISPLAY", None)
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "portal", "login", "--portal-url", gw.url,
                             "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.strip().startswith("code:"):
                code = line.split(":", 1)[1].strip()
                assert gw.side.oauth.decide(code, gw.side.accounts.get_user("alice"), True)
                break
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    text = "".join(lines) + out
    assert proc.returncode == 0, err
    assert "✓ Logged in. Plan: paid" in text and "(mode 0600)" in text
    entry = json.loads((hermes_home / "auth.json").read_text())["providers"]["nous"]
    assert entry["access_token"] not in text + err and entry["refresh_token"] not in text + err
    # the model provider was not touched
    assert (hermes_home / "config.yaml").read_text() == "model:\n  provider: openai  # kept\n  name: gpt-4o\n"
    info = subprocess.run([sys.executable, "-m", "hermes", "portal", "info", "--json"], capture_output=True,
                          text=True, env=env, timeout=60)
    data = json.loads(info.stdout)
    assert data["portal"]["status"] == "active" and data["portal"]["portal_url"] == gw.url
    done = subprocess.run([sys.executable, "-m", "hermes", "portal", "logout"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert "Logged out" in done.stdout and not (hermes_home / "auth.json").exists()


def test_choosing_the_subscription_in_the_picker_logs_in_on_the_spot(gw: GatewayHarness, hermes_home: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """GW-8: logged out, pick "Nous Subscription" for web → the login runs, then only web.backend is written."""
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from hermes.cli.portal import run_login
    from hermes.cli.tools import report_change
    from hermes.config.paths import HermesPaths
    from hermes.config.settings import Settings
    from hermes.surfaces.picker import ToolsPicker

    for name in ("TOOL_GATEWAY_USER_TOKEN", "HERMES_PORTAL_BASE_URL", "NOUS_PORTAL_BASE_URL", "DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    config = "# mine\nmodel:\n  provider: openai  # inference\n  name: gpt-4o\ntts:\n  provider: espeak  # local\n"
    (hermes_home / "config.yaml").write_text(config)
    (hermes_home / ".env").write_text(f"HERMES_PORTAL_BASE_URL={gw.url}\n")
    out: list[str] = []

    def login(settings: Settings) -> None:
        run_login(settings, out.append, show=approve(gw, "alice"))

    with create_pipe_input() as pipe:
        pipe.send_text("\r\r" + "7\r")  # web → Nous Subscription → (login) → Done
        ToolsPicker(Settings.load(HermesPaths(hermes_home)), out.append, login=login,
                    after=lambda change: report_change(change, out.append), input=pipe, output=DummyOutput()).run()
    assert "Nous Subscription needs a Nous Portal login; starting it now (nothing else is changed)." in out
    assert any(line.startswith("✓ Logged in. Plan: paid") for line in out)
    # this gateway has no search backend: the status says so instead of "active"
    assert f"  Web extract       ✓ active via the Tool Gateway at {gw.url}" in out, out
    assert f"  Web search        ✗ Tool Gateway at {gw.url} selected — this gateway does not offer it" in out, out
    assert (hermes_home / "config.yaml").read_text() == config + "web:\n  backend: nous\n"
    assert stat.S_IMODE((hermes_home / "auth.json").stat().st_mode) == 0o600


def _hermes(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=env,
                          timeout=60)


def test_login_to_a_self_hosted_gateway_routes_to_it(gw: GatewayHarness, hermes_home: Path) -> None:
    """``hermes portal login`` against our own server: the portal advertises its relay origins and which relays
    are on (this one has only page extraction: no search backend, no audio or image vendor); they are stored
    beside the token, every gateway route goes to this server, and only the offered one reads "active"."""
    (hermes_home / "config.yaml").write_text(
        "web:\n  backend: nous\ntts:\n  provider: nous\nstt:\n  provider: nous\nimage_gen:\n  provider: nous\n")
    env = {k: v for k, v in os.environ.items() if "GATEWAY" not in k and "PORTAL" not in k and k != "DISPLAY"}
    env["HERMES_HOME"] = str(hermes_home)
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "portal", "login", "--portal-url", gw.url,
                             "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if line.strip().startswith("code:"):
                assert gw.side.oauth.decide(line.split(":", 1)[1].strip(), gw.side.accounts.get_user("bob"), True)
                break
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "Plan: paid — managed tools available" in out and "(paid)" not in out
    stored = json.loads((hermes_home / "auth.json").read_text())["providers"]["nous"]["tool_gateway"]
    assert stored["origins"]["firecrawl"] == gw.url and stored["origins"]["krea"] == f"{gw.url}/relay/krea"
    assert "firecrawl.scrape" in stored["offers"] and "firecrawl.search" not in stored["offers"]

    data = json.loads(_hermes(env, "portal", "info", "--json").stdout)
    routes = data["routes"]
    assert "nousresearch.com" not in json.dumps(routes)
    assert routes["web.extract"]["origin"] == gw.url and routes["web.extract"]["entitlement"] == "paid"
    assert routes["web.extract"]["message"] == f"active via the Tool Gateway at {gw.url}"
    assert routes["tts"]["origin"] == f"{gw.url}/relay/openai-audio"
    assert routes["image_gen"]["origin"] == f"{gw.url}/relay/krea"
    for name in ("web.search", "tts", "image_gen"):
        assert routes[name]["route"] == "gateway" and routes[name]["entitlement"] == "not_offered", name
        assert "does not offer it" in routes[name]["error"]
    assert routes["stt"]["message"].startswith("not built yet")  # no tool uses it, whatever the gateway offers
    text = _hermes(env, "portal", "info").stdout
    assert f"  Web extract       ✓ active via the Tool Gateway at {gw.url}\n" in text
    assert f"  Web search        ✗ Tool Gateway at {gw.url} selected — this gateway does not offer it\n" in text
    assert f"  Text to speech    ✗ Tool Gateway at {gw.url}/relay/openai-audio selected — this gateway does not " \
           "offer it\n" in text

    # a GW-14 pin wins over what the login advertised, and another origin is not judged by its offers
    pinned = {**env, "OPENAI_AUDIO_GATEWAY_URL": "http://127.0.0.1:9/audio"}
    routes = json.loads(_hermes(pinned, "portal", "info", "--json").stdout)["routes"]
    assert routes["tts"]["origin"] == "http://127.0.0.1:9/audio" and routes["tts"]["entitlement"] == "paid"
    assert routes["web.extract"]["origin"] == gw.url
    # logging out and in to a portal that advertises nothing drops the stored block with the tokens
    assert "Logged out" in _hermes(env, "portal", "logout").stdout
