"""An OpenAI audio fake (``api.openai.com`` or the gateway's ``openai-audio`` relay), and a multipart reader.

``FakeOpenAIAudio(key="sk-test")`` checks ``Authorization: Bearer sk-test``:

* ``POST /v1/audio/speech`` → bytes that start like the asked ``response_format`` (``mp3``: an ID3 tag and
  an MPEG frame header, ``opus``: ``OggS``, ``wav``: a real RIFF/WAVE file of silence, ``flac``: ``fLaC``);
* ``POST /v1/audio/transcriptions`` (multipart) → ``transcript`` as plain text when ``response_format`` is
  ``text``, else ``{"text": transcript}``.

:func:`parse_multipart` reads ``multipart/form-data`` with the standard library (Starlette needs
python-multipart for that, which is not a dependency).
"""

from __future__ import annotations

import email.parser
import email.policy
import io
import wave
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from fakes.vendors.fal import Recorder

Part = tuple[str | None, bytes, str]


def parse_multipart(content_type: str, body: bytes) -> dict[str, Part]:
    """``{name: (filename or None, bytes, content type)}`` of a multipart/form-data body."""
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    parts: dict[str, Part] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        payload = part.get_payload(decode=True)
        parts[name] = (part.get_filename(), payload if isinstance(payload, bytes) else b"",
                       part.get_content_type())
    return parts


def silent_wav(seconds: float = 0.25, rate: int = 8000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\x00\x00" * int(seconds * rate))
    return buffer.getvalue()


FAKE_AUDIO: dict[str, bytes] = {
    "mp3": b"ID3\x03\x00\x00\x00\x00\x00\x00" + b"\xff\xfb\x90\x64" + b"\x00" * 400,
    "opus": b"OggS\x00\x02" + b"\x00" * 20 + b"OpusHead" + b"\x00" * 200,
    "wav": silent_wav(),
    "flac": b"fLaC" + b"\x00" * 100,
}
MEDIA_TYPES = {"mp3": "audio/mpeg", "opus": "audio/ogg", "wav": "audio/wav", "flac": "audio/flac"}


class FakeOpenAIAudio(Recorder):
    def __init__(self, key: str = "sk-test", transcript: str = "hello from the fake") -> None:
        super().__init__()
        self.key = key
        self.transcript = transcript
        self.uploads: list[dict[str, Part]] = []
        self.app = Starlette(routes=[Route("/v1/audio/speech", self._speech, methods=["POST"]),
                                     Route("/v1/audio/transcriptions", self._transcribe, methods=["POST"])])

    def _refuse(self, request: Request) -> Response | None:
        if request.headers.get("authorization") != f"Bearer {self.key}":
            return JSONResponse({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}},
                                401)
        status = self.take_failure()
        if status is not None:
            return JSONResponse({"error": {"message": f"scripted failure {status}"}}, status, {"retry-after": "0"})
        return None

    async def _speech(self, request: Request) -> Response:
        entry, _ = await self.record(request)
        refused = self._refuse(request)
        if refused is not None:
            return refused
        body: dict[str, Any] = entry["json"] or {}
        fmt = str(body.get("response_format", "mp3"))
        if fmt not in FAKE_AUDIO or not body.get("input") or not body.get("voice"):
            return JSONResponse({"error": {"message": "bad request"}}, 400)
        return Response(FAKE_AUDIO[fmt], media_type=MEDIA_TYPES[fmt])

    async def _transcribe(self, request: Request) -> Response:
        entry, raw = await self.record(request)
        refused = self._refuse(request)
        if refused is not None:
            return refused
        parts = parse_multipart(request.headers.get("content-type", ""), raw)
        entry["form"] = {k: v[1].decode("utf-8", "replace") for k, v in parts.items() if k != "file"}
        self.uploads.append(parts)
        if "file" not in parts or not parts["file"][1]:
            return JSONResponse({"error": {"message": "file is required"}}, 400)
        if entry["form"].get("response_format") == "text":
            return PlainTextResponse(self.transcript + "\n")
        return JSONResponse({"text": self.transcript})
