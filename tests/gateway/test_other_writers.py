"""What another process writes to the gateway's database reaches the running server's next request.

``hermes toolgateway tokens revoke``, ``users login-link`` and ``users add`` write the SQLite file from
another process while ``serve`` runs (the CLI module's promise). The server once opened its database
file a second time (to set its mode) after SQLite had opened it: closing that descriptor dropped the
process's POSIX locks, so the first CLI process to close the database believed it was the last one,
checkpointed and deleted the WAL — and from then on the server never saw another process's write: a
revoked token kept working and a fresh login link answered "invalid" until the server restarted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from fakes.vendors import ServerThread, searxng_app
from fakes.vendors.harness import GatewayHarness


@pytest.fixture
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    with ServerThread(searxng_app()) as searx, GatewayHarness(
            tmp_path_factory.mktemp("gw_writers"), firecrawl={"searxng_url": searx.url}) as harness:
        harness.user("alice")
        yield harness


def cli(gw: GatewayHarness, *args: str) -> str:
    """``hermes toolgateway ARGS`` in its own process, on the server's database; its last word."""
    assert gw.config.db_path == gw.config.home / "toolgateway" / "gateway.db"  # where the CLI looks
    env = {**os.environ, "HERMES_HOME": str(gw.config.home)}
    done = subprocess.run([sys.executable, "-m", "hermes", "toolgateway", *args],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[-1]


def search(gw: GatewayHarness, token: str) -> int:
    with gw.client() as client:
        return client.post("/relay/firecrawl/v2/search", json={"query": "hermes"},
                           headers={"Authorization": f"Bearer {token}"}).status_code


def test_another_process_writes_reach_the_server(gw: GatewayHarness) -> None:
    token = gw.token("alice")
    assert search(gw, token) == 200
    cli(gw, "users", "add", "bob", "--plan", "paid")  # a first CLI process opens and closes the database
    link = cli(gw, "users", "login-link", "alice", "--dashboard")
    with gw.client() as client:
        assert client.get(link[link.index("/dashboard"):]).status_code == 303  # signs in: the link is seen
    assert search(gw, token) == 200
    cli(gw, "tokens", "revoke", token)
    assert search(gw, token) == 401  # refused on the very next request
