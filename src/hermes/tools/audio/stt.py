"""Speech to text for surfaces (voice messages): ``stt.provider`` is ``nous`` or ``openai``.

The seeds' tool list has no transcription tool, so this is a library function, not a registered tool::

    from hermes.tools.audio.stt import transcribe_file
    text = transcribe_file("/tmp/voice.ogg", settings).text

Both routes speak the OpenAI transcriptions protocol (the gateway's ``openai-audio`` relay or the vendor
with ``VOICE_TOOLS_OPENAI_KEY``/``OPENAI_API_KEY``); the model is ``stt.openai.model`` (default
``whisper-1``). The ``local`` route (faster-whisper) is not part of this installation and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.errors import ToolError
from hermes.tools.routed.context import RoutedContext, http_client, vendor_failure
from hermes.tools.routed.media import sniff_audio
from hermes.vendors.base import Auth, VendorError
from hermes.vendors.openai_audio import OpenAIAudioClient

if TYPE_CHECKING:
    from hermes.config.settings import Settings

DEFAULT_MODEL = "whisper-1"
MAX_AUDIO_BYTES = 25 * 1024 * 1024


@dataclass(frozen=True)
class SpeechText:
    """A transcription and where it came from."""

    text: str
    provider: str
    model: str
    route: str


async def transcribe(path: str | Path, ctx: RoutedContext, *, language: str | None = None) -> SpeechText:
    """The words spoken in the audio file at ``path`` (ToolError, SelectionError or GatewayError on failure)."""
    route = ctx.route("stt")
    if route.kind == "local":
        raise ToolError("speech to text is set to the local engine (faster-whisper), which this installation does "
                        "not include. Run 'hermes tools' to choose openai (your key) or nous (the Tool Gateway).")
    file = Path(path)
    try:
        size = file.stat().st_size
        if size > MAX_AUDIO_BYTES:
            raise ToolError(f"{file.name} is larger than the transcription limit of 25 MB")
        audio = file.read_bytes()
    except OSError as exc:
        raise ToolError(f"cannot read {file}: {exc.strerror or exc}") from None
    kind = sniff_audio(audio)
    model = ctx.get_str("stt.openai.model", DEFAULT_MODEL) or DEFAULT_MODEL
    access = ctx.access(route)
    async with http_client() as http:
        client = OpenAIAudioClient(http, access.origin, Auth.bearer(access.secret), allow_url=access.allow_url)
        try:
            result = await client.transcribe(audio, filename=file.name or f"audio.{kind.ext if kind else 'bin'}",
                                             mime=kind.mime if kind else "application/octet-stream",
                                             model=model, language=language)
        except VendorError as exc:
            raise vendor_failure(exc, access, "speech to text") from None
    return SpeechText(result.text, route.vendor or "", result.model, route.kind)


def transcribe_file(path: str | Path, settings: Settings | None = None, *, language: str | None = None) -> SpeechText:
    """Synchronous :func:`transcribe` for surfaces (runs on the registry's event loop bridge)."""
    from hermes.tools.asyncbridge import run_sync

    if settings is None:
        from hermes.config.settings import Settings as SettingsClass

        settings = SettingsClass.load()
    ctx = RoutedContext(settings)
    return run_sync(transcribe(path, ctx, language=language))
