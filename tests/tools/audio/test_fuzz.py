"""Malformed argument payloads for text_to_speech: dispatch always answers a JSON object, never crashes.

Routed to an OpenAI audio fake (fast and deterministic); a failure must be a deliberate ``{"error": ...}``,
never the registry's catch-all ``text_to_speech failed: <Exception>``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hermes.tools.audio.tool  # noqa: F401  (registers text_to_speech)
from fakes.vendors.fal import FastServerThread
from fakes.vendors.openai_audio import FakeOpenAIAudio
from hermes.tools.registry import registry
from hermes.tools.toolsets import Surface

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
VOICES = st.sampled_from(["alloy", "nova", "", " ", "en; rm -rf /", "-v", "\ud800", "a" * 64, "../../etc", "en-us"])
FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "text": st.one_of(st.text(max_size=80), st.just("\ud800"), st.just("x" * 4097), JSON),
    "voice": st.one_of(VOICES, st.text(max_size=20), JSON),
    "format": st.one_of(st.sampled_from(["auto", "mp3", "ogg", "wav", "opus", ""]), JSON),
}
WELL_SHAPED = st.fixed_dictionaries(
    {"text": st.text(min_size=1, max_size=80)},
    optional={"voice": st.one_of(VOICES, st.text(min_size=1, max_size=20)),
              "format": st.sampled_from(["auto", "mp3", "ogg", "wav"])},
)
PAYLOADS = st.one_of(WELL_SHAPED, WELL_SHAPED, st.fixed_dictionaries({}, optional=FIELDS),
                     st.dictionaries(st.text(max_size=8), JSON, max_size=4), st.text(max_size=40), JSON)


class Session:
    surface = Surface.MESSAGING
    settings = None
    sink = None
    state: dict[str, Any] = {}  # noqa: RUF012

    @property
    def task_id(self) -> str:
        return "fuzz"


@pytest.fixture(scope="module")
def audio() -> Iterator[str]:
    with FastServerThread(FakeOpenAIAudio(key="sk-test").app) as server:
        yield server.url


@pytest.fixture
def setup(hermes_home: Path, audio: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (hermes_home / "config.yaml").write_text(f"tts:\n  provider: openai\n  openai:\n    base_url: {audio}\n")
    registry.invalidate_checks()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=PAYLOADS, messaging=st.booleans())
def test_no_exception_escapes_dispatch(setup: None, payload: Any, messaging: bool) -> None:
    kw: dict[str, Any] = {"session": Session()} if messaging else {}
    result = json.loads(registry.dispatch("text_to_speech", payload, **kw))
    assert isinstance(result, dict)
    assert ("error" in result) != ("success" in result), result
    if "error" in result:
        assert isinstance(result["error"], str) and not result["error"].startswith("text_to_speech failed:"), result
    else:
        assert Path(result["path"]).is_file()
