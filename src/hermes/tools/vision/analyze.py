"""``vision_analyze`` and ``video_analyze`` at execution time (requirement T-VIS).

* an image (local path, ``file://``/``data:`` URI or web URL) is loaded with a size cap
  (``vision.max_image_bytes``, default 20 MB) and checked by its magic bytes — PNG, JPEG, GIF or WebP, the
  formats OpenAI-compatible vision models take — then sent as a ``data:`` URI with the question;
* a video (``vision.max_video_bytes``, default 50 MB; MP4, MOV, WebM/MKV, AVI, MPEG) is sampled into
  ``frames`` JPEG stills with ffmpeg on this machine, which are sent the same way with a note saying when
  each was taken.

Which model answers is decided by :func:`hermes.tools.vision.model.pick_model`.
"""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path
from typing import Any

from hermes.errors import ToolError
from hermes.tools.routed.context import RoutedContext, text_arg
from hermes.tools.routed.media import VISION_IMAGE_TYPES
from hermes.tools.routed.source import LoadedMedia, load_media
from hermes.tools.vision.frames import Frame, require_ffmpeg, sample_frames
from hermes.tools.vision.model import ask, pick_model

IMAGE_MAX_BYTES = 20 * 1024 * 1024
VIDEO_MAX_BYTES = 50 * 1024 * 1024
DEFAULT_FRAMES = 8
MAX_FRAMES = 16


def _question(args: dict[str, Any]) -> str:
    return text_arg(args, "question", "what to look for or answer about the image") or ""


def _reference(args: dict[str, Any], field: str) -> str:
    return text_arg(args, field, "a local path or an http(s), file: or data: URL") or ""


def _image_part(uri: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": uri}}


async def analyze_image(args: dict[str, Any], ctx: RoutedContext) -> dict[str, Any]:
    """Run one ``vision_analyze`` call."""
    question = _question(args)
    ref = _reference(args, "image_url")
    model = pick_model(ctx, "vision_analyze")
    cap = int(ctx.get_number("vision.max_image_bytes", IMAGE_MAX_BYTES, low=1024, high=200 * 1024 * 1024))
    image = await load_media(ref, ctx, kind="image", max_bytes=cap, field="image_url")
    if image.type.name not in VISION_IMAGE_TYPES:
        raise ToolError(f"'image_url': {image.source} is a {image.type.name.upper()} image; vision models take PNG, "
                        "JPEG, GIF or WebP — convert it first")
    answer = await ask(model, [{"type": "text", "text": question}, _image_part(image.data_uri())])
    return {"success": True, "analysis": answer, "model": model.model, "model_source": model.source,
            "image": {"source": image.source, "format": image.type.name, "bytes": len(image.data)}}


async def analyze_video(args: dict[str, Any], ctx: RoutedContext) -> dict[str, Any]:
    """Run one ``video_analyze`` call."""
    question = _question(args)
    ref = _reference(args, "video_url")
    count = args.get("frames", DEFAULT_FRAMES)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_FRAMES:
        raise ToolError(f"'frames' must be an integer from 1 to {MAX_FRAMES}")
    model = pick_model(ctx, "video_analyze")
    require_ffmpeg()
    cap = int(ctx.get_number("vision.max_video_bytes", VIDEO_MAX_BYTES, low=1024, high=1024 * 1024 * 1024))
    video = await load_media(ref, ctx, kind="video", max_bytes=cap, field="video_url")
    frames, duration = await _frames(video, count)
    times = ", ".join(f"{f.time:g} s" for f in frames)
    length = f"a {duration:.1f}-second video" if duration else "a video of unknown length"
    note = f"{question}\n\n(The {len(frames)} images are frames sampled from {length}, taken at {times}.)"
    parts: list[dict[str, Any]] = [{"type": "text", "text": note}]
    parts += [_image_part("data:image/jpeg;base64," + base64.b64encode(f.jpeg).decode("ascii")) for f in frames]
    answer = await ask(model, parts, max_tokens=4000)
    return {"success": True, "analysis": answer, "model": model.model, "model_source": model.source,
            "video": {"source": video.source, "format": video.type.name, "bytes": len(video.data),
                      "duration_s": duration},
            "frames": len(frames), "frame_times": [f.time for f in frames]}


async def _frames(video: LoadedMedia, count: int) -> tuple[list[Frame], float | None]:
    if video.path is not None:
        return await sample_frames(video.path, count)
    with tempfile.TemporaryDirectory(prefix="hermes-video-") as folder:
        path = Path(folder) / f"video.{video.type.ext}"
        path.write_bytes(video.data)
        return await sample_frames(path, count)
