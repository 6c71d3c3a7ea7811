"""ElevenLabs text to speech (``api.elevenlabs.io``).

``POST {origin}/v1/text-to-speech/{voice_id}?output_format=mp3_44100_128`` with the header
``xi-api-key: <key>`` and JSON ``{"text", "model_id"}`` (plus optional ``voice_settings``); the answer is
the audio. ``output_format`` names codec, sample rate and bit rate (``mp3_44100_128``, ``pcm_16000``…).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from hermes.vendors.base import Auth, JsonApiClient, RetryPolicy, VendorError

VENDOR = "ElevenLabs"
KEY_HEADER = "xi-api-key"
DEFAULT_VOICE_ID = "21m00Tcm4TlvDq8ikWAM"
DEFAULT_MODEL_ID = "eleven_multilingual_v2"
DEFAULT_OUTPUT_FORMAT = "mp3_44100_128"
ELEVENLABS_RETRY = RetryPolicy(attempts=3, base_delay=0.5, max_delay=8.0, statuses=frozenset({429, 500, 502, 503}))
_VOICE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_FORMAT = re.compile(r"^[a-z0-9]+_[0-9]+(?:_[0-9]+)?$")


def elevenlabs_auth(key: str) -> Auth:
    """The ``xi-api-key`` header."""
    return Auth.api_key_header(KEY_HEADER, key)


class ElevenLabsClient(JsonApiClient):
    """Speech synthesis at ``origin`` with ``auth`` (:func:`elevenlabs_auth`)."""

    vendor = VENDOR
    default_retry = ELEVENLABS_RETRY
    default_timeout = 120.0
    default_max_bytes = 64 * 1024 * 1024

    async def speech(self, *, text: str, voice_id: str = DEFAULT_VOICE_ID, model_id: str = DEFAULT_MODEL_ID,
                     output_format: str = DEFAULT_OUTPUT_FORMAT,
                     voice_settings: Mapping[str, Any] | None = None) -> bytes:
        """Audio bytes of ``text``."""
        if not _VOICE_ID.match(voice_id):
            raise ValueError(f"not an ElevenLabs voice id: {voice_id!r}")
        if not _FORMAT.match(output_format):
            raise ValueError(f"not an ElevenLabs output format: {output_format!r}")
        body: dict[str, Any] = {"text": text, "model_id": model_id}
        if voice_settings:
            body["voice_settings"] = dict(voice_settings)
        response = await self._send("POST", self._url(f"v1/text-to-speech/{voice_id}"), accept="audio/mpeg",
                                    params={"output_format": output_format}, json_body=body)
        response.raise_for_status()
        if not response.body or response.content_type == "application/json":
            raise VendorError(VENDOR, f"{VENDOR} answered without audio", kind="bad_response")
        return response.body
