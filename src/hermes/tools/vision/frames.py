"""Sampling still frames from a video with the ``ffmpeg`` program (Debian package ``ffmpeg``).

The duration comes from ``ffprobe`` (shipped with ffmpeg), or from ffmpeg's own banner when ffprobe is
missing; ``count`` frames are then taken at evenly spaced times (the middle of each slice), each as a
JPEG at most 768 pixels wide. No Python dependency: when ffmpeg is absent, :func:`require_ffmpeg` says so.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from hermes.errors import ToolError
from hermes.media.programs import run_program

FRAME_WIDTH = 768
_TIMEOUT = 60.0
_DURATION = re.compile(rb"Duration:\s*(\d+):(\d+):(\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class Frame:
    """One sampled frame: its time in seconds and its JPEG bytes."""

    time: float
    jpeg: bytes


def require_ffmpeg(tool: str = "video_analyze") -> str:
    """The ffmpeg program, or a ToolError explaining how to install it."""
    found = shutil.which("ffmpeg")
    if found is None:
        raise ToolError(f"{tool} samples video frames locally with ffmpeg, which is not installed "
                        "(Debian/Ubuntu: 'apt-get install ffmpeg'; macOS: 'brew install ffmpeg').")
    return found


async def probe_duration(path: Path, ffmpeg: str) -> float | None:
    """The video's duration in seconds, or None when it cannot be told."""
    ffprobe = shutil.which("ffprobe")
    if ffprobe is not None:
        status, out, _err = await run_program([ffprobe, "-v", "error", "-show_entries", "format=duration",
                                               "-of", "default=noprint_wrappers=1:nokey=1", str(path)],
                                              timeout=_TIMEOUT)
        try:
            value = float(out.decode("ascii", errors="replace").strip()) if status == 0 else None
        except ValueError:
            value = None
        if value is not None and value > 0:
            return value
    _status, _out, err = await run_program([ffmpeg, "-nostdin", "-hide_banner", "-i", str(path)], timeout=_TIMEOUT)
    match = _DURATION.search(err)
    if match is None:
        return None
    hours, minutes, seconds = int(match.group(1)), int(match.group(2)), float(match.group(3))
    total = hours * 3600 + minutes * 60 + seconds
    return total if total > 0 else None


def frame_times(duration: float | None, count: int) -> list[float]:
    """Evenly spaced sample times (slice middles); one per second from 0 when the duration is unknown."""
    if duration is None:
        return [float(i) for i in range(count)]
    return [round(duration * (i + 0.5) / count, 3) for i in range(count)]


async def sample_frames(path: Path, count: int) -> tuple[list[Frame], float | None]:
    """(frames, duration) of the video at ``path``; a ToolError when no frame could be read."""
    ffmpeg = require_ffmpeg()
    duration = await probe_duration(path, ffmpeg)
    frames: list[Frame] = []
    last_error = b""
    for moment in frame_times(duration, count):
        argv = [ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-ss", f"{moment:.3f}", "-i", str(path),
                "-frames:v", "1", "-vf", f"scale=w='min({FRAME_WIDTH},iw)':h=-2", "-q:v", "4",
                "-f", "image2pipe", "-c:v", "mjpeg", "pipe:1"]
        status, out, err = await run_program(argv, timeout=_TIMEOUT)
        if status == 0 and out.startswith(b"\xff\xd8"):
            frames.append(Frame(moment, out))
        else:
            last_error = err
    if not frames:
        detail = last_error.decode("utf-8", errors="replace").strip().splitlines()
        raise ToolError(f"ffmpeg could not read any frame of the video ({detail[-1][:200] if detail else 'no output'})")
    return frames, duration
