"""The ``openai-audio`` relay: OpenAI's ``/v1/audio/speech`` and ``/v1/audio/transcriptions``.

The upstream client (openai SDK, ``base_url = origin + "/v1"``, ``Authorization: Bearer <gateway token>``)
sends::

    POST /v1/audio/speech {"model", "voice", "input", "response_format", ["speed"]} → raw audio bytes
    POST /v1/audio/transcriptions (multipart: model, response_format, file)
         → plain text (response_format=text) or {"text": …}

Backend (``[relays.openai-audio]``): ``vendor`` forwards to an OpenAI-compatible server at ``url`` with the
operator's ``api_key`` (the user's token stops here); ``local`` speaks with espeak-ng on the gateway host
(``local_voice``, ``local_wpm`` × ``speed``; OpenAI's voice names and ``instructions`` do not apply) and
encodes the requested format with ffmpeg — it does not transcribe (503); ``off`` answers 503
``backend_not_configured``. Only documented fields are forwarded (an allow-list).

Metering: speech is metered in **characters of ``input``**; a transcription is **1 unit per file**
(the gateway does not decode audio to measure its length).
"""

from __future__ import annotations

import email.parser
import email.policy
import json
from collections.abc import Sequence
from typing import Any

import httpx
from starlette.datastructures import Headers

from hermes.toolgateway.errors import GatewayHTTPError, json_object
from hermes.toolgateway.relays.base import Operation, Relay, RelayCall, RelayResult
from hermes.toolgateway.relays.vendor import operator_headers, raise_for_vendor, vendor_request

SPEECH_FIELDS = frozenset({"model", "input", "voice", "response_format", "speed", "instructions", "stream_format"})
TRANSCRIBE_FIELDS = frozenset({"model", "response_format", "language", "prompt", "temperature"})
SPEECH_FORMATS = frozenset({"mp3", "opus", "aac", "flac", "wav", "pcm"})
MAX_INPUT = 4096
PASS_HEADERS = ("content-type",)
#: what OpenAI's API answers for each ``response_format`` (the local engine answers the same)
FORMAT_TYPES = {"mp3": "audio/mpeg", "opus": "audio/ogg", "aac": "audio/aac", "flac": "audio/flac",
                "wav": "audio/wav", "pcm": "audio/pcm"}

Part = tuple[str | None, bytes, str]


def _speech_body(body: bytes) -> dict[str, Any]:
    data = json_object(body)
    text = data.get("input")
    if not isinstance(text, str) or not text.strip():
        raise GatewayHTTPError(400, "invalid_request", "'input' must be a non-empty string")
    if len(text) > MAX_INPUT:
        raise GatewayHTTPError(400, "invalid_request", f"'input' is longer than {MAX_INPUT} characters")
    for key in ("model", "voice"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise GatewayHTTPError(400, "invalid_request", f"'{key}' must be a non-empty string")
    fmt = data.get("response_format", "mp3")
    if fmt not in SPEECH_FORMATS:
        raise GatewayHTTPError(400, "invalid_request",
                               f"'response_format' must be one of {', '.join(sorted(SPEECH_FORMATS))}")
    return data


def speech_units(body: bytes, headers: Headers) -> int:
    """Characters of the speech ``input``."""
    return len(_speech_body(body)["input"])


def parse_multipart(content_type: str, body: bytes) -> dict[str, Part]:
    """``{name: (filename or None, bytes, content type)}`` of a ``multipart/form-data`` body (or 400)."""
    if not content_type.lower().startswith("multipart/form-data") or "boundary=" not in content_type:
        raise GatewayHTTPError(400, "invalid_request", "send the audio as multipart/form-data")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1", "replace")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise GatewayHTTPError(400, "invalid_request", "the multipart body could not be read")
    parts: dict[str, Part] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        payload = part.get_payload(decode=True)
        parts[name] = (part.get_filename(), payload if isinstance(payload, bytes) else b"",
                       part.get_content_type())
    return parts


def _transcription_parts(body: bytes, headers: Headers) -> dict[str, Part]:
    parts = parse_multipart(headers.get("content-type", ""), body)
    upload = parts.get("file")
    if upload is None or not upload[1]:
        raise GatewayHTTPError(400, "invalid_request", "'file' must be a non-empty audio file")
    model = parts.get("model")
    if model is None or not model[1].strip():
        raise GatewayHTTPError(400, "invalid_request", "'model' is required")
    return parts


def transcription_units(body: bytes, headers: Headers) -> int:
    """One unit per transcribed file."""
    _transcription_parts(body, headers)
    return 1


class OpenAIAudioRelay(Relay):
    """Text to speech and speech to text in OpenAI's audio API shape."""

    label = "openai-audio"
    category = "openai-audio"

    def operations(self) -> Sequence[Operation]:
        return (Operation("POST", "/v1/audio/speech", "speech", self.speech, measure=speech_units),
                Operation("POST", "/v1/audio/transcriptions", "transcription", self.transcribe,
                          measure=transcription_units))

    def backend(self, operation: str) -> str:
        kind = self.gateway.config.openai_audio.backend
        if kind == "local":
            return "espeak" if operation == "speech" else "off"
        return "openai" if kind == "vendor" else "off"

    def max_request_bytes(self) -> int:
        return self.gateway.config.openai_audio.max_request_bytes or super().max_request_bytes()

    def _require_backend(self) -> None:
        if self.gateway.config.openai_audio.backend != "vendor":
            raise GatewayHTTPError(503, "backend_not_configured",
                                   "this gateway has no speech backend (set relays.openai-audio.url / api_key)")

    async def _forward(self, call: RelayCall, path: str, *, content: bytes, content_type: str,
                       accept: str) -> RelayResult:
        cfg = self.gateway.config.openai_audio
        headers = operator_headers(cfg.api_key, "Bearer", call.headers, **{"content-type": content_type,
                                                                            "accept": accept})
        resp = await vendor_request(self.gateway.vendor_client, "POST", cfg.url + path, vendor="openai",
                                    limits=self.gateway.config.limits, deadline=call.deadline, content=content,
                                    headers=headers)
        raise_for_vendor(resp, "openai", (cfg.api_key,))
        return RelayResult(resp.status, resp.body,
                           content_type=resp.headers.get("content-type", "application/octet-stream"))

    async def _local_speech(self, data: dict[str, Any]) -> RelayResult:
        from hermes.errors import LocalProgramError
        from hermes.media.speech import convert, espeak

        cfg = self.gateway.config.openai_audio
        speed = data.get("speed", 1.0)
        if isinstance(speed, bool) or not isinstance(speed, int | float) or not 0.25 <= speed <= 4.0:
            raise GatewayHTTPError(400, "invalid_request", "'speed' must be a number from 0.25 to 4")
        fmt = str(data.get("response_format", "mp3"))
        try:
            audio = await espeak(data["input"], voice=cfg.local_voice,
                                 words_per_minute=max(80, min(450, round(cfg.local_wpm * speed))))
            if fmt != "wav":
                converted = await convert(audio, source_ext="wav", target=fmt)
                if converted.data is None:
                    raise GatewayHTTPError(503, "backend_not_configured",
                                           f"this gateway cannot encode {fmt} ({converted.reason}); ask for wav")
                audio = converted.data
        except LocalProgramError as exc:
            raise GatewayHTTPError(503, "backend_not_configured", f"the local speech engine failed: {exc}") from None
        return RelayResult(200, audio, content_type=FORMAT_TYPES[fmt])

    async def speech(self, call: RelayCall) -> RelayResult:
        if self.gateway.config.openai_audio.backend == "local":
            return await self._local_speech(_speech_body(call.body))
        self._require_backend()
        data = _speech_body(call.body)
        forwarded = {k: v for k, v in data.items() if k in SPEECH_FIELDS}
        content = json.dumps(forwarded, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return await self._forward(call, "/v1/audio/speech", content=content, content_type="application/json",
                                   accept="application/octet-stream")

    async def transcribe(self, call: RelayCall) -> RelayResult:
        if self.gateway.config.openai_audio.backend == "local":
            raise GatewayHTTPError(503, "backend_not_configured",
                                   "this gateway's speech backend is the local espeak-ng engine: it speaks but "
                                   "does not transcribe (set relays.openai-audio.backend = \"vendor\")")
        self._require_backend()
        parts = _transcription_parts(call.body, call.headers)
        fields = {name: part[1].decode("utf-8", "replace") for name, part in parts.items()
                  if name in TRANSCRIBE_FIELDS}
        filename, audio, mime = parts["file"]
        request = httpx.Request("POST", "http://multipart.invalid/", data=fields,
                                files={"file": (filename or "audio", audio, mime or "application/octet-stream")})
        content = request.read()
        return await self._forward(call, "/v1/audio/transcriptions", content=content,
                                   content_type=request.headers["content-type"], accept="application/json, text/plain")
