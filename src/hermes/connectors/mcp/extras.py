"""A server's resources and prompts as four tools: ``resources/list``, ``resources/read``, ``prompts/list``,
``prompts/get`` (offered as ``mcp_<server>_resources_list`` and so on), and ``resources/subscribe`` /
``resources/unsubscribe`` when the server can tell when a resource changed (the connection keeps the
subscriptions: :mod:`hermes.connectors.mcp.watch`).

They are added to a server's listing only when its handshake advertises the ``resources`` or ``prompts``
capability, and the server's entry does not switch them off (``tools.resources: false``,
``tools.prompts: false``). Their names hold a ``/``, which MCP tool names do not use, so a server's own
tool can never be mistaken for one (a server tool with such a name is left out). A call answers the
same shape as a tool call (:func:`hermes.connectors.mcp.results.convert_result`): text, resources and
files, marked untrusted by the caller.
"""

from __future__ import annotations

import json
from typing import Any

from hermes.connectors.mcp.state import McpTool

RESOURCES_LIST, RESOURCES_READ = "resources/list", "resources/read"
RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE = "resources/subscribe", "resources/unsubscribe"
PROMPTS_LIST, PROMPTS_GET = "prompts/list", "prompts/get"
#: handled by the connection itself (it keeps who watches what), not by :func:`run`
WATCHING = frozenset({RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE})
RESERVED = frozenset({RESOURCES_LIST, RESOURCES_READ, PROMPTS_LIST, PROMPTS_GET, *WATCHING})
#: pages read from one listing at most (a server that keeps paging is cut off)
PAGE_CAP = 20
_NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
_URI: dict[str, Any] = {"type": "object", "properties": {"uri": {"type": "string", "minLength": 1, "maxLength": 2048}},
                        "required": ["uri"], "additionalProperties": False}

_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    RESOURCES_LIST: ("List the server's resources (documents, files, records it can show): uri, name, "
                     "description, mime type; and its resource templates.", _NO_ARGS),
    RESOURCES_READ: ("Read one of the server's resources by its uri (from resources_list).", _URI),
    RESOURCES_SUBSCRIBE: ("Watch one of the server's resources by its uri: when the server says it changed, you "
                          "are told before your next step (read it again with resources_read).", _URI),
    RESOURCES_UNSUBSCRIBE: ("Stop watching a resource (see resources_subscribe).", _URI),
    PROMPTS_LIST: ("List the server's prompt templates: name, description and their arguments.", _NO_ARGS),
    PROMPTS_GET: ("Get one of the server's prompts filled in with its arguments (strings): its messages.",
                  {"type": "object", "properties": {
                      "name": {"type": "string", "minLength": 1, "maxLength": 256},
                      "arguments": {"type": "object", "additionalProperties": {"type": "string"}}},
                   "required": ["name"], "additionalProperties": False}),
}


async def utility_tools(client: Any, *, resources: bool, prompts: bool) -> list[McpTool]:
    """The extra tools for what the server advertises in its handshake and actually has (one listing
    each: an advertised but empty capability adds nothing; a server that fails the listing neither)."""
    capabilities = client.server_capabilities
    out: list[McpTool] = []
    checks = ((resources, "resources", (RESOURCES_LIST, RESOURCES_READ),
               (client.list_resources, "resources"), (client.list_resource_templates, "resource_templates")),
              (prompts, "prompts", (PROMPTS_LIST, PROMPTS_GET), (client.list_prompts, "prompts")))
    for wanted, capability, names, *listings in checks:
        if not wanted or getattr(capabilities, capability, None) is None:
            continue
        try:
            has = False
            for fetch, field in listings:
                has = has or bool(getattr(await fetch(), field, None))
        except Exception:  # a server advertising what it cannot list: offer nothing for it
            continue
        if has:
            out += [McpTool(name, *_TOOLS[name]) for name in names]
            if capability == "resources" and getattr(capabilities.resources, "subscribe", None):
                out += [McpTool(name, *_TOOLS[name]) for name in (RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE)]
    return out


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=False, exclude_none=True) if hasattr(value, "model_dump") else value


async def _pages(fetch: Any, field: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(PAGE_CAP):
        page = await fetch(cursor=cursor)
        items += list(getattr(page, field, None) or ())
        cursor = getattr(page, "next_cursor", None)
        if not cursor:
            break
    return items


def _listing(key: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    data = {key: items}
    return {"content": [{"type": "text", "text": json.dumps(data, ensure_ascii=False, indent=1)}],
            "structured_content": data}


async def run(client: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One call of an extra tool, as a tool result's dict (``content``, ``structured_content``)."""
    if name == RESOURCES_LIST:
        resources = [_dump(r) for r in await _pages(client.list_resources, "resources")]
        templates = [_dump(t) for t in await _pages(client.list_resource_templates, "resource_templates")]
        data = {"resources": resources, "templates": templates}
        return {"content": [{"type": "text", "text": json.dumps(data, ensure_ascii=False, indent=1)}],
                "structured_content": data}
    if name == RESOURCES_READ:
        result = await client.read_resource(str(arguments["uri"]))
        return {"content": [{"type": "resource", "resource": _dump(c)} for c in result.contents]}
    if name == PROMPTS_LIST:
        return _listing("prompts", [_dump(p) for p in await _pages(client.list_prompts, "prompts")])
    result = await client.get_prompt(str(arguments["name"]), {str(k): str(v) for k, v in
                                                              (arguments.get("arguments") or {}).items()})
    blocks: list[Any] = []
    if getattr(result, "description", None):
        blocks.append({"type": "text", "text": str(result.description)})
    for message in result.messages:
        blocks.append({"type": "text", "text": f"[{message.role}]"})
        blocks.append(_dump(message.content))
    return {"content": blocks}
