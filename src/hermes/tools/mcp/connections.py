"""``connections`` for every session whose login carries the ``managed_tools`` claim (T-CONN).

The managed connectors half: apps the Tool Gateway runs (:mod:`.managed`). When the MCP servers' tools
go through the index (:mod:`.index`), the binding replaces this entry with one whose description also
lists the local servers; leaving index mode puts this one back (:func:`register_base`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes.tools.mcp.index import CONNECTIONS, connections, schema_for
from hermes.tools.registry import registry

if TYPE_CHECKING:
    from hermes.tools.registry import ToolRegistry


def _available() -> tuple[bool, str | None]:
    from hermes.connectors.access import managed_connectors_available

    return managed_connectors_available()


def _handler(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return connections(None, args, kw)


def register_base(reg: ToolRegistry) -> None:
    reg.unregister(CONNECTIONS)
    reg.register(name=CONNECTIONS, toolset="connections", schema=schema_for(None), handler=_handler,
                 check_fn=_available, requires_env=[], max_result_chars=None)


registry.register(name=CONNECTIONS, toolset="connections", schema=schema_for(None), handler=_handler,
                  check_fn=_available, requires_env=[], max_result_chars=None)
