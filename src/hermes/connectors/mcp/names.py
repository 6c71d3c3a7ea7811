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


def function_names(server: str, tools: Iterable[str], taken: Iterable[str] = ()) -> dict[str, str]:
    """``tool → function name`` for one server's tools; names in ``taken`` (other tools) are avoided."""
    tools = list(dict.fromkeys(tools))
    plain = {tool: function_name(server, tool) for tool in tools}
    clashing = {n for n in plain.values() if list(plain.values()).count(n) > 1} | set(taken)
    return {tool: function_name(server, tool, suffixed=True) if name in clashing else name
            for tool, name in plain.items()}
