"""Speech to text for surfaces (GW-1 STT): OpenAI transcriptions by key and through the gateway, against a fake."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.tokens import jwt
from fakes.vendors.fal import FastServerThread as ServerThread
from fakes.vendors.openai_audio import FAKE_AUDIO, FakeOpenAIAudio
from hermes.config.settings import Settings
from hermes.errors import GatewayError, SelectionError, ToolError
from hermes.tools.audio.stt import transcribe_file

_ENV = ("OPENAI_API_KEY", "VOICE_TOOLS_OPENAI_KEY", "TOOL_GATEWAY_USER_TOKEN", "OPENAI_AUDIO_GATEWAY_URL")


PAID = jwt({"exp": time.time() + 3600, "paid_access": True})


@pytest.fixture
def home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    return hermes_home


@pytest.fixture
def fake() -> Iterator[tuple[FakeOpenAIAudio, str]]:
    server_fake = FakeOpenAIAudio(key=PAID, transcript="turn on the lights")
    with ServerThread(server_fake.app) as server:
        yield server_fake, server.url


@pytest.fixture
def voice(tmp_path: Path) -> Path:
    path = tmp_path / "note.ogg"
    path.write_bytes(FAKE_AUDIO["opus"])
    return path


def configure(home: Path, text: str) -> Settings:
    (home / "config.yaml").write_text(text, encoding="utf-8")
    return Settings.load()


def test_byok_whisper_plain_text(home: Path, fake: tuple[FakeOpenAIAudio, str], voice: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    server_fake, url = fake
    monkeypatch.setenv("OPENAI_API_KEY", PAID)
    result = transcribe_file(voice, configure(home, f"stt:\n  provider: openai\n  openai:\n    base_url: {url}/v1\n"),
                             language="en")
    assert result.text == "turn on the lights" and result.model == "whisper-1" and result.route == "byok"
    request = server_fake.requests[0]
    assert request["path"] == "/v1/audio/transcriptions" and request["headers"]["authorization"] == f"Bearer {PAID}"
    assert request["form"] == {"model": "whisper-1", "response_format": "text", "language": "en"}
    filename, data, ctype = server_fake.uploads[0]["file"]
    assert (filename, data, ctype) == ("note.ogg", FAKE_AUDIO["opus"], "audio/ogg")


def test_json_models_and_the_gateway(home: Path, fake: tuple[FakeOpenAIAudio, str], voice: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    server_fake, url = fake
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", PAID)
    monkeypatch.setenv("OPENAI_AUDIO_GATEWAY_URL", url)
    settings = configure(home, "stt:\n  provider: nous\n  openai:\n    model: gpt-4o-mini-transcribe\n")
    result = transcribe_file(voice, settings)
    assert result.text == "turn on the lights" and result.route == "gateway"
    assert server_fake.requests[0]["form"]["response_format"] == "json"


def test_gw3_and_local(home: Path, voice: Path) -> None:
    with pytest.raises(SelectionError) as missing:
        transcribe_file(voice, configure(home, "stt:\n  provider: openai\n"))
    assert str(missing.value) == ("stt is configured to use openai (set via hermes tools), but VOICE_TOOLS_OPENAI_KEY "
                                  "(or OPENAI_API_KEY) is not set. Run 'hermes tools' to change it.")
    with pytest.raises(ToolError, match="faster-whisper"):
        transcribe_file(voice, configure(home, ""))
    with pytest.raises(GatewayError, match="not logged in"):
        transcribe_file(voice, configure(home, "stt:\n  provider: nous\n"))


def test_unreadable_file(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk")
    with pytest.raises(ToolError, match="cannot read"):
        transcribe_file(tmp_path / "absent.ogg", configure(home, "stt:\n  provider: openai\n"))
