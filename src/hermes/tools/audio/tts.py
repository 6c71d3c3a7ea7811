"""``text_to_speech`` at execution time: route, engine, output format for the surface, saved file.

Backends (``tts.provider``, requirement T-TTS, GW-1): ``nous`` (the gateway's ``openai-audio`` relay; the model is
forced to ``gpt-4o-mini-tts`` there, as the upstream managed client does), ``openai``
(``VOICE_TOOLS_OPENAI_KEY`` or ``OPENAI_API_KEY``), ``elevenlabs`` (``ELEVENLABS_API_KEY``) and ``espeak``
(espeak-ng on this machine, offline) — the default when nothing else is configured — and ``piper``
(Piper neural voices on this machine, offline; only when selected, see :mod:`.piper`).

Output format: on messaging surfaces a voice note (Opus in Ogg); elsewhere each engine's natural format —
MP3 for OpenAI and ElevenLabs, WAV for espeak and Piper. The model may ask for ``mp3``, ``ogg`` or ``wav``. OpenAI
produces every one of them itself; other engines are converted with ffmpeg (or sox), and when neither
is installed the native file is returned with a ``note`` saying so.
"""

from __future__ import annotations

import io
import re
import wave
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError
from hermes.media.speech import convert, espeak
from hermes.tools.audio.piper import piper_speak, resolve_voice
from hermes.tools.routed.context import Access, RoutedContext, http_client, text_arg, vendor_failure
from hermes.tools.routed.media import MP3, OGG, WAV, MediaType, save_media, sniff_audio
from hermes.vendors.base import Auth, VendorError
from hermes.vendors.elevenlabs import DEFAULT_MODEL_ID, DEFAULT_VOICE_ID, ElevenLabsClient, elevenlabs_auth
from hermes.vendors.openai_audio import OpenAIAudioClient

if TYPE_CHECKING:
    from hermes.config.settings import Settings

MANAGED_MODEL = "gpt-4o-mini-tts"
DEFAULT_OPENAI_VOICE = "alloy"
DEFAULT_ESPEAK_VOICE = "en"
PIPER_KEY = "tts.piper"
MAX_TEXT = 4096
FORMATS = ("auto", "mp3", "ogg", "wav")
_TYPES = {"mp3": MP3, "ogg": OGG, "wav": WAV}
_OPENAI_FORMATS = {"mp3": "mp3", "ogg": "opus", "wav": "wav"}
_VOICE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")


def wanted_format(requested: str, messaging: bool) -> str | None:
    """``ogg``/``mp3``/``wav`` asked for, ``ogg`` on messaging surfaces for ``auto``, else None (native)."""
    if requested != "auto":
        return requested
    return "ogg" if messaging else None


def _voice(args: dict[str, Any], ctx: RoutedContext, key: str, default: str) -> str:
    voice = args.get("voice") or ctx.get_str(key, default) or default
    if not isinstance(voice, str) or not _VOICE.match(voice):
        raise ToolError("'voice' must be a voice name such as 'alloy', 'en-us' or an ElevenLabs voice id")
    return voice


def wav_seconds(data: bytes) -> float | None:
    """The duration of a WAV file, or None when it cannot be read."""
    try:
        with wave.open(io.BytesIO(data)) as reader:
            rate = reader.getframerate()
            return round(reader.getnframes() / rate, 3) if rate else None
    except (wave.Error, EOFError):
        return None


async def _openai(ctx: RoutedContext, access: Access, text: str, voice: str, target: str | None) -> tuple[bytes, str]:
    fmt = target or "mp3"
    model = MANAGED_MODEL if access.gateway else (ctx.get_str("tts.openai.model", MANAGED_MODEL) or MANAGED_MODEL)
    speed = ctx.get_number("tts.openai.speed", 1.0, low=0.25, high=4.0)
    async with http_client() as http:
        client = OpenAIAudioClient(http, access.origin, Auth.bearer(access.secret), allow_url=access.allow_url)
        try:
            audio = await client.speech(model=model, voice=voice, text=text,
                                        response_format=_OPENAI_FORMATS[fmt], speed=speed)
        except VendorError as exc:
            raise vendor_failure(exc, access, "text to speech") from None
    return audio, fmt


async def _elevenlabs(ctx: RoutedContext, access: Access, text: str, voice: str) -> tuple[bytes, str]:
    model_id = ctx.get_str("tts.elevenlabs.model_id", DEFAULT_MODEL_ID) or DEFAULT_MODEL_ID
    async with http_client() as http:
        client = ElevenLabsClient(http, access.origin, elevenlabs_auth(access.secret), allow_url=access.allow_url)
        try:
            audio = await client.speech(text=text, voice_id=voice, model_id=model_id)
        except VendorError as exc:
            raise vendor_failure(exc, access, "text to speech") from None
    return audio, "mp3"


async def _piper(args: dict[str, Any], ctx: RoutedContext, text: str) -> tuple[bytes, str]:
    """Piper (``tts.piper.*``): the voice file, an optional speaker id and length scale; returns (WAV, voice)."""
    name = args.get("voice")
    if name is not None and (not isinstance(name, str) or not _VOICE.match(name)):
        raise ToolError("'voice' must be a voice name such as 'en_US-joe-medium' (a Piper voice installed next to "
                        "tts.piper.voice)")
    model = resolve_voice(ctx.get_str(f"{PIPER_KEY}.voice"), name)
    speaker_value = ctx.get(f"{PIPER_KEY}.speaker")
    speaker: int | None = None
    if speaker_value is not None:
        if isinstance(speaker_value, bool) or not isinstance(speaker_value, int | str) \
                or not str(speaker_value).strip().isdigit():
            raise ToolError(f"{PIPER_KEY}.speaker in config.yaml must be a speaker number (0, 1, ...)")
        speaker = int(str(speaker_value).strip())
    length_scale: float | None = None
    if ctx.get(f"{PIPER_KEY}.length_scale") is not None:
        length_scale = ctx.get_number(f"{PIPER_KEY}.length_scale", 1.0, low=0.1, high=5.0)
    audio = await piper_speak(text, model=model, speaker=speaker, length_scale=length_scale)
    return audio, model.stem


async def speak(args: dict[str, Any], ctx: RoutedContext) -> dict[str, Any]:
    """Run one ``text_to_speech`` call; returns the result object."""
    text = text_arg(args, "text", "the non-empty text to speak") or ""
    if len(text) > MAX_TEXT:
        raise ToolError(f"'text' is longer than {MAX_TEXT} characters; split it into several calls")
    requested = args.get("format") or "auto"
    if requested not in FORMATS:
        raise ToolError(f"'format' must be one of {', '.join(FORMATS)}")
    from hermes.tools.toolsets import Surface

    messaging = ctx.surface == Surface.MESSAGING
    target = wanted_format(str(requested), messaging)
    route = ctx.route("tts")
    if route.kind == "local" and route.vendor == "piper":
        audio, voice = await _piper(args, ctx, text)
        native = "wav"
        provider, via = "piper", "local Piper"
    elif route.kind == "local":
        voice = _voice(args, ctx, "tts.espeak.voice", DEFAULT_ESPEAK_VOICE)
        wpm = int(ctx.get_number("tts.espeak.speed", 175, low=80, high=450))
        audio, native = await espeak(text, voice=voice, words_per_minute=wpm), "wav"
        provider, via = "espeak", "local espeak-ng"
    else:
        access = ctx.access(route)
        provider, via = route.vendor or "", access.via
        if access.gateway or route.vendor == "openai":
            voice = _voice(args, ctx, "tts.openai.voice", DEFAULT_OPENAI_VOICE)
            audio, native = await _openai(ctx, access, text, voice, target)
        else:
            voice = _voice(args, ctx, "tts.elevenlabs.voice_id", DEFAULT_VOICE_ID)
            audio, native = await _elevenlabs(ctx, access, text, voice)
    return await _finish(ctx, audio, native, target, provider=provider, via=via, route=route.kind, voice=voice,
                         messaging=messaging)


async def _finish(ctx: RoutedContext, audio: bytes, native: str, target: str | None, *, provider: str, via: str,
                  route: str, voice: str, messaging: bool) -> dict[str, Any]:
    sniffed = sniff_audio(audio)
    kind: MediaType = sniffed or _TYPES.get(native, MP3)
    note: str | None = None
    if target is not None and kind.name != target:
        converted = await convert(audio, source_ext=kind.ext, target=target)
        if converted.data is not None:
            audio, kind = converted.data, _TYPES[target]
        else:
            note = (f"the audio is {kind.name.upper()} instead of {target.upper()}"
                    f"{' (Ogg/Opus voice note)' if target == 'ogg' else ''} because {converted.reason}")
    path = save_media(ctx.home, audio, prefix="speech", ext=kind.ext)
    result: dict[str, Any] = {
        "success": True, "path": str(path), "format": kind.name, "mime": kind.mime, "bytes": len(audio),
        "provider": provider, "route": route, "via": via, "voice": voice,
        "voice_note": kind.name == "ogg", "media": f"MEDIA:{path}",
    }
    if kind.name == "wav":
        result["duration_s"] = wav_seconds(audio)
    if note is not None:
        result["note"] = note
    elif messaging and kind.name == "ogg":
        result["note"] = "saved as an Ogg/Opus voice note for this chat"
    return result


def speak_file(text: str, settings: Settings) -> Path:
    """Synchronous speech for surfaces (a spoken reply in a chat): the audio file of ``text`` through the
    configured ``tts.provider``, in the messaging format (an Ogg/Opus voice note where it can be made)."""
    from hermes.tools.asyncbridge import run_sync
    from hermes.tools.toolsets import Surface

    result = run_sync(speak({"text": text[:MAX_TEXT]}, RoutedContext(settings, Surface.MESSAGING)))
    return Path(str(result["path"]))
