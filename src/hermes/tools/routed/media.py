"""Media files: recognising them by their first bytes, and saving results under ``HERMES_HOME/media/``.

Shared by the media tool families (image, audio, vision, and video to come). Types are decided from magic
bytes, never from a file name or a server's ``Content-Type``: Pillow is not a dependency, and a header can lie.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from hermes.config.atomic import atomic_write


@dataclass(frozen=True)
class MediaType:
    """A recognised format: its short name, file extension and MIME type."""

    name: str
    ext: str
    mime: str


PNG = MediaType("png", "png", "image/png")
JPEG = MediaType("jpeg", "jpg", "image/jpeg")
GIF = MediaType("gif", "gif", "image/gif")
WEBP = MediaType("webp", "webp", "image/webp")
BMP = MediaType("bmp", "bmp", "image/bmp")
WAV = MediaType("wav", "wav", "audio/wav")
OGG = MediaType("ogg", "ogg", "audio/ogg")
MP3 = MediaType("mp3", "mp3", "audio/mpeg")
FLAC = MediaType("flac", "flac", "audio/flac")
MP4 = MediaType("mp4", "mp4", "video/mp4")
MOV = MediaType("mov", "mov", "video/quicktime")
WEBM = MediaType("webm", "webm", "video/webm")
AVI = MediaType("avi", "avi", "video/x-msvideo")
MPEG = MediaType("mpeg", "mpg", "video/mpeg")

#: image formats that OpenAI-compatible vision models accept
VISION_IMAGE_TYPES = frozenset({"png", "jpeg", "gif", "webp"})


def sniff_image(data: bytes) -> MediaType | None:
    """PNG, JPEG, GIF, WebP or BMP by magic bytes; None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if data.startswith(b"\xff\xd8\xff"):
        return JPEG
    if data.startswith((b"GIF87a", b"GIF89a")):
        return GIF
    if len(data) >= 12 and data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return WEBP
    if len(data) >= 26 and data.startswith(b"BM") and data[6:10] == b"\x00\x00\x00\x00":
        return BMP
    return None


def sniff_audio(data: bytes) -> MediaType | None:
    """WAV, Ogg, MP3 or FLAC by magic bytes; None for anything else."""
    if len(data) >= 12 and data.startswith(b"RIFF") and data[8:12] == b"WAVE":
        return WAV
    if data.startswith(b"OggS"):
        return OGG
    if data.startswith(b"fLaC"):
        return FLAC
    if data.startswith(b"ID3") or (len(data) >= 2 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0):
        return MP3
    return None


def sniff_video(data: bytes) -> MediaType | None:
    """MP4, QuickTime, WebM/Matroska, AVI or MPEG by magic bytes; None for anything else."""
    if len(data) >= 12 and data[4:8] == b"ftyp":
        return MOV if data[8:10] == b"qt" else MP4
    if data.startswith(b"\x1a\x45\xdf\xa3"):
        return WEBM
    if len(data) >= 12 and data.startswith(b"RIFF") and data[8:12] == b"AVI ":
        return AVI
    if data.startswith((b"\x00\x00\x01\xba", b"\x00\x00\x01\xb3")):
        return MPEG
    return None


def _boxes(data: bytes, start: int, end: int) -> list[tuple[bytes, int, int]]:
    """(type, body start, body end) of the ISO-BMFF boxes between ``start`` and ``end``."""
    found: list[tuple[bytes, int, int]] = []
    at = start
    while at + 8 <= end:
        size = int.from_bytes(data[at:at + 4], "big")
        kind = data[at + 4:at + 8]
        head = 8
        if size == 1 and at + 16 <= end:
            size, head = int.from_bytes(data[at + 8:at + 16], "big"), 16
        elif size == 0:
            size = end - at
        if size < head or at + size > end:
            break
        found.append((kind, at + head, at + size))
        at += size
    return found


def mp4_duration(data: bytes) -> float | None:
    """The length in seconds of an MP4/QuickTime file (its ``moov/mvhd`` box), or None when unreadable."""
    for kind, body, end in _boxes(data, 0, len(data)):
        if kind != b"moov":
            continue
        for inner, start, stop in _boxes(data, body, end):
            if inner != b"mvhd" or stop - start < 20:
                continue
            version = data[start]
            if version == 1 and stop - start >= 32:
                scale = int.from_bytes(data[start + 20:start + 24], "big")
                length = int.from_bytes(data[start + 24:start + 32], "big")
            else:
                scale = int.from_bytes(data[start + 12:start + 16], "big")
                length = int.from_bytes(data[start + 16:start + 20], "big")
            return length / scale if scale else None
    return None


def media_dir(home: Path) -> Path:
    """``HERMES_HOME/media`` (not created)."""
    return home / "media"


def save_media(home: Path, data: bytes, *, prefix: str, ext: str, folder: str | None = None) -> Path:
    """Write ``data`` to a new file ``HERMES_HOME/media/[<folder>/]<prefix>-<time>-<random>.<ext>`` and return
    its path (``folder``: one path segment, such as a session's id)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    where = media_dir(home)
    if folder:
        if "/" in folder or "\\" in folder or folder in (".", ".."):
            raise ValueError(f"not a folder name: {folder!r}")
        where = where / folder
    path = where / f"{prefix}-{stamp}-{secrets.token_hex(4)}.{ext}"
    atomic_write(path, data, mode=0o600)
    return path
