"""`hermes mcp add|list|test|remove` against a real server (mcp-server-time), keeping config.yaml's comments."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")
pytest.importorskip("mcp_server_time")

CONFIG = """\
# hand-written settings
model:
  name: m   # the model
"""


def hermes(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "HERMES_HOME": str(home), **(env or {})}
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=full_env,
                          timeout=120)


def test_add_test_list_remove_round_trip(hermes_home: Path) -> None:
    config = hermes_home / "config.yaml"
    config.write_text(CONFIG)
    command = f"{sys.executable} -m mcp_server_time --local-timezone UTC"
    added = hermes(hermes_home, "mcp", "add", "time", "--timeout", "30", "--command", command)
    assert added.returncode == 0, added.stderr
    assert "✓ connected" in added.stdout and "mcp_time_get_current_time" in added.stdout
    text = config.read_text()
    assert text.startswith(CONFIG) and "mcp_servers:" in text and "--local-timezone" in text

    listed = hermes(hermes_home, "mcp", "list")
    assert "time" in listed.stdout and "last run: ready" in listed.stdout and "2 tools" in listed.stdout
    tools = hermes(hermes_home, "tools", "list")
    assert "MCP servers" in tools.stdout and "last run: ready" in tools.stdout
    status = hermes(hermes_home, "status", "--full")
    assert "◆ MCP servers" in status.stdout

    again = hermes(hermes_home, "mcp", "add", "time", "--command", command)
    assert again.returncode != 0 and "--replace" in again.stderr

    removed = hermes(hermes_home, "mcp", "remove", "time")
    assert removed.returncode == 0
    assert "mcp_servers" not in config.read_text() and config.read_text().startswith("# hand-written settings")


def test_a_literal_secret_is_refused_and_a_reference_kept(hermes_home: Path) -> None:
    refused = hermes(hermes_home, "mcp", "add", "web", "--url", "http://127.0.0.1:9/mcp",
                     "--header", "Authorization=Bearer abcdefghijklmnopqrstuvwxyz")
    assert refused.returncode != 0 and "looks like a secret" in refused.stderr
    assert "abcdefghijklmnopqrstuvwxyz" not in refused.stderr
    assert not (hermes_home / "config.yaml").exists() or "web" not in (hermes_home / "config.yaml").read_text()

    kept = hermes(hermes_home, "mcp", "add", "web", "--url", "http://127.0.0.1:9/mcp",
                  "--header", "Authorization=Bearer ${WEB_TOKEN}", "--no-test")
    assert kept.returncode == 0, kept.stderr
    assert "WEB_TOKEN not set yet" in kept.stdout
    assert "${WEB_TOKEN}" in (hermes_home / "config.yaml").read_text()
    # nothing listens on port 9: the test fails and says so, with the server's name
    failed = hermes(hermes_home, "mcp", "test", "web", "--timeout", "5", env={"WEB_TOKEN": "t0ken-value-123"})
    assert failed.returncode == 1 and "✗" in failed.stdout and "t0ken-value-123" not in failed.stdout


def test_secrets_in_args_and_urls_are_never_printed(hermes_home: Path) -> None:
    import yaml

    (hermes_home / ".env").write_text("LEAKY_TOKEN=dotenv-token-9c1e44aa\n")
    (hermes_home / "config.yaml").write_text(yaml.safe_dump({"mcp_servers": {
        "leaky": {"command": sys.executable, "args": ["-c", "pass", "--token", "${LEAKY_TOKEN}",
                                                      "--api-key", "literal-arg-key-0123", "--password=hunter2-xyz"]},
        "remote": {"url": "http://127.0.0.1:9/mcp?key=${LEAKY_TOKEN}"},
    }}))
    shown = [hermes(hermes_home, "mcp", "list"), hermes(hermes_home, "status", "--full"),
             hermes(hermes_home, "mcp", "test", "leaky", "--timeout", "5")]
    for done in shown:
        out = done.stdout + done.stderr
        assert "leaky" in out, out
        for secret in ("dotenv-token-9c1e44aa", "literal-arg-key-0123", "hunter2-xyz"):
            assert secret not in out, (done.args, out)
