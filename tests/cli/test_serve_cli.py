"""``hermes serve`` as a user runs it: a subprocess listening beyond loopback needs the bearer token."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect


def test_serve_beyond_loopback_prints_the_token_path_never_the_token_and_refuses_without_it(
        hermes_home: Path, model_server: object) -> None:
    (hermes_home / "config.yaml").write_text("model:\n  base_url: http://127.0.0.1:9/v1\n  name: m\n"
                                             "serve:\n  host: 0.0.0.0\n  port: 0\n")
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "serve"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first, second = proc.stdout.readline(), proc.stdout.readline()
        port = re.search(r"ws://0\.0\.0\.0:(\d+)/rpc", first)
        assert port, first + (proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        token_file = hermes_home / "serve_token"
        assert str(token_file) in second
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        assert token not in first + second
        url = f"ws://127.0.0.1:{port.group(1)}/rpc"
        with pytest.raises(InvalidStatus), connect(url, open_timeout=10):
            pass
        with connect(url, open_timeout=10, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
            ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "toolsets.list"}))
            assert json.loads(ws.recv(timeout=10))["result"]["toolsets"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert token not in err


@pytest.mark.parametrize("required", [True, False])
def test_serve_on_loopback_wants_the_token_unless_told_otherwise(hermes_home: Path, required: bool) -> None:
    """A sandboxed command allowed the network, and every local user, share loopback: the token is asked for
    there too, unless ``serve.require_token: false`` says the machine is the person's alone."""
    extra = "" if required else "  require_token: false\n"
    (hermes_home / "config.yaml").write_text("model:\n  base_url: http://127.0.0.1:9/v1\n  name: m\n"
                                             f"serve:\n  port: 0\n{extra}")
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "serve"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first, second = proc.stdout.readline(), proc.stdout.readline()
        port = re.search(r"ws://127\.0\.0\.1:(\d+)/rpc", first)
        assert port, first
        url = f"ws://127.0.0.1:{port.group(1)}/rpc"
        if required:
            assert "serve_token" in second, second
            with pytest.raises(InvalidStatus), connect(url, open_timeout=10):
                pass
            token = (hermes_home / "serve_token").read_text().strip()
            headers = {"Authorization": f"Bearer {token}"}
        else:
            assert "no token needed" in second, second
            headers = {}
        with connect(url, open_timeout=10, additional_headers=headers) as ws:
            ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "toolsets.list"}))
            assert json.loads(ws.recv(timeout=10))["result"]["toolsets"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
