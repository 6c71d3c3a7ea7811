"""OAuth for remote MCP servers against a real loopback server written with the SDK (its own authorization
server: metadata, dynamic registration, PKCE, refresh): ``hermes mcp login`` in a subprocess, the tokens
stored 0600 with their expiry, refreshed before they lapse after a restart, never shown to the model."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tools.mcp.conftest import PY, SERVERS, McpHome, free_port, unwrap


@pytest.fixture
def notes() -> Iterator[str]:
    """The OAuth-protected server; its access tokens live 61 s, so hermes refreshes them after ~1 s."""
    port = free_port()
    proc = subprocess.Popen([PY, str(SERVERS / "oauth_server.py"), "--http", str(port), "--ttl", "61"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 60
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError("the OAuth test server did not start")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def hermes(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERMES_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "hermes", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def log_in(home: Path) -> str:
    """``hermes mcp login notes --no-browser``, with this test as the person opening the printed address."""
    env = {**os.environ, "HERMES_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "mcp", "login", "notes", "--no-browser",
                             "--timeout", "60"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    seen: list[str] = []
    for line in proc.stdout:
        seen.append(line)
        if line.strip().startswith("http://127.0.0.1:"):
            address = line.strip()
            assert "code_challenge_method=S256" in address and "code_challenge=" in address
            assert "resource=" in address  # RFC 8707: the token is asked for this server
            answer = httpx.get(address, follow_redirects=True, timeout=30)  # approve: back to the callback
            assert answer.status_code == 200 and "Logged in" in answer.text
            break
    rest, _ = proc.communicate(timeout=90)
    assert proc.returncode == 0, "".join(seen) + rest
    return "".join(seen) + rest


def call(home: McpHome, tool: str) -> str:
    reg = home.load()
    home.settle("notes")
    result = home.session(reg).dispatch(f"mcp_notes_{tool}", {})
    assert not result.is_error, result.text
    return unwrap(json.loads(result.text)["result"])


def test_login_stored_tokens_refresh_after_restart_and_masking(mcp_home: McpHome, notes: str) -> None:
    mcp_home.configure({"notes": {"url": notes, "auth": "oauth"}})
    before = hermes(mcp_home.home, "mcp", "test", "notes", "--timeout", "30")
    assert before.returncode == 1 and "needs a login: run 'hermes mcp login notes'" in before.stdout

    printed = log_in(mcp_home.home)
    assert "Logged in to notes" in printed and "at-" not in printed and "rt-" not in printed
    folder = mcp_home.home / "mcp-tokens"
    stored = folder / "notes.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600 and stat.S_IMODE(folder.stat().st_mode) == 0o700
    saved = json.loads(stored.read_text())
    assert saved["tokens"]["access_token"].startswith("at-") and saved["expires_at"] > time.time()
    assert saved["client"]["client_id"]  # registered dynamically

    # the server echoes the bearer token back: the model never sees it
    echoed = call(mcp_home, "whoami")
    assert "you sent Bearer ***" in echoed and saved["tokens"]["access_token"] not in echoed
    first = json.loads(call(mcp_home, "stats"))
    assert (first["registrations"], first["codes"]) == (1, 1)  # refreshes: the token is due after ~1 s

    # a restart more than ttl - 60 s later: the stored token is due, so it is refreshed — no new login
    mcp_home.restart_process()
    time.sleep(1.5)
    later = json.loads(call(mcp_home, "stats"))
    assert later["codes"] == 1 and later["registrations"] == 1 and later["refreshes"] > first["refreshes"]
    assert json.loads(stored.read_text())["tokens"]["access_token"] != saved["tokens"]["access_token"]
    mcp_home.restart_process()

    forgot = hermes(mcp_home.home, "mcp", "login", "notes", "--forget")
    assert forgot.returncode == 0 and not stored.exists()
    again = hermes(mcp_home.home, "mcp", "test", "notes", "--timeout", "30")
    assert again.returncode == 1 and "hermes mcp login notes" in again.stdout


def test_oauth_keys_are_checked(mcp_home: McpHome) -> None:
    from hermes.connectors.mcp.config import read_servers

    bad = read_servers({"a": {"url": "http://127.0.0.1:9/mcp", "auth": "basic"},
                        "b": {"command": "x", "auth": "oauth"}}, lambda _v: None)
    assert "must be oauth" in bad.errors["a"] and "for HTTP servers" in bad.errors["b"]
    mcp_home.configure({"plain": {"url": "http://127.0.0.1:9/mcp"}})
    refused = hermes(mcp_home.home, "mcp", "login", "plain")
    assert refused.returncode == 1 and "auth: oauth" in refused.stderr
