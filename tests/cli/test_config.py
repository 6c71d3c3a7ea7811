"""`hermes config`: show, get, set (round-trip, types, secrets refused), unset, path, set-env, edit."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from hermes.config.dotenv import read_dotenv

_CLEAR = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL", "OPENAI_MODEL", "EDITOR", "VISUAL",
          "OPENROUTER_API_KEY", "MY_SERVICE_TOKEN")


def hermes(home: Path, *args: str, input: str | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in _CLEAR}
    full_env["HERMES_HOME"] = str(home)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True,
                          env=full_env, input=input, timeout=60)


CONFIG = """\
# Hermes configuration — hand-written
model:
  provider: openai   # the preset
  name: gpt-4o
  timeout: 60

# agent settings
agent:
  max_iterations: 30   # default is 30
  disabled_toolsets:
    - catalog
toolsets: [hermes-cli, web]  # what the CLI gets
"""


def load(path: Path) -> dict[str, object]:
    data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.fixture
def home(hermes_home: Path) -> Path:
    (hermes_home / "config.yaml").write_text(CONFIG, encoding="utf-8")
    return hermes_home


def test_set_changes_only_that_line(home: Path) -> None:
    proc = hermes(home, "config", "set", "model.name", "gpt-5-mini")
    assert proc.returncode == 0, proc.stderr
    assert "Set model.name = gpt-5-mini" in proc.stdout
    before = CONFIG.splitlines(keepends=True)
    after = (home / "config.yaml").read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(after) == len(before)
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert changed == [("  name: gpt-4o\n", "  name: gpt-5-mini\n")]


def test_set_keeps_end_of_line_comment(home: Path) -> None:
    assert hermes(home, "config", "set", "agent.max_iterations", "12").returncode == 0
    text = (home / "config.yaml").read_text(encoding="utf-8")
    assert text == CONFIG.replace("max_iterations: 30   # default", "max_iterations: 12   # default")


def test_set_parses_yaml_scalars(home: Path) -> None:
    assert hermes(home, "config", "set", "agent.max_parallel_tools", "3").returncode == 0
    assert hermes(home, "config", "set", "plugins.weather.compact", "true").returncode == 0
    assert hermes(home, "config", "set", "toolsets", "[web, file]").returncode == 0
    assert hermes(home, "config", "set", "model.name", '"7"').returncode == 0
    data = load(home / "config.yaml")
    assert data["agent"] == {"max_iterations": 30, "disabled_toolsets": ["catalog"], "max_parallel_tools": 3}
    assert data["plugins"] == {"weather": {"compact": True}}
    assert data["toolsets"] == ["web", "file"]
    assert data["model"]["name"] == "7"  # type: ignore[index]
    text = (home / "config.yaml").read_text(encoding="utf-8")
    assert text.startswith("# Hermes configuration — hand-written\n")
    assert "# agent settings\n" in text


def test_get_prints_value_and_fails_when_unset(home: Path) -> None:
    proc = hermes(home, "config", "get", "model.name")
    assert (proc.returncode, proc.stdout) == (0, "gpt-4o\n")
    proc = hermes(home, "config", "get", "agent.disabled_toolsets")
    assert proc.stdout.strip() == "- catalog"
    proc = hermes(home, "config", "get", "model.nothing")
    assert proc.returncode == 1
    assert "hermes: error: model.nothing is not set" in proc.stderr


def test_set_refuses_secrets_and_names_set_env(home: Path) -> None:
    secret = "sk-test-0123456789abcdefghij"
    proc = hermes(home, "config", "set", "model.api_key", secret)
    assert proc.returncode == 1
    assert "hermes config set-env OPENAI_API_KEY" in proc.stderr
    assert secret not in proc.stdout + proc.stderr
    proc = hermes(home, "config", "set", "web.token", "abc123")
    assert proc.returncode == 1 and "set-env TOKEN" in proc.stderr
    # a key *shape* is refused under any name
    assert hermes(home, "config", "set", "model.name", secret).returncode == 1
    assert (home / "config.yaml").read_text(encoding="utf-8") == CONFIG
    # a key naming the variable that holds the secret is fine
    assert hermes(home, "config", "set", "model.api_key_env", "MY_SERVICE_TOKEN").returncode == 0
    assert load(home / "config.yaml")["model"]["api_key_env"] == "MY_SERVICE_TOKEN"  # type: ignore[index]


def test_set_refuses_invalid_values(home: Path) -> None:
    proc = hermes(home, "config", "set", "model.provider", "nosuch")
    assert proc.returncode == 1 and "model.provider in config.yaml must be one of: openrouter" in proc.stderr
    proc = hermes(home, "config", "set", "agent.max_iterations", "many")
    assert proc.returncode == 1 and "agent.max_iterations in config.yaml must be a whole number" in proc.stderr
    assert (home / "config.yaml").read_text(encoding="utf-8") == CONFIG


def test_unset_keeps_following_comments(home: Path) -> None:
    proc = hermes(home, "config", "unset", "model.timeout")
    assert proc.returncode == 0, proc.stderr
    assert (home / "config.yaml").read_text(encoding="utf-8") == CONFIG.replace("  timeout: 60\n", "")
    # removing the last key of a section removes the emptied section, comments stay
    assert hermes(home, "config", "unset", "agent.max_iterations").returncode == 0
    assert hermes(home, "config", "unset", "agent.disabled_toolsets").returncode == 0
    text = (home / "config.yaml").read_text(encoding="utf-8")
    assert "agent" not in load(home / "config.yaml")
    assert "# agent settings\n" in text and "toolsets: [hermes-cli, web]  # what the CLI gets\n" in text
    proc = hermes(home, "config", "unset", "agent.nothing")
    assert proc.returncode == 0 and "was not set" in proc.stdout


def test_show_and_path(hermes_home: Path) -> None:
    proc = hermes(hermes_home, "config", "show")
    assert proc.returncode == 0
    assert "No config file yet" in proc.stdout and str(hermes_home / "config.yaml") in proc.stdout
    (hermes_home / "config.yaml").write_text(CONFIG + "legacy:\n  api_key: plain-text-secret\n")
    (hermes_home / ".env").write_text("OPENROUTER_API_KEY=sk-or-abcdefghijklmnop\n")
    proc = hermes(hermes_home, "config", "show")
    lines = proc.stdout.splitlines()
    assert lines[0] == f"# {hermes_home / 'config.yaml'}"
    assert "  provider: openai   # the preset" in lines
    assert "plain-text-secret" not in proc.stdout and "sk-or-" not in proc.stdout
    assert "OPENROUTER_API_KEY" in lines[-1]
    assert hermes(hermes_home, "config", "path").stdout == f"{hermes_home / 'config.yaml'}\n"
    assert hermes(hermes_home, "config", "path", "--env").stdout == f"{hermes_home / '.env'}\n"


def test_set_env_writes_0600_and_never_echoes(hermes_home: Path) -> None:
    value = "or-secret-value-123456"
    proc = hermes(hermes_home, "config", "set-env", "OPENROUTER_API_KEY", value)
    assert proc.returncode == 0, proc.stderr
    assert value not in proc.stdout + proc.stderr
    env_file = hermes_home / ".env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert read_dotenv(env_file) == {"OPENROUTER_API_KEY": value}
    # without VALUE it is read from stdin (keeps it out of shell history)
    proc = hermes(hermes_home, "config", "set-env", "MY_SERVICE_TOKEN", input="tok en\n")
    assert proc.returncode == 0 and "tok en" not in proc.stdout
    assert read_dotenv(env_file)["MY_SERVICE_TOKEN"] == "tok en"
    assert hermes(hermes_home, "config", "set-env", "1BAD", "x").returncode == 1
    assert hermes(hermes_home, "config", "unset-env", "MY_SERVICE_TOKEN").returncode == 0
    assert read_dotenv(env_file) == {"OPENROUTER_API_KEY": value}


def test_edit_runs_editor_and_validates(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "editor.py"
    # the editor is called as EDITOR... PATH: append the text given before PATH (default "extra: 1")
    script.write_text("import sys\nopen(sys.argv[-1], 'a').write(sys.argv[1] if len(sys.argv) > 2 else "
                      "'extra: 1\\n')\n")
    proc = hermes(home, "config", "edit", env={"EDITOR": f"{sys.executable} {script}"})
    assert proc.returncode == 0, proc.stderr
    assert load(home / "config.yaml")["extra"] == 1
    proc = hermes(home, "config", "edit", env={"EDITOR": f"{sys.executable} {script} 'bad: [\\n'"})
    assert proc.returncode == 1 and "not valid YAML" in proc.stderr
    proc = hermes(home, "config", "edit")
    assert proc.returncode == 1 and "EDITOR" in proc.stderr


@pytest.mark.skipif(
    any(not (Path(__file__).parents[2] / "src/hermes/cli" / f"{m}.py").exists()
        for m in ("chat", "setup", "config", "tools", "sessions", "batch")),
    reason="another command module of hermes.cli.main is not in this checkout yet",
)
def test_python_m_hermes_config(home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in _CLEAR}
    env["HERMES_HOME"] = str(home)
    proc = subprocess.run([sys.executable, "-m", "hermes", "config", "get", "model.provider"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "openai\n"), proc.stderr
