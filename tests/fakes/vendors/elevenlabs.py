"""An ElevenLabs text-to-speech fake (``api.elevenlabs.io``).

``FakeElevenLabs(key="el-test")`` checks ``xi-api-key: el-test``; ``POST /v1/text-to-speech/{voice_id}``
(``?output_format=mp3_44100_128``) answers MP3-looking bytes. ``requests`` logs every call.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fakes.vendors.fal import Recorder
from fakes.vendors.openai_audio import FAKE_AUDIO


class FakeElevenLabs(Recorder):
    def __init__(self, key: str = "el-test") -> None:
        super().__init__()
        self.key = key
        self.app = Starlette(routes=[Route("/v1/text-to-speech/{voice_id}", self._speech, methods=["POST"])])

    async def _speech(self, request: Request) -> Response:
        entry, _ = await self.record(request)
        if request.headers.get("xi-api-key") != self.key:
            return JSONResponse({"detail": {"status": "invalid_api_key", "message": "Invalid API key"}}, 401)
        status = self.take_failure()
        if status is not None:
            return JSONResponse({"detail": {"message": f"scripted failure {status}"}}, status, {"retry-after": "0"})
        if not (entry["json"] or {}).get("text"):
            return JSONResponse({"detail": {"message": "text is required"}}, 422)
        return Response(FAKE_AUDIO["mp3"], media_type="audio/mpeg")
