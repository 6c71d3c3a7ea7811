"""``hermes toolgateway`` as a user runs it: subprocesses with a temporary HERMES_HOME."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from fakes.vendors import ServerThread, pages_app
from hermes.routing.credentials import Credentials


def hermes(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERMES_HOME": str(home)}
    env.pop("HERMES_GATEWAY_ADMIN_TOKEN", None)
    proc = subprocess.run([sys.executable, "-m", "hermes", "toolgateway", *args], env=env, capture_output=True,
                          text=True, timeout=60)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_users_and_tokens(tmp_path: Path) -> None:
    home = tmp_path / "home"
    out = hermes(home, "users", "add", "alice", "--plan", "paid").stdout
    assert "added alice" in out and "plan paid" in out
    hermes(home, "users", "add", "fred", "--plan", "free", "--expires", "2999-01-01")
    dup = hermes(home, "users", "add", "alice", "--plan", "free", check=False)
    assert dup.returncode == 1 and "already exists" in dup.stderr
    bad = hermes(home, "users", "add", "x", "--plan", "gold", check=False)
    assert bad.returncode == 2
    listing = json.loads(hermes(home, "users", "list", "--json").stdout)
    assert [(u["name"], u["plan"], u["disabled"]) for u in listing] == [("alice", "paid", False),
                                                                         ("fred", "free", False)]
    assert (home / "toolgateway" / "gateway.db").exists()
    assert (home / "toolgateway" / "secret").stat().st_mode & 0o077 == 0

    issued = hermes(home, "tokens", "issue", "alice", "--days", "2").stdout
    token = issued.split()[-1]
    creds = Credentials.from_sources({}, {"TOOL_GATEWAY_USER_TOKEN": token})
    assert creds.claims is not None and creds.paid_access and creds.claims.exp is not None
    assert 1.9 * 86400 < creds.claims.exp - time.time() <= 2 * 86400
    free_token = hermes(home, "tokens", "issue", "fred").stdout.split()[-1]
    assert Credentials.from_sources({}, {"TOOL_GATEWAY_USER_TOKEN": free_token}).free_tier

    tokens = json.loads(hermes(home, "tokens", "list", "alice", "--json").stdout)
    assert len(tokens) == 1 and tokens[0]["state"] == "active" and token not in json.dumps(tokens)
    revoked = hermes(home, "tokens", "revoke", token).stdout
    assert tokens[0]["id"] in revoked
    assert json.loads(hermes(home, "tokens", "list", "--json").stdout)[0]["state"] == "revoked"
    fred_id = json.loads(hermes(home, "tokens", "list", "fred", "--json").stdout)[0]["id"]
    hermes(home, "tokens", "revoke", fred_id)
    assert hermes(home, "tokens", "revoke", "tok_nope", check=False).returncode == 1

    assert "disabled" in hermes(home, "users", "disable", "alice").stdout
    assert json.loads(hermes(home, "users", "list", "--json").stdout)[0]["disabled"] is True
    refused = hermes(home, "tokens", "issue", "alice", check=False)
    assert refused.returncode == 1 and "disabled" in refused.stderr
    hermes(home, "users", "enable", "alice")
    hermes(home, "users", "set-plan", "fred", "--plan", "paid")

    link = hermes(home, "users", "login-link", "alice").stdout.split()[-1]
    assert link.startswith("http://127.0.0.1:8787/device?login=ll_")
    dash = hermes(home, "users", "login-link", "alice", "--dashboard").stdout.split()[-1]
    assert dash.startswith("http://127.0.0.1:8787/dashboard?login=ll_") and dash.split("=")[1] != link.split("=")[1]
    admin = hermes(home, "admin-token").stdout.strip()
    assert admin.startswith("gwadm_") and hermes(home, "admin-token").stdout.strip() == admin
    ghost = hermes(home, "users", "add", "ghost", "--plan", "paid", "--expires", "yesterday", check=False)
    assert ghost.returncode == 1 and "not an ISO date" in ghost.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_routes_by_host_and_stops_gracefully(tmp_path: Path) -> None:
    home = tmp_path / "home"
    hermes(home, "users", "add", "alice", "--plan", "paid")
    token = hermes(home, "tokens", "issue", "alice").stdout.split()[-1]
    spare = hermes(home, "tokens", "issue", "alice").stdout.split()[-1]
    port = _free_port()
    config = tmp_path / "gateway.toml"
    config.write_text('access_log = "off"\n[relays.firecrawl]\nscrape = "local"\nsearch = "off"\n'
                      "allow_loopback = true\n")
    env = {**os.environ, "HERMES_HOME": str(home)}
    pages = ServerThread(pages_app()).start()
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "toolgateway", "serve", "--port", str(port),
                             "--config", str(config)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the server did not start: {proc.communicate()[1]}")
            time.sleep(0.05)
        resp = httpx.post(f"{base}/v2/search", json={"query": "x"},
                          headers={"authorization": f"Bearer {token}", "host": f"firecrawl-gateway.localhost:{port}"})
        assert resp.status_code == 503 and resp.json()["code"] == "backend_not_configured"
        # the CLI writes the same database: the running server refuses the token on its next request
        hermes(home, "tokens", "revoke", token)
        resp = httpx.post(f"{base}/relay/firecrawl/v2/search", json={"query": "x"},
                          headers={"authorization": f"Bearer {token}"})
        assert resp.status_code == 401 and resp.json()["code"] == "token_revoked"
        # a request in flight when SIGTERM arrives still gets its answer
        in_flight: list[httpx.Response] = []
        slow = threading.Thread(target=lambda: in_flight.append(httpx.post(
            f"{base}/relay/firecrawl/v2/scrape", json={"url": pages.url + "/slow?s=1"},
            headers={"authorization": f"Bearer {spare}"}, timeout=20)))
        slow.start()
        time.sleep(0.4)
        proc.send_signal(signal.SIGTERM)
        slow.join(20)
        assert in_flight and in_flight[0].status_code == 200, in_flight
        assert "late" in in_flight[0].json()["data"]["markdown"]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=20)
        pages.stop()
    assert proc.returncode == 0, err
    assert f"firecrawl-gateway.localhost:{port}" in err and "/relay/firecrawl" in err
    assert "stopped (SIGTERM)" in err


def _start_server(home: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    env = {**os.environ, "HERMES_HOME": str(home)}
    env.pop("OPENAI_API_KEY", None)
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "toolgateway", "serve", "--port", str(port),
                             "--access-log", "off", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"the server did not start: {proc.communicate()[1]}")
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    return proc.communicate(timeout=20)[1]


def test_serve_on_a_busy_port_says_so_in_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        busy = hermes(home, "serve", "--port", port, "--access-log", "off", check=False)
    assert busy.returncode == 1, busy.stderr
    lines = [line for line in busy.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"port {port} is already in use" in lines[0] and "--port" in lines[0], busy.stderr
    assert "Traceback" not in busy.stderr and "Errno" not in busy.stderr and busy.stdout == ""


def test_banner_names_the_dashboards_and_the_relays_that_are_off(tmp_path: Path) -> None:
    proc, base = _start_server(tmp_path / "home")
    err = _stop(proc)
    assert f"{base}/dashboard (users)" in err and f"{base}/admin/dashboard (admin)" in err
    assert "relay openai-audio: off — no vendor key (OPENAI_API_KEY)" in err
    assert "relay fal-queue: off — no vendor key (FAL_KEY)" in err
    assert "search off — no SEARXNG_URL or FIRECRAWL_API_KEY" in err and "extract with the local fetcher" in err
    assert "relay modal: off" in err


def test_login_link_names_the_port_the_server_runs_on(tmp_path: Path) -> None:
    home = tmp_path / "home"
    hermes(home, "users", "add", "alice", "--plan", "paid")
    idle = hermes(home, "users", "login-link", "alice", "--dashboard").stdout
    assert "http://127.0.0.1:8787/dashboard?login=ll_" in idle and "no running server found" in idle
    proc, base = _start_server(home)
    try:
        out = hermes(home, "users", "login-link", "alice", "--dashboard").stdout
        link = out.split()[-1]
        assert link.startswith(f"{base}/dashboard?login=ll_") and "where the running server listens" in out
        # the link works: it signs in on that server
        signed = httpx.get(link, follow_redirects=True)
        assert signed.status_code == 200 and "Signed in as alice" in signed.text
        device = hermes(home, "users", "login-link", "alice").stdout.split()[-1]
        assert device.startswith(f"{base}/device?login=ll_")
        pinned = hermes(home, "users", "login-link", "alice", "--public-url", "https://gw.example/").stdout
        assert pinned.split()[-1].startswith("https://gw.example/device?login=") and "from --public-url" in pinned
        port = hermes(home, "users", "login-link", "alice", "--port", "9999", "--dashboard").stdout
        assert port.split()[-1].startswith("http://127.0.0.1:9999/dashboard?login=") and "from --port" in port
        bad = hermes(home, "users", "login-link", "alice", "--public-url", "gw.example", check=False)
        assert bad.returncode == 1 and "--public-url must be an http(s) URL" in bad.stderr
    finally:
        _stop(proc)
    assert not (home / "toolgateway" / "serving.json").exists()
    after = hermes(home, "users", "login-link", "alice").stdout
    assert after.split()[-1].startswith("http://127.0.0.1:8787/device?login=")
