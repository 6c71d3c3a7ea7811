"""The typed config schema: `hermes config set` refuses what the settings reader would refuse.

Values are checked on write against the same schema the settings read through; unknown keys get the
nearest known key; keys the code reads (core, features, vendor tables, plugins) stay settable; a base
URL that cannot work fails at once instead of being retried like a network error.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.agent.provider import CallOptions, OpenAICompatProvider
from hermes.config.schema import SCHEMA
from hermes.config.settings import ModelSettings
from hermes.errors import ModelError

SRC = Path(__file__).resolve().parents[2] / "src" / "hermes"
CONFIG = "# mine\nmodel:\n  name: gpt-4o   # keep\n"


def hermes(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HERMES_MODEL"))}
    full.update({"HERMES_HOME": str(home), **(env or {})})
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=full,
                          timeout=60)


@pytest.fixture
def home(hermes_home: Path) -> Path:
    (hermes_home / "config.yaml").write_text(CONFIG, encoding="utf-8")
    return hermes_home


@pytest.mark.parametrize(("key", "value", "words"), [
    ("modle.name", "x", "unknown config key modle.name; did you mean model.name?"),
    ("agent.max_iteration", "3", "did you mean agent.max_iterations?"),
    ("web.fetchtimeout", "3", "did you mean web.fetch_timeout?"),
    ("model.base_url", "localhost:8080", "model.base_url in config.yaml must be an http:// or https:// URL"),
    ("model.base_url", "ftp://example.com", "must be an http:// or https:// URL"),
    ("agent.max_iterations", "-5", "agent.max_iterations in config.yaml must be a whole number from 1 to"),
    ("model.max_retries", "abc", "model.max_retries in config.yaml must be a whole number from 0 to 10; got 'abc'"),
    ("model.timeout", "fast", "model.timeout in config.yaml must be a number"),
    ("agent.tool_result_budget", "10", "must be a whole number >= 1000; got 10"),
    ("approvals.mode", "sometimes", "approvals.mode in config.yaml must be one of: ask"),
    ("memory.enabled", "maybe", "memory.enabled in config.yaml must be true or false"),
    ("model", "x", "model in config.yaml is a section"),
])
def test_bad_values_and_unknown_keys_are_refused_and_nothing_is_written(
        home: Path, key: str, value: str, words: str) -> None:
    proc = hermes(home, "config", "set", key, value)
    assert proc.returncode == 1, proc.stdout
    assert words in proc.stderr
    assert (home / "config.yaml").read_text(encoding="utf-8") == CONFIG


def test_a_url_without_scheme_is_met_with_the_likely_fix(home: Path) -> None:
    proc = hermes(home, "config", "set", "model.base_url", "localhost:8080/v1")
    assert "did you mean http://localhost:8080/v1?" in proc.stderr


@pytest.mark.parametrize(("key", "value"), [
    ("model.base_url", "http://127.0.0.1:8080/v1"), ("agent.max_iterations", "12"),
    ("tts.openai.model", "tts-1"), ("image_gen.fal.edit_model", "x"), ("web.duckduckgo.backend", "auto"),
    ("plugins.weather.units", "metric"), ("toolsets", "[hermes-cli, web]"), ("web.search_backend", "searxng"),
    ("model", "{name: m, max_retries: 2}"),
])
def test_valid_values_feature_and_plugin_keys_are_written(home: Path, key: str, value: str) -> None:
    proc = hermes(home, "config", "set", key, value)
    assert proc.returncode == 0, proc.stderr
    assert hermes(home, "config", "get", key.split(".")[0]).returncode == 0


_READ_CALL = re.compile(
    r"""\.(?:get|get_str|get_bool|get_number|flag|number|integer|text|strings)\(\s*"([a-z_]+\.[a-z_.]+)\"""")


def test_every_key_the_code_reads_is_in_the_schema() -> None:
    """Keys read from config.yaml anywhere in the code stay settable (session state keys are not config)."""
    not_config = {"terminal.approvals", "session_search.store", "tokenizer.chat_template"}
    read = {m.group(1) for path in SRC.rglob("*.py") if "toolgateway" not in path.parts
            for m in _READ_CALL.finditer(path.read_text(encoding="utf-8"))}
    read = {k for k in read if k.split(".")[0] in SCHEMA.sections} | {k for k in read if k.startswith("model.")}
    assert len(read) > 30
    assert sorted(k for k in read - not_config if not SCHEMA.knows(k)) == []


def test_settings_refuse_an_environment_url_without_scheme(hermes_home: Path) -> None:
    proc = hermes(hermes_home, "-z", "hi", env={"OPENAI_BASE_URL": "127.0.0.1:9/v1", "HERMES_MODEL": "m"})
    assert proc.returncode == 1
    assert "the model base URL from OPENAI_BASE_URL must be an http:// or https:// URL" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("url", ["127.0.0.1:9/v1", "ftp://127.0.0.1/v1"])
def test_a_url_that_cannot_work_is_not_retried(url: str) -> None:
    model = ModelSettings(provider="custom", base_url=url, model="m", api_key=None, api_key_source="none",
                          max_retries=3)
    retries: list[int] = []
    provider = OpenAICompatProvider(model, stream=False, base_delay=0.01)
    with pytest.raises(ModelError, match="cannot be used") as caught:
        provider.complete([{"role": "user", "content": "hi"}], None,
                          CallOptions(on_retry=lambda n, _d, _r: retries.append(n)))
    assert "http:// or https://" in str(caught.value)
    assert retries == []
