"""``text_to_speech`` (toolset ``tts``, in the core list). Light at import; the work is in :mod:`.tts`."""

from __future__ import annotations

import json
from typing import Any

from hermes.tools.registry import registry
from hermes.tools.routed.availability import route_check

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
    check_fn=route_check("tts"),
    requires_env=[],
    is_async=True,
)
