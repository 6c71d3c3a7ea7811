"""text_to_speech: the local espeak-ng engine for real, and OpenAI/ElevenLabs/gateway against fakes (requirement T-TTS).

espeak-ng and ffmpeg are Debian packages; tests needing them are skipped cleanly when they are absent.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import wave
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.audio.tool  # noqa: F401  (registers text_to_speech)
from fakes.tokens import jwt
from fakes.vendors.elevenlabs import FakeElevenLabs
from fakes.vendors.fal import FastServerThread as ServerThread
from fakes.vendors.fal import SwapApp
from fakes.vendors.openai_audio import FakeOpenAIAudio
from hermes.tools.registry import registry
from hermes.tools.toolsets import Surface

HINT = "Run 'hermes tools' to change it."
ESPEAK = shutil.which("espeak-ng") or shutil.which("espeak")
FFMPEG = shutil.which("ffmpeg")
needs_espeak = pytest.mark.skipif(ESPEAK is None, reason="espeak-ng is not installed (apt-get install espeak-ng)")
needs_ffmpeg = pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed (apt-get install ffmpeg)")


PAID = jwt({"exp": time.time() + 3600, "paid_access": True})


@dataclass
class Session:
    """The parts of a running session that tools look at (hermes.tools.context.SessionView)."""

    surface: Surface
    settings: Any = None
    sink: Any = None
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def task_id(self) -> str:
        return "task-1"


@pytest.fixture(scope="module")
def audio_server() -> Iterator[tuple[SwapApp, ServerThread]]:
    swap = SwapApp(FakeOpenAIAudio().app)
    with ServerThread(swap) as running:
        yield swap, running


@pytest.fixture
def openai_fake(audio_server: tuple[SwapApp, ServerThread]) -> tuple[FakeOpenAIAudio, str]:
    fake = FakeOpenAIAudio(key=PAID)
    swap, running = audio_server
    swap.app = fake.app
    return fake, running.url


def configure(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")
    registry.invalidate_checks()


def speak(args: dict[str, Any], surface: Surface | None = None) -> dict[str, Any]:
    kw: dict[str, Any] = {"session": Session(surface)} if surface is not None else {}
    result = json.loads(registry.dispatch("text_to_speech", args, **kw))
    assert isinstance(result, dict)
    return result


def only_espeak_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PATH holding espeak-ng and nothing else: no ffmpeg, no sox."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    assert ESPEAK is not None
    os.symlink(ESPEAK, bin_dir / "espeak-ng")
    monkeypatch.setenv("PATH", str(bin_dir))


# -- the local engine ----------------------------------------------------------------------------------------
@needs_espeak
def test_espeak_is_the_default_and_writes_a_real_wav(home: Path) -> None:
    result = speak({"text": "Hello from the local speech engine. This sentence takes a while to say."})
    assert result["success"] and result["provider"] == "espeak" and result["route"] == "local", result
    path = Path(result["path"])
    assert path.parent == home / "media" and path.suffix == ".wav"
    data = path.read_bytes()
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    with wave.open(str(path)) as reader:
        rate, width, channels, frames = (reader.getframerate(), reader.getsampwidth(), reader.getnchannels(),
                                         reader.getnframes())
    by_size = (len(data) - 44) / (rate * width * channels)  # canonical 44-byte header
    assert 2.0 < frames / rate < 15.0
    assert abs(by_size - frames / rate) < 0.05
    assert result["duration_s"] == pytest.approx(frames / rate, abs=0.01)


@needs_espeak
@needs_ffmpeg
def test_messaging_gets_an_opus_voice_note(home: Path) -> None:
    result = speak({"text": "A short voice note."}, Surface.MESSAGING)
    assert result["format"] == "ogg" and result["voice_note"] is True, result
    data = Path(result["path"]).read_bytes()
    assert data.startswith(b"OggS") and b"OpusHead" in data[:200]


@needs_espeak
@needs_ffmpeg
def test_mp3_on_request(home: Path) -> None:
    result = speak({"text": "Convert me.", "format": "mp3"})
    data = Path(result["path"]).read_bytes()
    assert result["format"] == "mp3" and (data.startswith(b"ID3") or data[0] == 0xFF), result


@needs_espeak
def test_without_ffmpeg_the_native_format_comes_back_with_a_note(home: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    only_espeak_on_path(tmp_path, monkeypatch)
    result = speak({"text": "No converter here."}, Surface.MESSAGING)
    assert result["success"] and result["format"] == "wav" and result["voice_note"] is False, result
    assert "ffmpeg is not installed" in result["note"] and "OGG" in result["note"]
    assert Path(result["path"]).read_bytes()[:4] == b"RIFF"


@needs_espeak
def test_espeak_voice_is_validated(home: Path) -> None:
    assert "'voice'" in speak({"text": "x", "voice": "en; rm -rf /"})["error"]


def test_missing_espeak_hides_the_default_route(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    registry.invalidate_checks()
    ok, reason = registry.availability("text_to_speech")
    assert not ok and reason and "espeak-ng" in reason
    configure(home, "tts:\n  provider: openai\n")  # a saved selection without its key cannot run either
    ok, reason = registry.availability("text_to_speech")
    assert not ok and reason and "VOICE_TOOLS_OPENAI_KEY (or OPENAI_API_KEY) is not set" in reason


# -- OpenAI, gateway, ElevenLabs --------------------------------------------------------------------------------
def test_byok_openai(home: Path, openai_fake: tuple[FakeOpenAIAudio, str], monkeypatch: pytest.MonkeyPatch) -> None:
    fake, url = openai_fake
    monkeypatch.setenv("VOICE_TOOLS_OPENAI_KEY", PAID)
    configure(home, f"tts:\n  provider: openai\n  openai:\n    base_url: {url}/v1\n    speed: 1.25\n    voice: nova\n")
    result = speak({"text": "hi there"})
    assert result["success"] and result["format"] == "mp3" and result["route"] == "byok", result
    assert Path(result["path"]).read_bytes().startswith(b"ID3")
    request = fake.requests[0]
    assert request["path"] == "/v1/audio/speech" and request["headers"]["authorization"] == f"Bearer {PAID}"
    assert request["headers"]["x-idempotency-key"] and request["headers"]["accept"] == "application/octet-stream"
    assert request["json"] == {"model": "gpt-4o-mini-tts", "voice": "nova", "input": "hi there",
                               "response_format": "mp3", "speed": 1.25}


def test_openai_makes_the_voice_note_itself(home: Path, openai_fake: tuple[FakeOpenAIAudio, str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    fake, url = openai_fake
    monkeypatch.setenv("OPENAI_API_KEY", PAID)
    configure(home, f"tts:\n  provider: openai\n  openai:\n    base_url: {url}\n")
    result = speak({"text": "voice note", "voice": "echo"}, Surface.MESSAGING)
    assert result["format"] == "ogg" and Path(result["path"]).suffix == ".ogg", result
    assert fake.requests[0]["json"]["response_format"] == "opus" and "speed" not in fake.requests[0]["json"]


def test_gateway_forces_the_managed_model(home: Path, openai_fake: tuple[FakeOpenAIAudio, str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    fake, url = openai_fake
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", PAID)
    monkeypatch.setenv("OPENAI_AUDIO_GATEWAY_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-ignored")
    configure(home, "tts:\n  provider: nous\n  openai:\n    model: tts-1-hd\n")
    result = speak({"text": "managed", "format": "wav"})
    assert result["success"] and result["route"] == "gateway" and result["format"] == "wav", result
    request = fake.requests[0]
    assert request["json"]["model"] == "gpt-4o-mini-tts" and request["json"]["response_format"] == "wav"
    assert request["headers"]["authorization"] == f"Bearer {PAID}"


def test_gateway_not_logged_in(home: Path) -> None:
    configure(home, "tts:\n  provider: nous\n")
    assert speak({"text": "x"})["error"].startswith("tool 'text_to_speech' is not available: "
        "tts uses the Nous Tool Gateway, but you are not logged in to Nous Portal. Run 'hermes portal login'")


def test_byok_elevenlabs(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeElevenLabs()
    monkeypatch.setenv("ELEVENLABS_API_KEY", "el-test")
    with ServerThread(fake.app) as server:
        configure(home, f"tts:\n  provider: elevenlabs\n  elevenlabs:\n    base_url: {server.url}\n"
                        "    voice_id: VoiceAbc123\n")
        result = speak({"text": "eleven"})
    assert result["success"] and result["format"] == "mp3" and result["provider"] == "elevenlabs", result
    request = fake.requests[0]
    assert request["path"] == "/v1/text-to-speech/VoiceAbc123" and request["headers"]["xi-api-key"] == "el-test"
    assert request["query"] == {"output_format": "mp3_44100_128"}
    assert request["json"] == {"text": "eleven", "model_id": "eleven_multilingual_v2"}
    assert "authorization" not in request["headers"]


@pytest.mark.parametrize("provider, missing", [
    ("elevenlabs", "ELEVENLABS_API_KEY is"),
    ("openai", "VOICE_TOOLS_OPENAI_KEY (or OPENAI_API_KEY) is"),
])
def test_gw3_messages(home: Path, provider: str, missing: str) -> None:
    configure(home, f"tts:\n  provider: {provider}\n")
    assert speak({"text": "x"}) == {"error": "tool 'text_to_speech' is not available: "
        f"tts is configured to use {provider} (set via hermes tools), but {missing} not set. {HINT}"}


def test_vendor_refusal_names_the_key(home: Path, openai_fake: tuple[FakeOpenAIAudio, str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _fake, url = openai_fake
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    configure(home, f"tts:\n  provider: openai\n  openai:\n    base_url: {url}\n")
    error = speak({"text": "x"})["error"]
    assert "HTTP 401: Incorrect API key provided" in error and "Check OPENAI_API_KEY" in error
