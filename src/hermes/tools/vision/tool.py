"""``vision_analyze`` (core list) and ``video_analyze`` (toolset ``vision``). Light at import.

Both stay in the schema whatever the configuration: when no configured model can see, or ffmpeg is missing
for video, the call says exactly what to configure or install — hiding the tools would hide that advice.
"""

from __future__ import annotations

import json
from typing import Any

from hermes.tools.registry import registry

_QUESTION = {"type": "string", "minLength": 1, "maxLength": 4000,
             "description": "What to find out, e.g. 'What does the error dialog say?' or 'Describe the chart.'"}

VISION_ANALYZE_SCHEMA: dict[str, Any] = {
    "name": "vision_analyze",
    "description": (
        "Look at an image and answer a question about it (describe it, read its text, inspect a chart or a "
        "screenshot). Takes a local file path or an http(s) URL of a PNG, JPEG, GIF or WebP image."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "image_url": {"type": "string", "minLength": 1, "maxLength": 30_000_000,
                          "description": "Local path, http(s) URL, file: or data: URI of the image."},
            "question": _QUESTION,
        },
        "required": ["image_url", "question"],
        "additionalProperties": False,
    },
}

VIDEO_ANALYZE_SCHEMA: dict[str, Any] = {
    "name": "video_analyze",
    "description": (
        "Watch a video and answer a question about it: still frames are sampled evenly across it and examined "
        "together. Takes a local path or an http(s) URL of an MP4, MOV, WebM/MKV, AVI or MPEG file."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "video_url": {"type": "string", "minLength": 1, "maxLength": 70_000_000,
                          "description": "Local path, http(s) URL, file: or data: URI of the video."},
            "question": _QUESTION,
            "frames": {"type": "integer", "minimum": 1, "maximum": 16, "default": 8,
                       "description": "How many frames to sample (default 8; more for long or busy videos)."},
        },
        "required": ["video_url", "question"],
        "additionalProperties": False,
    },
}


def always_listed() -> bool:
    """Offline and instant: the tools explain missing models or ffmpeg themselves (see the module docstring)."""
    return True


async def vision_analyze(args: dict[str, Any], **kw: Any) -> str:
    """Handler: see :func:`hermes.tools.vision.analyze.analyze_image`."""
    from hermes.tools.routed.context import RoutedContext
    from hermes.tools.vision.analyze import analyze_image

    return json.dumps(await analyze_image(args, RoutedContext.from_kw(kw)), ensure_ascii=False)


async def video_analyze(args: dict[str, Any], **kw: Any) -> str:
    """Handler: see :func:`hermes.tools.vision.analyze.analyze_video`."""
    from hermes.tools.routed.context import RoutedContext
    from hermes.tools.vision.analyze import analyze_video

    return json.dumps(await analyze_video(args, RoutedContext.from_kw(kw)), ensure_ascii=False)


registry.register(
    name="vision_analyze",
    toolset="vision",
    schema=VISION_ANALYZE_SCHEMA,
    handler=vision_analyze,
    check_fn=always_listed,
    requires_env=[],
    is_async=True,
)

registry.register(
    name="video_analyze",
    toolset="vision",
    schema=VIDEO_ANALYZE_SCHEMA,
    handler=video_analyze,
    check_fn=always_listed,
    requires_env=[],
    is_async=True,
)
