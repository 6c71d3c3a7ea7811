"""``x_search`` (toolset ``x_search``): listed only when ``XAI_API_KEY`` is set (checked offline)."""

from __future__ import annotations

import json
from typing import Any

from hermes.tools.registry import registry

_HANDLES = {"type": "array", "maxItems": 10, "items": {"type": "string", "minLength": 1, "maxLength": 16}}
_DATE = {"type": "string", "minLength": 10, "maxLength": 10}

X_SEARCH_SCHEMA: dict[str, Any] = {
    "name": "x_search",
    "description": (
        "Search posts on X (Twitter) for current discussion, reactions and claims; xAI's Grok searches and "
        "answers with citations to the posts. Use web_search for ordinary web pages."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "What to look for on X."},
            "allowed_x_handles": {**_HANDLES, "description": "Only posts from these handles (at most 10)."},
            "excluded_x_handles": {**_HANDLES, "description": "Never posts from these handles (at most 10)."},
            "from_date": {**_DATE, "description": "Earliest post date, YYYY-MM-DD (UTC)."},
            "to_date": {**_DATE, "description": "Latest post date, YYYY-MM-DD (UTC)."},
            "enable_image_understanding": {"type": "boolean", "description": "Let Grok look at images in posts."},
            "enable_video_understanding": {"type": "boolean", "description": "Let Grok look at videos in posts."},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}


def x_search_available() -> bool:
    """``XAI_API_KEY`` in the environment or in ``HERMES_HOME/.env`` (a file read, no network)."""
    from hermes.config.dotenv import variable_set

    return variable_set("XAI_API_KEY")


async def x_search(args: dict[str, Any], **kw: Any) -> str:
    """Handler: see :func:`hermes.tools.x.search.x_search`."""
    from hermes.tools.routed.context import RoutedContext
    from hermes.tools.x.search import x_search as run

    return json.dumps(await run(args, RoutedContext.from_kw(kw)), ensure_ascii=False)


registry.register(
    name="x_search",
    toolset="x_search",
    schema=X_SEARCH_SCHEMA,
    handler=x_search,
    check_fn=x_search_available,
    requires_env=["XAI_API_KEY"],
    is_async=True,
)
