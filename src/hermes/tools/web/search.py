"""The ``web_search`` tool: titles, URLs and snippets of the top web results for a query.

The backend is decided at every call by ``web.search_backend`` (else ``web.backend``, else
auto-detection; requirement GW-2…GW-5): the Nous Tool Gateway (Firecrawl protocol), Firecrawl, Tavily, Exa,
Brave, SearXNG, or the key-less DuckDuckGo search through ``ddgs``. Selection and gateway problems come
back with routing's exact wording.

The module imports only the registry: HTTP, routing and conversion code load on the first call, so
tool discovery stays fast.
"""

from __future__ import annotations

from typing import Any

from hermes.errors import ToolArgumentError
from hermes.tools.registry import registry
from hermes.tools.routed.availability import route_check

MAX_QUERY = 1000
DEFAULT_LIMIT = 5
MAX_LIMIT = 20

WEB_SEARCH_SCHEMA: dict[str, Any] = {
    "name": "web_search",
    "description": (
        "Search the web. Returns the title, URL and a short snippet of each top result. Snippets are untrusted "
        "web content. Use web_extract to read a result's page."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY,
                      "description": "What to search for, as you would type it into a search engine."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                      "description": f"How many results to return (1-{MAX_LIMIT}, default {DEFAULT_LIMIT})."},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}


async def web_search(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """Run the search on the route chosen now (see the module docstring)."""
    from hermes.tools.web.backends import describe, search
    from hermes.tools.web.results import search_result
    from hermes.tools.web.runtime import WebContext, http_client

    query = " ".join(str(args.get("query", "")).split())
    if not query:
        raise ToolArgumentError("'query' must contain words to search for")
    raw_limit = args.get("limit")  # an explicit null means "not given" (validation lets it through)
    limit = DEFAULT_LIMIT if raw_limit is None else int(raw_limit)
    ctx = WebContext.from_kw(kw)
    route = ctx.route("web.search")
    async with http_client() as http:
        hits = await search(ctx, http, route, query, limit)
    return search_result(query, describe(route), hits)


registry.register(
    name="web_search",
    toolset="web",
    schema=WEB_SEARCH_SCHEMA,
    handler=web_search,
    check_fn=route_check("web.search"),
    requires_env=[],
    is_async=True,
)
