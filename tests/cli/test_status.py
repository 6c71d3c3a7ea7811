"""``hermes status`` and ``hermes status --full [--json]``: model, gateway routing, toolsets, storage, scheduler."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.cli.status import scheduler, storage

SECRET = "sk-status-test-0123456789abcdef"


def hermes(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_KEY", "_URL", "_TOKEN")) and k != "HERMES_MODEL"}
    env["HERMES_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "hermes", "status", *args], capture_output=True, text=True,
                          env=env, timeout=60)


def setup_home(home: Path) -> None:
    (home / "config.yaml").write_text("model:\n  provider: openai\n  name: gpt-4o\nweb:\n  backend: nous\n"
                                      "agent:\n  disabled_toolsets: [catalog]\n")
    (home / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    (home / "plugins" / "p").mkdir(parents=True)
    (home / "plugins" / "p" / "a.py").write_bytes(b"x" * 1000)


def test_full_json_shape(hermes_home: Path) -> None:
    setup_home(hermes_home)
    proc = hermes(hermes_home, "--full", "--json")
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout
    data = json.loads(proc.stdout)
    assert set(data) == {"model", "gateway", "toolsets", "storage", "scheduler", "sandbox", "computer_use"}
    assert data["sandbox"]["mode"] == "workspace-write" and isinstance(data["sandbox"]["active"], bool)
    assert data["model"] == {"configured": True, "provider": "openai", "base_url": "https://api.openai.com/v1",
                             "model": "gpt-4o", "api_key_source": "OPENAI_API_KEY (.env)", "error": None,
                             "describe": "gpt-4o at https://api.openai.com/v1 (provider openai)", "notes": []}
    gateway = data["gateway"]
    assert set(gateway) == {"portal", "routes", "warnings", "lines"}
    assert gateway["portal"]["status"] == "not_logged_in"
    assert set(gateway["routes"]) == {"web.search", "web.extract", "image_gen", "tts", "stt", "browser", "video_gen"}
    web = gateway["routes"]["web.search"]
    assert (web["route"], web["vendor"], web["entitlement"]) == ("gateway", "firecrawl", "not_logged_in")
    assert web["origin"] == "https://firecrawl-gateway.nousresearch.com"
    assert web["message"] == "Nous subscription selected — not logged in to Nous Portal"
    assert "hermes portal login" in web["error"]
    assert gateway["lines"][0] == "◆ Nous Tool Gateway"
    assert set(data["toolsets"]) == {"cli", "tui", "oneshot", "cron", "kanban", "messaging", "desktop"}
    cli = data["toolsets"]["cli"]
    assert cli["toolsets"][0] == "hermes-cli" and cli["tools"] > 10 and cli["error"] is None
    assert ["catalog", "disabled in agent.disabled_toolsets"] in data["toolsets"]["desktop"]["dropped"]
    items = {i["name"]: i for i in data["storage"]["items"]}
    assert set(items) == {"config.yaml", ".env", "auth.json", "state.db", "plugins", "cache", "chat_history", "cron",
                          "toolgateway", "video_jobs.db", "media"}
    assert items["plugins"] == {"name": "plugins", "path": str(hermes_home / "plugins"), "exists": True,
                                "bytes": 1000, "files": 1, "complete": True}
    assert not items["auth.json"]["exists"] and data["storage"]["home"] == str(hermes_home)
    assert data["scheduler"] == {"lock_file": str(hermes_home / "cron" / "scheduler.lock"), "present": False,
                                 "pid": None, "running": False}


def test_text_sections(hermes_home: Path) -> None:
    setup_home(hermes_home)
    short = hermes(hermes_home)
    assert short.returncode == 0, short.stderr
    assert short.stdout.startswith("◆ Model\n"
                                   "  Endpoint          gpt-4o at https://api.openai.com/v1 (provider openai)\n"
                                   "  API key           OPENAI_API_KEY (.env)\n◆ Nous Tool Gateway\n")
    assert "◆ Storage" not in short.stdout
    full = hermes(hermes_home, "--full").stdout
    for heading in ("◆ Toolsets by surface", "◆ Storage (HERMES_HOME", "◆ Cron scheduler"):
        assert heading in full
    assert f"  plugins           1000 B  {hermes_home / 'plugins'}" in full
    assert "  Web tools         ✗ Nous subscription selected — not logged in to Nous Portal" in full
    assert SECRET not in full


def test_unconfigured_model_is_reported_not_raised(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NO_LOCAL_FALLBACK", "1")  # else chat (and so status) picks the embedded model
    proc = hermes(hermes_home, "--json")
    assert proc.returncode == 0, proc.stderr
    model = json.loads(proc.stdout)["model"]
    assert not model["configured"] and "no model endpoint is configured" in model["error"]


def test_scheduler_lock_states(tmp_path: Path) -> None:
    (tmp_path / "cron").mkdir()
    lock = tmp_path / "cron" / "scheduler.lock"
    lock.write_text(f"{os.getpid()}\n")
    assert scheduler(tmp_path) == {"lock_file": str(lock), "present": True, "pid": os.getpid(), "running": True}
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock.write_text(dead.stdout)
    state = scheduler(tmp_path)
    assert state["present"] and state["pid"] == int(dead.stdout) and not state["running"]
    lock.write_text("")  # released: the holder truncates the file
    assert scheduler(tmp_path)["pid"] is None and not scheduler(tmp_path)["running"]


def test_storage_counts_database_side_files(tmp_path: Path) -> None:
    (tmp_path / "state.db").write_bytes(b"d" * 100)
    (tmp_path / "state.db-wal").write_bytes(b"w" * 50)
    items = {i["name"]: i for i in storage(tmp_path)["items"]}
    assert items["state.db"]["bytes"] == 150 and storage(tmp_path)["total_bytes"] == 150
