"""``text_to_speech`` (toolset ``tts``, in the core list). Light at import; the work is in :mod:`.tts`."""

from __future__ import annotations

import json
from typing import Any

from hermes.tools.registry import registry

TEXT_TO_SPEECH_SCHEMA: dict[str, Any] = {
    "name": "text_to_speech",
    "description": (
        "Turn text into spoken audio with the user's configured speech engine. The audio file is saved under "
        "~/.hermes/media/ and its 'path' returned; on chat platforms it is an Ogg/Opus voice note "
        "(send it as MEDIA:<path>)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "The text to speak."},
            "voice": {"type": "string", "minLength": 1, "maxLength": 64,
                      "description": "Optional voice: an OpenAI voice (alloy, nova, ...), an ElevenLabs voice id or "
                                     "an espeak-ng voice (en, en-us, de, ...) or a Piper voice "
                                     "(en_US-joe-medium); default: the configured voice."},
            "format": {"type": "string", "enum": ["auto", "mp3", "ogg", "wav"], "default": "auto",
                       "description": "File format; auto picks a voice note on chat platforms, else the engine's "
                                      "own format (MP3, or WAV for the local engine)."},
        },
        "required": ["text"],
        "additionalProperties": False,
    },
}


def text_to_speech_available() -> bool:
    """Offline: the local espeak engine needs espeak-ng on PATH; other routes, Piper included, are shown (the call
    explains problems)."""
    from hermes.errors import HermesError

    try:
        from hermes.config.settings import Settings
        from hermes.routing import load_credentials, resolve_route

        settings = Settings.load()
        env = settings.env.as_dict()
        route = resolve_route("tts", settings.config.data, env, load_credentials(settings.paths.auth, env))
    except HermesError:
        return True
    if route.kind == "local" and route.vendor == "piper":
        return True  # only ever a saved selection: it stays visible so the call can say what is missing
    if route.kind == "local":
        import shutil

        return bool(shutil.which("espeak-ng") or shutil.which("espeak"))
    return route.kind != "none"


async def text_to_speech(args: dict[str, Any], **kw: Any) -> str:
    """Handler: see :func:`hermes.tools.audio.tts.speak`."""
    from hermes.tools.audio.tts import speak
    from hermes.tools.routed.context import RoutedContext

    return json.dumps(await speak(args, RoutedContext.from_kw(kw)), ensure_ascii=False)


registry.register(
    name="text_to_speech",
    toolset="tts",
    schema=TEXT_TO_SPEECH_SCHEMA,
    handler=text_to_speech,
    check_fn=text_to_speech_available,
    requires_env=[],
    is_async=True,
)
