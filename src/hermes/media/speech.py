"""Local audio programs: the espeak-ng speech engine, and format conversion with ffmpeg (or sox).

Nothing here is a Python dependency: the programs are found on ``PATH`` when needed (``espeak-ng`` or
``espeak``, ``ffmpeg``, ``sox`` — Debian packages of the same names). Each runs as a subprocess with a
time limit, never through a shell; text goes to espeak on stdin, so no argument can be injected.

Conversion targets: ``ogg`` and ``opus`` (Opus in Ogg, for voice notes), ``mp3``, ``wav``, ``aac`` (ADTS),
``flac`` and ``pcm`` (raw 16-bit little-endian, 24 kHz mono, as OpenAI's API answers it). ffmpeg does
them all; sox is used for ``wav`` (and ``mp3`` where its MP3 format library is installed) only when
ffmpeg is absent — it cannot write Opus.

Used by the ``text_to_speech`` tool and by the gateway server's ``openai-audio`` relay (``local`` backend).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hermes.errors import LocalProgramError
from hermes.media.programs import last_line, run_program

ESPEAK_TIMEOUT = 60.0
CONVERT_TIMEOUT = 120.0
_FFMPEG_CODECS: dict[str, tuple[str, ...]] = {
    "ogg": ("-c:a", "libopus", "-b:a", "32k", "-ar", "48000", "-ac", "1", "-application", "voip"),
    "mp3": ("-c:a", "libmp3lame", "-q:a", "4"),
    "wav": ("-c:a", "pcm_s16le"),
    "opus": ("-c:a", "libopus", "-b:a", "32k", "-ar", "48000", "-ac", "1", "-f", "ogg"),
    "aac": ("-c:a", "aac", "-b:a", "64k", "-f", "adts"),
    "flac": ("-c:a", "flac"),
    "pcm": ("-f", "s16le", "-c:a", "pcm_s16le", "-ar", "24000", "-ac", "1"),
}
_SOX_TARGETS = frozenset({"wav", "mp3"})


def espeak_binary() -> str | None:
    """``espeak-ng`` (or the older ``espeak``) on PATH; None when neither is installed."""
    return shutil.which("espeak-ng") or shutil.which("espeak")


def converter_for(target: str) -> str | None:
    """The program that can produce ``target`` here: ``ffmpeg``, ``sox`` or None."""
    if target in _FFMPEG_CODECS and shutil.which("ffmpeg"):
        return "ffmpeg"
    if target in _SOX_TARGETS and shutil.which("sox"):
        return "sox"
    return None


async def espeak(text: str, *, voice: str, words_per_minute: int) -> bytes:
    """A WAV file of ``text`` spoken by espeak-ng (LocalProgramError when it is missing or fails)."""
    binary = espeak_binary()
    if binary is None:
        raise LocalProgramError("the local speech engine espeak-ng is not installed (Debian/Ubuntu: "
                        "'apt-get install espeak-ng'); or run 'hermes tools' to choose another text-to-speech backend")
    with tempfile.TemporaryDirectory(prefix="hermes-tts-") as folder:
        out = os.path.join(folder, "speech.wav")
        argv = [binary, "-v", voice, "-s", str(words_per_minute), "-w", out, "--stdin"]
        status, _stdout, err = await run_program(argv, stdin=text.encode("utf-8"), timeout=ESPEAK_TIMEOUT)
        data = Path(out).read_bytes() if os.path.exists(out) else b""
    if status != 0 or not data.startswith(b"RIFF"):
        raise LocalProgramError(f"espeak-ng failed (exit {status}): {last_line(err)}")
    return data


@dataclass(frozen=True)
class Conversion:
    """The outcome of :func:`convert`: new bytes, or None with the reason they are not there."""

    data: bytes | None
    reason: str | None = None


async def convert(data: bytes, *, source_ext: str, target: str) -> Conversion:
    """``data`` (a ``source_ext`` file) re-encoded as ``target``; ``data=None`` and a reason when impossible."""
    program = converter_for(target)
    if program is None:
        wanted = "ffmpeg" if target == "ogg" else "ffmpeg or sox"
        return Conversion(None, f"{wanted} is not installed ('apt-get install ffmpeg')")
    with tempfile.TemporaryDirectory(prefix="hermes-audio-") as folder:
        source = os.path.join(folder, f"in.{source_ext}")
        out = os.path.join(folder, f"out.{target}")
        Path(source).write_bytes(data)
        if program == "ffmpeg":
            argv = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-i", source,
                    *_FFMPEG_CODECS[target], out]
        else:
            argv = ["sox", source, out]
        status, _stdout, err = await run_program(argv, timeout=CONVERT_TIMEOUT)
        result = Path(out).read_bytes() if status == 0 and os.path.exists(out) else b""
    if not result:
        return Conversion(None, f"{program} could not convert the audio: {last_line(err)}")
    return Conversion(result)
