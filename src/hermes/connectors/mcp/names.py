"""Function names for MCP tools: ``mcp_<server>_<tool>``, in the OpenAI function-name charset.

OpenAI-compatible endpoints accept ``^[a-zA-Z0-9_-]{1,64}$``. Other characters become ``_``; a name
longer than 64 characters keeps its head and ends with a short digest of the full (server, tool) pair,
so two long names never meet. When two different pairs still come out the same (``a.b`` and ``a_b``),
every one of them gets the digest suffix: which tool a name means never depends on listing order.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

MAX_NAME = 64
PREFIX = "mcp_"
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def _digest(server: str, tool: str) -> str:
    return hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]


def _clean(text: str) -> str:
    return _BAD.sub("_", text) or "_"


def function_name(server: str, tool: str, *, suffixed: bool = False) -> str:
    """The name a model calls ``tool`` of ``server`` by (``suffixed``: always with the digest)."""
    name = f"{PREFIX}{_clean(server)}_{_clean(tool)}"
    if not suffixed and len(name) <= MAX_NAME:
        return name
    tail = f"_{_digest(server, tool)}"
    return name[: MAX_NAME - len(tail)] + tail


def ambiguous(server: str, others: Iterable[str]) -> bool:
    """Whether ``server``'s names could be another server's: one name extends the other with ``_`` (``a``
    and ``a_b``: ``mcp_a_b_c`` is tool ``b_c`` of one or ``c`` of the other). Such servers' tools all get
    the digest suffix, so which tool a name means never depends on which listing arrived first."""
    return any(o != server and (o.startswith(f"{server}_") or server.startswith(f"{o}_")) for o in others)


def function_names(server: str, tools: Iterable[str], taken: Iterable[str] = (), *,
                   all_suffixed: bool = False) -> dict[str, str]:
    """``tool → function name`` for one server's tools; names in ``taken`` (other tools) are avoided;
    ``all_suffixed``: every name gets the digest (see :func:`ambiguous`)."""
    tools = list(dict.fromkeys(tools))
    plain = {tool: function_name(server, tool) for tool in tools}
    clashing = {n for n in plain.values() if list(plain.values()).count(n) > 1} | set(taken)
    return {tool: function_name(server, tool, suffixed=True) if all_suffixed or name in clashing else name
            for tool, name in plain.items()}
