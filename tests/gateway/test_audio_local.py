"""The openai-audio relay's ``local`` backend: speech from espeak-ng on the gateway host, over real HTTP.

No vendor at all: the gateway runs espeak-ng (Debian package) and encodes the format the client asked
for with ffmpeg. The audio is checked as audio (RIFF/WAVE header and duration with the wave module,
each format's magic bytes), the speed changes the duration, a transcription is refused with 503, and
our own ``text_to_speech`` tool speaks through it end to end.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import wave
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import hermes.tools.audio.tool  # noqa: F401  (registers text_to_speech)
from fakes.vendors.harness import GatewayHarness
from hermes.tools.registry import registry

SENTENCE = "The gateway speaks this sentence with its own engine."


def _need(program: str) -> None:
    if shutil.which(program) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{program} is missing (CI installs it)")
        pytest.skip(f"{program} is not installed")


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    with GatewayHarness(tmp_path_factory.mktemp("gw_audio_local"),
                        **{"openai-audio.backend": "local", "openai-audio.local_voice": "en-us"}) as harness:
        harness.user("alice", "paid")
        yield harness


def speak(gw: GatewayHarness, **body: object) -> httpx.Response:
    payload = {"model": "gpt-4o-mini-tts", "voice": "alloy", "input": SENTENCE, **body}
    return httpx.post(f"{gw.relay_url('openai-audio')}/v1/audio/speech", json=payload, timeout=60,
                      headers={"authorization": f"Bearer {gw.token('alice')}"})


def wav_seconds(data: bytes) -> float:
    with wave.open(io.BytesIO(data)) as w:
        assert w.getnchannels() == 1 and w.getsampwidth() == 2
        return w.getnframes() / w.getframerate()


def test_wav_speech_is_real_audio_and_metered(gw: GatewayHarness) -> None:
    _need("espeak-ng")
    resp = speak(gw, response_format="wav")
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == "audio/wav" and resp.content[:4] == b"RIFF"
    assert 1.5 < wav_seconds(resp.content) < 15
    user = gw.side.accounts.get_user("alice")
    row = gw.usage_rows("SELECT vendor, units, status FROM usage WHERE user_id = ? ORDER BY id DESC",
                               (user.id,))[0]
    assert (row[0], row[1], row[2]) == ("espeak", len(SENTENCE), 200)


def test_speed_changes_the_duration(gw: GatewayHarness) -> None:
    _need("espeak-ng")
    slow = wav_seconds(speak(gw, response_format="wav", speed=0.5).content)
    fast = wav_seconds(speak(gw, response_format="wav", speed=2.0).content)
    assert slow > 2.5 * fast
    bad = speak(gw, response_format="wav", speed=9)
    assert bad.status_code == 400 and "speed" in bad.json()["error"]


@pytest.mark.parametrize(("fmt", "content_type", "magic"), [
    ("mp3", "audio/mpeg", (b"ID3", b"\xff\xfb", b"\xff\xf3", b"\xff\xf2")),
    ("opus", "audio/ogg", (b"OggS",)),
    ("flac", "audio/flac", (b"fLaC",)),
    ("aac", "audio/aac", (b"\xff\xf1", b"\xff\xf9")),
])
def test_encoded_formats(gw: GatewayHarness, fmt: str, content_type: str, magic: tuple[bytes, ...]) -> None:
    _need("espeak-ng")
    _need("ffmpeg")
    resp = speak(gw, response_format=fmt)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"] == content_type and resp.content.startswith(magic), resp.content[:8]
    assert len(resp.content) > 2000


def test_pcm_is_raw_24khz_16bit(gw: GatewayHarness) -> None:
    _need("espeak-ng")
    _need("ffmpeg")
    seconds = wav_seconds(speak(gw, response_format="wav").content)
    pcm = speak(gw, response_format="pcm").content
    assert len(pcm) % 2 == 0 and abs(len(pcm) / (2 * 24000) - seconds) < 0.2


def test_transcription_is_refused_with_503(gw: GatewayHarness) -> None:
    resp = httpx.post(f"{gw.relay_url('openai-audio')}/v1/audio/transcriptions", timeout=30,
                      headers={"authorization": f"Bearer {gw.token('alice')}"},
                      data={"model": "whisper-1"}, files={"file": ("a.wav", b"RIFF0000WAVE", "audio/wav")})
    assert resp.status_code == 503 and resp.json()["code"] == "backend_not_configured"
    assert "does not transcribe" in resp.json()["error"]


def test_text_to_speech_tool_speaks_through_the_local_gateway(gw: GatewayHarness, hermes_home: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _need("espeak-ng")
    for name in ("OPENAI_API_KEY", "VOICE_TOOLS_OPENAI_KEY", "ELEVENLABS_API_KEY", "TOOL_GATEWAY_DOMAIN",
                 "TOOL_GATEWAY_URL", "TOOL_GATEWAY_SCHEME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", gw.token("alice"))
    monkeypatch.setenv("OPENAI_AUDIO_GATEWAY_URL", gw.relay_url("openai-audio"))
    (hermes_home / "config.yaml").write_text("tts:\n  provider: nous\n", encoding="utf-8")
    registry.invalidate_checks()
    result = json.loads(registry.dispatch("text_to_speech", {"text": "hello from the gateway", "format": "wav"}))
    assert result.get("success") and result["route"] == "gateway", result
    assert 0.5 < wav_seconds(Path(result["path"]).read_bytes()) < 10
