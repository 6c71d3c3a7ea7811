"""The OpenAI audio protocol (``api.openai.com``, or the ``openai-audio`` relay of the Tool Gateway).

* **speech** ``POST {origin}/v1/audio/speech`` with ``x-idempotency-key`` and
  ``Accept: application/octet-stream``; JSON ``{"model", "voice", "input", "response_format"}`` plus
  ``speed`` only when it is not 1.0 (and ``instructions`` when given). The answer is raw audio bytes;
  ``response_format`` is ``mp3``, ``opus`` (Ogg Opus), ``wav``, ``flac``, ``aac`` or ``pcm``;
* **transcriptions** ``POST {origin}/v1/audio/transcriptions`` (multipart: ``model``, ``response_format``,
  ``file``, optional ``language``). ``whisper-1`` is asked for ``text`` and answers a plain-text body;
  other models are asked for ``json`` and answer ``{"text": ...}``. No retries, 30 s by default (as the
  upstream client).

Authentication is ``Authorization: Bearer <key or portal token>``.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from hermes.vendors.base import NO_RETRY, Auth, JsonApiClient, RetryPolicy, UrlGuard, VendorError, idempotency_key

VENDOR = "OpenAI audio"
SPEECH_FORMATS = frozenset({"mp3", "opus", "wav", "flac", "aac", "pcm"})
SPEECH_RETRY = RetryPolicy(attempts=3, base_delay=0.5, max_delay=8.0, statuses=frozenset({429, 500, 502, 503, 504}))
PLAIN_TEXT_MODELS = frozenset({"whisper-1"})


@dataclass(frozen=True)
class Transcript:
    """What a transcription returned."""

    text: str
    model: str


class OpenAIAudioClient(JsonApiClient):
    """Text to speech and speech to text at ``origin`` with ``auth`` (``Auth.bearer(token)``).

    ``retry``, ``timeout`` and ``max_bytes`` are those of speech; transcriptions are not retried and have
    their own time-out and a 4 MiB cap.
    """

    vendor = VENDOR
    default_retry = SPEECH_RETRY
    default_timeout = 120.0
    default_max_bytes = 64 * 1024 * 1024
    strip_v1 = True

    def __init__(
        self, http: httpx.AsyncClient, origin: str, auth: Auth, *, allow_url: UrlGuard | None = None,
        speech_retry: RetryPolicy = SPEECH_RETRY, speech_timeout: float = 120.0,
        transcribe_timeout: float = 30.0, max_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        super().__init__(http, origin, auth, allow_url=allow_url, retry=speech_retry, timeout=speech_timeout,
                         max_bytes=max_bytes)
        self.transcribe_timeout = transcribe_timeout

    async def speech(self, *, model: str, voice: str, text: str, response_format: str = "mp3",
                     speed: float | None = None, instructions: str | None = None) -> bytes:
        """Audio bytes of ``text`` spoken by ``voice``."""
        if response_format not in SPEECH_FORMATS:
            raise ValueError(f"unsupported speech format {response_format!r}")
        body: dict[str, object] = {"model": model, "voice": voice, "input": text, "response_format": response_format}
        if speed is not None and speed != 1.0:
            body["speed"] = speed
        if instructions:
            body["instructions"] = instructions
        response = await self._send("POST", self._url("v1/audio/speech"), accept="application/octet-stream",
                                    headers={"x-idempotency-key": idempotency_key()}, json_body=body)
        response.raise_for_status()
        if not response.body:
            raise VendorError(VENDOR, f"{VENDOR} answered with no audio", kind="bad_response")
        if response.content_type == "application/json":
            raise VendorError(VENDOR, f"{VENDOR} answered with JSON instead of audio", kind="bad_response")
        return response.body

    async def transcribe(self, audio: bytes, *, filename: str, mime: str, model: str = "whisper-1",
                         language: str | None = None) -> Transcript:
        """The text spoken in ``audio``."""
        plain = model in PLAIN_TEXT_MODELS
        data = {"model": model, "response_format": "text" if plain else "json"}
        if language:
            data["language"] = language
        response = await self._send("POST", self._url("v1/audio/transcriptions"), accept=None, data=data,
                                    files={"file": (filename, audio, mime)}, retry=NO_RETRY,
                                    timeout=self.transcribe_timeout, max_bytes=4 * 1024 * 1024)
        response.raise_for_status()
        if plain and response.content_type != "application/json":
            return Transcript(response.body.decode("utf-8", errors="replace").strip(), model)
        body = response.json_object()
        text = body.get("text")
        if not isinstance(text, str):
            raise VendorError(VENDOR, f"{VENDOR} transcription answer has no text", kind="bad_response")
        return Transcript(text.strip(), model)
