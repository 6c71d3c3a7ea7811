"""`hermes setup`: the wizard driven with scripted answers, the REG-9 table, and the command line."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from ruamel.yaml import YAML

from hermes.cli.setup import WizardResult, probe_endpoint, run_wizard
from hermes.config import optional_env
from hermes.config.dotenv import read_dotenv
from hermes.config.optional_env import OptionalEnvVar, declare_env, declare_env_table, missing_for
from hermes.config.settings import Settings
from hermes.tools.registry import ToolRegistry

DATA = Path(__file__).parents[1] / "data"


class Script:
    """Answers in order; records every prompt and printed line."""

    def __init__(self, *answers: str, secrets: tuple[str, ...] = ()) -> None:
        self.answers = list(answers)
        self.secrets = list(secrets)
        self.prompts: list[str] = []
        self.secret_prompts: list[str] = []
        self.lines: list[str] = []

    def ask(self, prompt: str) -> str:
        self.prompts.append(prompt)
        assert self.answers, f"unexpected question: {prompt!r}"
        return self.answers.pop(0)

    def ask_secret(self, prompt: str) -> str:
        self.secret_prompts.append(prompt)
        assert self.secrets, f"unexpected secret question: {prompt!r}"
        return self.secrets.pop(0)

    def out(self, line: str) -> None:
        self.lines.append(line)

    @property
    def text(self) -> str:
        return "\n".join(self.lines + self.prompts + self.secret_prompts)

    def run(self, **kw: Any) -> WizardResult:
        result = run_wizard(Settings.load(), self.ask, self.ask_secret, self.out, **kw)
        assert not self.answers and not self.secrets, "not every scripted answer was used"
        return result


@pytest.fixture
def home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in [*optional_env.OPTIONAL_ENV_VARS, "WEATHER_API_KEY", "MY_KEY"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(optional_env, "OPTIONAL_ENV_VARS", dict(optional_env.OPTIONAL_ENV_VARS))
    return hermes_home


def config(home: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load((home / "config.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_model_section_preset(home: Path) -> None:
    (home / "config.yaml").write_text("# my settings\nagent:\n  max_iterations: 9  # mine\n")
    script = Script("1", "", "anthropic/claude-sonnet-4", "n", secrets=("sk-or-secret-value-0001",))
    result = script.run(sections=["model"])
    assert config(home)["model"] == {
        "provider": "openrouter", "base_url": "https://openrouter.ai/api/v1", "name": "anthropic/claude-sonnet-4",
    }
    assert (home / "config.yaml").read_text().startswith("# my settings\nagent:\n  max_iterations: 9  # mine\n")
    assert read_dotenv(home / ".env") == {"OPENROUTER_API_KEY": "sk-or-secret-value-0001"}
    assert stat.S_IMODE((home / ".env").stat().st_mode) == 0o600
    assert "OPENROUTER_API_KEY" in script.secret_prompts[0]
    assert "sk-or-secret-value-0001" not in script.text
    assert result.env_saved == ["OPENROUTER_API_KEY"] and result.endpoint_ok is None
    assert any("openrouter" in line and "1)" in line for line in script.lines)


def test_custom_endpoint_is_tested_against_a_live_server(home: Path, model_server: Any) -> None:
    server = model_server([], model="local-model")
    script = Script("custom", "", "ftp://nope", server.url + "/", "", "local-model", "MY_KEY", "y",
                    secrets=("local-secret-1234",))
    result = script.run(sections=["model"])
    assert config(home)["model"] == {
        "provider": "custom", "base_url": server.url, "name": "local-model", "api_key_env": "MY_KEY",
    }
    assert read_dotenv(home / ".env") == {"MY_KEY": "local-secret-1234"}
    assert "  a base URL is required for a custom endpoint (e.g. http://localhost:8000/v1)" in script.lines
    assert "  the URL must start with http:// or https://" in script.lines
    assert "  a model name is required" in script.lines
    assert result.endpoint_ok is True
    assert "  ✓ the endpoint answered and lists local-model (1 models)" in script.lines
    # the saved settings resolve to what was entered
    model = Settings.load().model()
    assert (model.base_url, model.model, model.api_key) == (server.url, "local-model", "local-secret-1234")


def test_switching_to_a_preset_drops_the_custom_key_variable(home: Path) -> None:
    (home / "config.yaml").write_text(
        "model:\n  provider: custom\n  base_url: http://x/v1\n  name: a\n  api_key_env: MY_KEY\n"
    )
    Script("ollama", "", "llama3", "n").run(sections=["model"])
    assert config(home)["model"] == {"provider": "ollama", "base_url": "http://127.0.0.1:11434/v1", "name": "llama3"}


def test_current_values_are_defaults(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (home / "config.yaml").write_text("model:\n  provider: openai\n  base_url: https://proxy.example/v1\n"
                                      "  name: gpt-4o\n")
    monkeypatch.setenv("OPENAI_API_KEY", "already-there-123")
    script = Script("", "", "", "n", secrets=("",))
    result = script.run(sections=["model"])
    assert config(home)["model"]["base_url"] == "https://proxy.example/v1"
    assert config(home)["model"]["name"] == "gpt-4o"
    assert "Enter keeps the current one" in script.secret_prompts[0]
    assert not (home / ".env").exists() and result.env_saved == []


class _Refusing(BaseHTTPRequestHandler):
    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Authorization"))
        self.send_response(401)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def refusing_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_probe_reports_failures_without_raising(refusing_server: str) -> None:
    ok, message = probe_endpoint(refusing_server, "bad-key-12345678", "m")
    assert not ok and message == f"✗ {refusing_server}/models answered HTTP 401 — check the API key"
    assert _Refusing.seen[-1] == "Bearer bad-key-12345678"
    assert "bad-key" not in message
    with socket_closed_port() as port:
        ok, message = probe_endpoint(f"http://127.0.0.1:{port}/v1", None, "m", timeout=2)
    assert not ok and message.startswith(f"✗ could not reach http://127.0.0.1:{port}/v1/models")


class socket_closed_port:
    """A port nothing listens on."""

    def __enter__(self) -> int:
        import socket

        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port: int = s.getsockname()[1]
        s.close()
        return self.port

    def __exit__(self, *exc: object) -> None:
        pass


def _weather_registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(name="weather", toolset="weather", schema={"description": "w"}, handler=lambda a, **k: "{}",
                 requires_env=["WEATHER_API_KEY"])
    reg.register(name="web_search", toolset="web", schema={"description": "s"}, handler=lambda a, **k: "{}",
                 requires_env=["UNDECLARED_KEY"])
    return reg


def test_keys_section_asks_only_for_registered_tools(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "set-in-shell")
    table = {
        "WEATHER_API_KEY": OptionalEnvVar("WEATHER_API_KEY", "Weather API key for weather lookup",
                                          "Weather API key", "https://weatherapi.com/", ("weather",), True, "tools"),
        "TAVILY_API_KEY": optional_env.OPTIONAL_ENV_VARS["TAVILY_API_KEY"],
        "SEARXNG_URL": optional_env.OPTIONAL_ENV_VARS["SEARXNG_URL"],
        "FAL_KEY": optional_env.OPTIONAL_ENV_VARS["FAL_KEY"],  # image_generate is not registered here
    }
    script = Script("", secrets=("weather-secret-99",))
    result = script.run(sections=["keys"], registry=_weather_registry(), table=table)
    assert script.secret_prompts == ["  Weather API key (Enter: skip, -: skip the rest): "]
    # not a password: visible
    assert script.prompts == ["  SearXNG URL (e.g. http://localhost:8888) (Enter: skip, -: skip the rest): "]
    assert "  ✓ TAVILY_API_KEY is set (environment)" in script.lines
    assert "WEATHER_API_KEY — Weather API key for weather lookup  [1 of 2]" in script.lines
    assert "  Get one at: https://weatherapi.com/" in script.lines
    assert not any("FAL_KEY" in line for line in script.lines)
    assert "  web_search also needs UNDECLARED_KEY: hermes config set-env UNDECLARED_KEY VALUE" in script.lines
    assert read_dotenv(home / ".env") == {"WEATHER_API_KEY": "weather-secret-99"}
    assert (result.env_saved, result.skipped) == (["WEATHER_API_KEY"], ["SEARXNG_URL"])
    assert "weather-secret-99" not in script.text


def test_declare_env_and_missing_for(home: Path) -> None:
    entry = declare_env("WEATHER_API_KEY", description="Weather API key for weather lookup",
                        prompt="Weather API key", url="https://weatherapi.com/", tools=["weather"])
    assert optional_env.OPTIONAL_ENV_VARS["WEATHER_API_KEY"] == entry
    assert entry.password and entry.category == "tools"
    merged = declare_env("OPENAI_API_KEY", description="ignored", prompt="p", tools=["my_tool"])
    assert merged.tools[-1] == "my_tool" and merged.description.startswith("OpenAI API key")
    declare_env_table({"PLUGIN_URL": {"description": "d", "prompt": "p", "url": "u", "tools": ["weather"],
                                      "password": False}})
    assert optional_env.OPTIONAL_ENV_VARS["PLUGIN_URL"].password is False
    with pytest.raises(ValueError):
        declare_env("bad name", description="d", prompt="p", tools=["x"])
    with pytest.raises(ValueError):
        declare_env("NO_TOOLS", description="d", prompt="p", tools=[])
    missing = missing_for(["weather"], {"PLUGIN_URL": "http://x"})
    assert [v.name for v in missing] == ["WEATHER_API_KEY"]
    assert missing_for(["weather"], {"PLUGIN_URL": "x", "WEATHER_API_KEY": "k"}) == []


def _run(home: Path, *args: str, stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("WEATHER_API_KEY", "OPENAI_API_KEY")}
    env["HERMES_HOME"] = str(home)
    code = ("import argparse, sys\nfrom hermes.cli import setup\nfrom hermes.cli.common import run_command\n"
            "p = argparse.ArgumentParser(); setup.configure(p)\n"
            "raise SystemExit(run_command('setup', p.parse_args(sys.argv[1:])))")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                          stdin=stdin, timeout=60)


def test_without_a_terminal_setup_points_to_scripts(home: Path) -> None:
    proc = _run(home)
    assert proc.returncode == 1
    assert "needs a terminal" in proc.stderr and "--non-interactive" in proc.stderr
    assert not (home / "config.yaml").exists()


def test_non_interactive_model(home: Path) -> None:
    proc = _run(home, "--non-interactive", "--provider", "nous", "--model", "Hermes-4-405B", "--section", "model")
    assert proc.returncode == 0, proc.stderr
    assert config(home)["model"] == {"provider": "nous", "base_url": "https://inference-api.nousresearch.com/v1",
                                     "name": "Hermes-4-405B"}
    assert "NOUS_API_KEY is not set yet: hermes config set-env NOUS_API_KEY VALUE" in proc.stdout
    proc = _run(home, "--non-interactive", "--base-url", "http://127.0.0.1:9/v1", "--model", "x",
                "--api-key-env", "LOCAL_KEY", "--section", "model")
    assert proc.returncode == 0, proc.stderr
    assert config(home)["model"]["provider"] == "custom" and config(home)["model"]["api_key_env"] == "LOCAL_KEY"
    bad = _run(home, "--non-interactive", "--provider", "nope", "--model", "x")
    assert bad.returncode == 1 and "unknown provider 'nope'" in bad.stderr
    assert _run(home, "--non-interactive", "--provider", "custom", "--model", "x").returncode == 1


@pytest.mark.parametrize("style", ["declare_env", "table"])
def test_plugin_declared_key_is_offered(home: Path, style: str) -> None:
    """A plugin declares WEATHER_API_KEY (REG-9) either with declare_env() or the seed's dict shape."""
    folder = home / "plugins" / "weather"
    folder.mkdir(parents=True)
    source = (DATA / "weather_tool.py").read_text()
    if style == "declare_env":
        source += ("\nfrom hermes.config.optional_env import declare_env\n"
                   "declare_env('WEATHER_API_KEY', description='Weather API key for weather lookup',\n"
                   "            prompt='Weather API key', url='https://weatherapi.com/', tools=['weather'])\n")
    else:
        source += ("\nOPTIONAL_ENV_VARS = {'WEATHER_API_KEY': {'description': 'Weather API key for weather "
                   "lookup', 'prompt': 'Weather API key', 'url': 'https://weatherapi.com/', "
                   "'tools': ['weather'], 'password': True}}\n")
    (folder / "weather_tool.py").write_text(source)
    proc = _run(home, "--non-interactive", "--section", "keys")
    assert proc.returncode == 0, proc.stderr
    assert "optional: WEATHER_API_KEY — Weather API key for weather lookup (https://weatherapi.com/)" in proc.stdout
    (home / ".env").write_text("WEATHER_API_KEY=k\n")
    assert "WEATHER_API_KEY" not in _run(home, "--non-interactive", "--section", "keys").stdout


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_real_terminal_masks_the_key(home: Path) -> None:
    """`hermes setup` on a pseudo-terminal: input() for answers, getpass for the key (not echoed)."""
    import select
    import time


    code = ("import argparse, sys\nfrom hermes.cli import setup\nfrom hermes.cli.common import run_command\n"
            "p = argparse.ArgumentParser(); setup.configure(p)\n"
            "raise SystemExit(run_command('setup', p.parse_args(['--section', 'model'])))")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["HERMES_HOME"] = str(home)
    fd, child_fd = os.openpty()
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=child_fd, stdout=child_fd, stderr=child_fd,
                            env=env, start_new_session=True)
    os.close(child_fd)
    transcript = b""

    def until(marker: bytes) -> None:
        nonlocal transcript
        deadline = time.monotonic() + 30
        while marker not in transcript:
            assert time.monotonic() < deadline, f"timed out waiting for {marker!r}: {transcript!r}"
            if select.select([fd], [], [], 0.5)[0]:
                try:
                    transcript += os.read(fd, 4096)
                except OSError:
                    break

    try:
        for marker, answer in [(b"Provider [", b"openai"), (b"Base URL [", b""), (b"Model name [", b"gpt-4o-mini"),
                               (b"API key (", b"sk-pty-secret-value-42"), (b"Test the endpoint", b"n"),
                               (b"Setup finished.", None)]:
            until(marker)
            if answer is not None:
                os.write(fd, answer + b"\r")
        until(b"hermes chat")
    finally:
        code_ = proc.wait(timeout=30)
        os.close(fd)
    assert code_ == 0, transcript
    assert b"sk-pty-secret" not in transcript and b"gpt-4o-mini" in transcript
    assert b"may be echoed" not in transcript  # getpass really switched echo off
    assert read_dotenv(home / ".env") == {"OPENAI_API_KEY": "sk-pty-secret-value-42"}
    assert config(home)["model"]["name"] == "gpt-4o-mini"


def test_base_url_without_provider_counts_as_custom(home: Path) -> None:
    (home / "config.yaml").write_text("model:\n  base_url: http://gpu-box:8000/v1\n  name: qwen\n")
    script = Script("", "", "", "", "n", secrets=("",))
    script.run(sections=["model"])
    assert "Enter for custom" in script.prompts[0]
    assert config(home)["model"] == {"base_url": "http://gpu-box:8000/v1", "name": "qwen", "provider": "custom",
                                     "api_key_env": "OPENAI_API_KEY"}
