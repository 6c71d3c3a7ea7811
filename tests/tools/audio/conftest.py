"""Fixtures of the audio tool tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.tools.registry import registry

#: the variables that route text_to_speech; the real environment's are removed
_ENV = ("OPENAI_API_KEY", "VOICE_TOOLS_OPENAI_KEY", "ELEVENLABS_API_KEY", "TOOL_GATEWAY_USER_TOKEN",
        "OPENAI_AUDIO_GATEWAY_URL", "TOOL_GATEWAY_DOMAIN", "TOOL_GATEWAY_URL")


@pytest.fixture
def home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HERMES_HOME with none of the speech routing variables set and the registry's checks forgotten."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    registry.invalidate_checks()
    return hermes_home
