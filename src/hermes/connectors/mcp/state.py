"""What is known of each MCP server: its tools and how its last connection went (in memory and on disk).

:class:`McpTool` is one tool a server listed. :class:`ServerState` is a server's state in this
process. :class:`StateFiles` keeps the last listing and state per server in
``HERMES_HOME/cache/mcp/<server>.json`` (written atomically), so that

* a new session offers the server's tools at once, without waiting for the server to start (the
  listing is reused only while the server's command/args/url are unchanged: its fingerprint);
* ``hermes tools list`` and ``hermes status --full`` in another process can say how the server did
  last time, and when — never that it is connected now.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.config.atomic import atomic_write
from hermes.connectors.mcp.schema import UnsafeSchema, safe_description, safe_input_schema

logger = logging.getLogger(__name__)

#: a server's life in this process
CONNECTING, READY, RECONNECTING, FAILED, DISABLED, STOPPED = (
    "connecting", "ready", "reconnecting", "failed", "disabled", "stopped")


@dataclass(frozen=True)
class McpTool:
    """One tool a server listed."""

    name: str
    description: str
    input_schema: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    @classmethod
    def listed(cls, name: str, description: str, schema: Any, *, server: str = "") -> McpTool | None:
        """A tool as a server lists it, made safe to use (:mod:`~hermes.connectors.mcp.schema`): remote
        references removed, the description cleaned; None (logged) when its schema is unusable."""
        try:
            clean, dropped = safe_input_schema(schema)
        except UnsafeSchema as exc:
            logger.warning("MCP server %s: tool %s left out: %s", server, name[:100], exc)
            return None
        if dropped:
            logger.warning("MCP server %s: tool %s: remote schema references removed (never fetched): %s",
                           server, name[:100], ", ".join(dropped[:5]))
        return cls(name, safe_description(description), clean)

    @classmethod
    def from_json(cls, data: Any) -> McpTool | None:
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return None
        schema = data.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type", "object") != "object":
            schema = {"type": "object", "properties": {}}
        return cls.listed(data["name"], str(data.get("description") or ""), schema)


@dataclass
class ServerState:
    """One server's state in this process (read by status; changed only on the manager's loop)."""

    name: str
    status: str = CONNECTING
    error: str | None = None
    tools: tuple[McpTool, ...] = ()
    #: the listing came from the state file, not from the running server
    tools_cached: bool = False
    attempts: int = 0
    connected_at: float | None = None
    changed_at: float = field(default_factory=time.time)
    next_retry_at: float | None = None
    protocol_version: str | None = None

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "tools": len(self.tools)}
        if self.error:
            out["error"] = self.error
        if self.tools_cached and self.status != READY:
            out["tools_from"] = "the last listing"
        if self.next_retry_at and self.status in (RECONNECTING, FAILED):
            out["retry_in_s"] = max(0, round(self.next_retry_at - time.time()))
        return out


class StateFiles:
    """``cache/mcp/<server>.json``: the last listing and the last state of each server."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, name: str) -> Path:
        return self.folder / f"{name}.json"

    def read(self, name: str) -> dict[str, Any]:
        try:
            data = json.loads(self._path(name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def cached_tools(self, name: str, fingerprint: str) -> tuple[McpTool, ...] | None:
        """The last listing, if it was made by a server started the same way."""
        data = self.read(name)
        if data.get("fingerprint") != fingerprint or not isinstance(data.get("tools"), list):
            return None
        tools = (McpTool.from_json(t) for t in data["tools"])
        return tuple(t for t in tools if t is not None)

    def write(self, state: ServerState, fingerprint: str) -> None:
        """Record ``state``; the listing is kept from the file when this state has none of its own. A server
        stopped because its process ends leaves the last real outcome in place."""
        if state.status == STOPPED:
            return
        old = self.read(state.name)
        data: dict[str, Any] = {
            "fingerprint": fingerprint, "status": state.status, "error": state.error,
            "checked_at": state.changed_at,
            "connected_at": state.connected_at or (old.get("connected_at") if old.get("fingerprint") == fingerprint
                                                   else None),
        }
        if state.status == READY and not state.tools_cached:
            data["tools"] = [t.as_json() for t in state.tools]
        elif old.get("fingerprint") == fingerprint and "tools" in old:
            data["tools"] = old["tools"]
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write(self._path(state.name), json.dumps(data, ensure_ascii=False))
        except OSError:
            pass  # a read-only home loses the cache, never the call
