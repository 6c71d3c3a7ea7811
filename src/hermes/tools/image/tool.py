"""``image_generate`` (toolset ``image_gen``, in the core list): one registered tool, no model argument.

The module stays light (it is imported at start-up by discovery): the work lives in
:mod:`hermes.tools.image.generate`, imported on the first call.
"""

from __future__ import annotations

import json
from typing import Any

from hermes.tools.registry import registry
from hermes.tools.routed.availability import route_check

IMAGE_GENERATE_SCHEMA: dict[str, Any] = {
    "name": "image_generate",
    "description": (
        "Generate an image from a text prompt, or restyle/edit a source image, with the image model the user "
        "configured (image_gen.model; the model cannot be chosen per call). The image is saved under "
        "~/.hermes/media/ and the result gives its local 'path' and source 'url'."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "minLength": 1, "maxLength": 4000,
                       "description": "What the image should show, in detail (subject, style, lighting, mood)."},
            "aspect_ratio": {"type": "string", "enum": ["square", "landscape", "portrait"], "default": "square",
                             "description": "Shape of the image (default: square)."},
            "image_url": {"type": "string", "minLength": 1, "maxLength": 30_000_000,
                          "description": "Optional source image to edit or restyle: an http(s) URL, a local file "
                                         "path or a data: URI."},
            "seed": {"type": "integer", "minimum": 0, "maximum": 4294967295,
                     "description": "Optional seed for reproducible results (where the model supports it)."},
        },
        "required": ["prompt"],
        "additionalProperties": False,
    },
}


async def image_generate(args: dict[str, Any], **kw: Any) -> str:
    """Handler: see :func:`hermes.tools.image.generate.generate_image`."""
    from hermes.tools.image.generate import generate_image
    from hermes.tools.routed.context import RoutedContext

    return json.dumps(await generate_image(args, RoutedContext.from_kw(kw)), ensure_ascii=False)


registry.register(
    name="image_generate",
    toolset="image_gen",
    schema=IMAGE_GENERATE_SCHEMA,
    handler=image_generate,
    check_fn=route_check("image_gen"),
    requires_env=[],
    is_async=True,
)
