"""``video_generate``, ``xai_video_edit`` and ``xai_video_extend`` (toolsets ``video`` and ``video_gen``, opt-in).

The module stays light (discovery imports it at start-up): the work lives in :mod:`.generate`,
:mod:`.xai_edit` and :mod:`.jobs`, imported on the first call. No video tool takes a model argument: the
model is ``video_gen.model``. ``video_generate``'s schema is rebuilt for each session from what the active
backend and model can do (:mod:`.describe`).
"""

from __future__ import annotations

import json
from typing import Any

from hermes.tools.registry import registry
from hermes.tools.routed.availability import route_check

_SOURCE = "an http(s) URL, a local file path or a data: URI"

VIDEO_GENERATE_SCHEMA: dict[str, Any] = {
    "name": "video_generate",
    "description": (
        "Generate a short video from a text prompt, or animate an image (image_url), with the video backend and "
        "model the user configured (video_gen.provider / video_gen.model; the model cannot be chosen per call). "
        "Renders take minutes; the video is saved under ~/.hermes/media/ and the result gives its local 'path'. "
        "A result with status 'pending' is still rendering: call again with the same arguments to keep waiting "
        "(it is not paid twice)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "minLength": 1, "maxLength": 8000,
                       "description": "What happens in the video: subject, motion, camera, style, sound."},
            "image_url": {"type": "string", "minLength": 1, "maxLength": 30_000_000,
                          "description": f"Optional image to animate (image-to-video): {_SOURCE}."},
            "duration": {"type": "integer", "minimum": 1, "maximum": 60, "description": "Length in seconds."},
            "aspect_ratio": {"type": "string", "minLength": 1, "maxLength": 10,
                             "description": "Aspect ratio, e.g. 16:9 or 9:16."},
            "resolution": {"type": "string", "minLength": 1, "maxLength": 10,
                           "description": "Resolution, e.g. 720p."},
            "audio": {"type": "boolean", "description": "Whether the video has sound (where the model can choose)."},
            "negative_prompt": {"type": "string", "minLength": 1, "maxLength": 2000,
                                "description": "What the video should not show."},
            "reference_image_urls": {"type": "array", "items": {"type": "string", "minLength": 1},
                                     "maxItems": 8, "description": "Reference images (http(s) URLs)."},
            "seed": {"type": "integer", "minimum": 0, "maximum": 4294967295,
                     "description": "Optional seed for reproducible results (where the model supports it)."},
        },
        "required": ["prompt"],
        "additionalProperties": False,
    },
}

_EDIT_PROPS: dict[str, Any] = {
    "prompt": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "The change to make."},
    "video_url": {"type": "string", "minLength": 1, "maxLength": 90_000_000,
                  "description": f"The source video (MP4): {_SOURCE}."},
}

XAI_VIDEO_EDIT_SCHEMA: dict[str, Any] = {
    "name": "xai_video_edit",
    "description": ("Edit a short video (MP4, at most 8.7 seconds) with xAI Grok Imagine from a text instruction "
                    "(restyle, add or remove things). The result is saved under ~/.hermes/media/."),
    "parameters": {"type": "object", "properties": dict(_EDIT_PROPS), "required": ["prompt", "video_url"],
                   "additionalProperties": False},
}

XAI_VIDEO_EXTEND_SCHEMA: dict[str, Any] = {
    "name": "xai_video_extend",
    "description": ("Continue a video (MP4 of 2 to 15 seconds) from its last frame with xAI Grok Imagine; the result "
                    "is the source plus the new seconds, saved under ~/.hermes/media/."),
    "parameters": {"type": "object",
                   "properties": {**_EDIT_PROPS,
                                  "duration": {"type": "integer", "minimum": 2, "maximum": 10,
                                               "description": "Seconds to add (2 to 10)."}},
                   "required": ["prompt", "video_url", "duration"], "additionalProperties": False},
}

_ROUTE_READY = route_check("video_gen")


def video_generate_available() -> tuple[bool, str | None]:
    """The ``video_gen`` route can run (portal info's line), and its backend and model exist (offline)."""
    ready, missing = _ROUTE_READY()
    if not ready:
        return ready, missing
    from hermes.config.settings import Settings
    from hermes.errors import HermesError
    from hermes.tools.routed.context import RoutedContext
    from hermes.tools.video.backend import active_backend, offline_route, plugin_secret

    try:
        ctx = RoutedContext(Settings.load())
        active = active_backend(ctx, offline_route(ctx))
        if active.plugin:
            plugin_secret(ctx, active.backend)
    except HermesError as exc:
        return False, str(exc)
    return True, None


def xai_key_available() -> bool:
    """``XAI_API_KEY`` in the environment or in ``~/.hermes/.env``, or a SuperGrok login (offline)."""
    from hermes.config.dotenv import variable_set
    from hermes.config.paths import HermesPaths
    from hermes.routing.xai_oauth import stored_token

    return variable_set("XAI_API_KEY") or stored_token(HermesPaths.current().auth) is not None


async def video_generate(args: dict[str, Any], **kw: Any) -> str:
    """Handler: see :func:`hermes.tools.video.generate.generate_video`."""
    from hermes.tools.routed.context import RoutedContext
    from hermes.tools.video.generate import generate_video

    return json.dumps(await generate_video(args, RoutedContext.from_kw(kw), kw), ensure_ascii=False)


async def xai_video_edit(args: dict[str, Any], **kw: Any) -> str:
    """Handler: see :func:`hermes.tools.video.xai_edit.edit_or_extend`."""
    from hermes.tools.routed.context import RoutedContext
    from hermes.tools.video.xai_edit import edit_or_extend

    return json.dumps(await edit_or_extend(args, RoutedContext.from_kw(kw), kw, extend=False), ensure_ascii=False)


async def xai_video_extend(args: dict[str, Any], **kw: Any) -> str:
    """Handler: see :func:`hermes.tools.video.xai_edit.edit_or_extend`."""
    from hermes.tools.routed.context import RoutedContext
    from hermes.tools.video.xai_edit import edit_or_extend

    return json.dumps(await edit_or_extend(args, RoutedContext.from_kw(kw), kw, extend=True), ensure_ascii=False)


def _describe(schema: dict[str, Any], session: Any) -> dict[str, Any]:
    from hermes.tools.video.describe import describe_generate

    return describe_generate(schema, session)


registry.register(
    name="video_generate",
    toolset="video_gen",
    schema=VIDEO_GENERATE_SCHEMA,
    handler=video_generate,
    check_fn=video_generate_available,
    requires_env=[],
    is_async=True,
    describe=_describe,
    max_result_chars=8000,
)

registry.register(
    name="xai_video_edit",
    toolset="video",
    schema=XAI_VIDEO_EDIT_SCHEMA,
    handler=xai_video_edit,
    check_fn=xai_key_available,
    requires_env=["XAI_API_KEY"],
    is_async=True,
)

registry.register(
    name="xai_video_extend",
    toolset="video",
    schema=XAI_VIDEO_EXTEND_SCHEMA,
    handler=xai_video_extend,
    check_fn=xai_key_available,
    requires_env=["XAI_API_KEY"],
    is_async=True,
)
