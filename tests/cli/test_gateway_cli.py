"""``hermes gateway run | status | setup`` as a user runs them (subprocesses, a real API server platform)."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import openai

from fakes.model_server import Reply

KEY = "hk-cli-test-key-0123456789"


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL", "OPENAI_MODEL", "TELEGRAM_BOT_TOKEN")}
    env["HERMES_HOME"] = str(home)
    return env


def hermes(home: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True,
                          env=env_for(home), input=input, timeout=60)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_status_says_what_cannot_run_and_why(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(
        "gateway:\n  platforms:\n    telegram: {}\n    api_server: {port: 9}\n    slack: {}\n")
    (hermes_home / ".env").write_text("SLACK_BOT_TOKEN=xoxb-only-the-bot-token\n")
    out = hermes(hermes_home, "gateway", "status")
    assert out.returncode == 0, out.stderr
    assert "gateway: not running" in out.stdout
    assert "telegram" in out.stdout and "cannot run: TELEGRAM_BOT_TOKEN is not set" in out.stdout
    rows = json.loads(hermes(hermes_home, "gateway", "status", "--json").stdout)["platforms"]
    assert {r["name"]: r["can_run"] for r in rows} == {"telegram": False, "api_server": False, "slack": False}
    assert "cannot run: HERMES_API_KEYS is not set" in out.stdout  # no keyless API server, even on loopback
    assert "cannot run: SLACK_APP_TOKEN is not set" in out.stdout  # Socket Mode needs the app-level token too


def test_run_refuses_when_nothing_can_run(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("gateway:\n  platforms:\n    telegram: {}\n")
    out = hermes(hermes_home, "gateway", "run")
    assert out.returncode == 1
    assert "no messaging platform can run (telegram: TELEGRAM_BOT_TOKEN is not set)" in out.stderr


def test_setup_stores_the_token_in_dotenv_only(hermes_home: Path) -> None:
    out = hermes(hermes_home, "gateway", "setup", "telegram", input="4242\n777:secret-token-value\n")
    assert out.returncode == 0, out.stderr
    config = (hermes_home / "config.yaml").read_text()
    assert "token_env: TELEGRAM_BOT_TOKEN" in config and "secret-token-value" not in config
    assert "'4242'" in config or '"4242"' in config or "- 4242" in config
    dotenv = hermes_home / ".env"
    assert "TELEGRAM_BOT_TOKEN=777:secret-token-value" in dotenv.read_text()
    assert stat.S_IMODE(dotenv.stat().st_mode) == 0o600
    rows = json.loads(hermes(hermes_home, "gateway", "status", "--json").stdout)["platforms"]
    assert rows[0]["name"] == "telegram" and rows[0]["can_run"] is True


def test_setup_feishu(hermes_home: Path) -> None:
    out = hermes(hermes_home, "gateway", "setup", "feishu", input="cli_a1b2c3\n\nou_owner\nfeishu-app-secret-xyz\n")
    assert out.returncode == 0, out.stderr
    config = (hermes_home / "config.yaml").read_text()
    assert "app_id: cli_a1b2c3" in config and "secret_env: FEISHU_APP_SECRET" in config
    assert "https://open.feishu.cn" in config and "feishu-app-secret-xyz" not in config
    assert "FEISHU_APP_SECRET=feishu-app-secret-xyz" in (hermes_home / ".env").read_text()
    rows = json.loads(hermes(hermes_home, "gateway", "status", "--json").stdout)["platforms"]
    assert rows[0]["name"] == "feishu" and rows[0]["can_run"] is True


def test_setup_yuanbao(hermes_home: Path) -> None:
    out = hermes(hermes_home, "gateway", "setup", "yuanbao", input="yb-app-1\nu-owner\nyb-app-secret-xyz\n")
    assert out.returncode == 0, out.stderr
    config = (hermes_home / "config.yaml").read_text()
    assert "app_id: yb-app-1" in config and "secret_env: YUANBAO_APP_SECRET" in config
    assert "yb-app-secret-xyz" not in config
    assert "YUANBAO_APP_SECRET=yb-app-secret-xyz" in (hermes_home / ".env").read_text()
    rows = json.loads(hermes(hermes_home, "gateway", "status", "--json").stdout)["platforms"]
    assert rows[0]["name"] == "yuanbao" and rows[0]["can_run"] is True


def test_setup_api_server_makes_a_key_when_none_is_given(hermes_home: Path) -> None:
    out = hermes(hermes_home, "gateway", "setup", "api_server", input="\n\n\n\n")
    assert out.returncode == 0, out.stderr
    made = [line for line in (hermes_home / ".env").read_text().splitlines() if line.startswith("HERMES_API_KEYS=")]
    assert len(made) == 1 and len(made[0]) > len("HERMES_API_KEYS=") + 20
    assert made[0].split("=", 1)[1] not in out.stdout + out.stderr  # the key is read from .env, never shown
    rows = json.loads(hermes(hermes_home, "gateway", "status", "--json").stdout)["platforms"]
    assert rows[0]["name"] == "api_server" and rows[0]["can_run"] is True


def test_run_serves_the_api_until_sigterm(hermes_home: Path, model_server: Any) -> None:
    server = model_server(lambda body: Reply(content="served by the gateway"))
    port = free_port()
    (hermes_home / "config.yaml").write_text(
        f"model:\n  base_url: {server.url}\n  name: m\n  max_retries: 0\n"
        f"gateway:\n  platforms:\n    api_server: {{port: {port}}}\n")
    (hermes_home / ".env").write_text(f"HERMES_API_KEYS={KEY}\n")
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "gateway", "run"], env=env_for(hermes_home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        status_file = hermes_home / "gateway" / "status.json"
        deadline = time.monotonic() + 30
        while True:
            try:
                if json.loads(status_file.read_text())["platforms"]["api_server"]["state"] == "connected":
                    break
            except (OSError, ValueError, KeyError):
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.05)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=0)
        answer = client.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "hi"}])
        assert answer.choices[0].message.content == "served by the gateway"
        shown = hermes(hermes_home, "gateway", "status")
        assert f"running (pid {proc.pid})" in shown.stdout and "api_server" in shown.stdout
        assert "connected" in shown.stdout
        again = hermes(hermes_home, "gateway", "run")
        assert again.returncode == 1 and "already runs" in again.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped; sessions are kept" in err and KEY not in err
    assert "not running" in hermes(hermes_home, "gateway", "status").stdout
