"""``catalog`` — what this hermes can do, for the desktop app's sessions (TS-4).

The seed names the ``catalog`` toolset and where it appears, not its tools; this is our reading of what
a person in the app expects from it: the agent can look up every toolset and tool this installation
has (also the ones this session does not have: whether each can run here, what is missing, and how
the person turns it on) and the settings hermes reads (kind, default, allowed values). So "can you
make videos?" or "how do I stop the tips?" gets an answer from this installation rather than from the
model's memory. Nothing is changed: turning things on is the person's, in Settings (or ``hermes tools``).

* ``action='search'`` with ``query`` (words; all must match the name or description) and optionally
  ``kind`` (``toolset``, ``tool``, ``setting``): at most ``limit`` entries, name matches first;
* ``action='show'`` with ``name``: one toolset (its tools and their state), tool (its full description
  and parameters) or setting.
"""

from __future__ import annotations

import json
from typing import Any

from hermes.errors import ToolError
from hermes.tools.context import session_of
from hermes.tools.registry import ToolRegistry, registry

KINDS = ("toolset", "tool", "setting")
TURN_ON = "the person turns it on in the app's Settings → Tools (or with 'hermes tools enable {name}')"

SCHEMA: dict[str, Any] = {
    "name": "catalog",
    "description": (
        "Look up what this hermes installation can do: its toolsets, tools and settings, including ones "
        "this session does not have (whether each can run here, what is missing, how the person turns it "
        "on). action='search' with query (and optionally kind: toolset, tool or setting); action='show' "
        "with name for one entry in full. Read-only."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["search", "show"]},
            "query": {"type": "string", "description": "Words to look for (search); empty lists everything"},
            "kind": {"type": "string", "enum": list(KINDS)},
            "name": {"type": "string", "description": "A toolset, tool or dotted setting name (show)"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 15},
        },
        "required": ["action"],
    },
}


def _first_sentence(text: str, limit: int = 200) -> str:
    head = text.split(". ", 1)[0].strip()
    return head if len(head) <= limit else head[: limit - 1] + "…"


class Catalog:
    """The entries of one session's view: the registry, the toolset table, the config schema."""

    def __init__(self, reg: ToolRegistry, session_tools: frozenset[str]) -> None:
        self.reg = reg
        self.session_tools = session_tools

    def _tool_state(self, name: str) -> dict[str, Any]:
        if name not in self.reg:
            return {"available": False, "reason": "not built in this version"}
        ok, reason = self.reg.availability(name)
        return {"available": ok, **({} if ok else {"reason": reason}), "in_session": name in self.session_tools}

    def toolsets(self) -> list[dict[str, Any]]:
        from hermes.tools.toolsets import TOOLSETS

        out = []
        registered = self.reg.toolsets()
        names = [n for n in TOOLSETS if not n.startswith("hermes-") and TOOLSETS[n].surfaces]
        names += sorted(n for n in registered if n not in TOOLSETS)
        for name in names:
            spec = TOOLSETS.get(name)
            tools = list(spec.tools) if spec else []
            tools += [t for t in registered.get(name, []) if t not in tools]
            out.append({"kind": "toolset", "name": name, "description": spec.description if spec else "from a plugin",
                        "tools": tools, "in_session": bool(tools) and all(t in self.session_tools for t in tools),
                        "surfaces": sorted(s.value for s in spec.surfaces) if spec else ["all"]})
        return out

    def tools(self) -> list[dict[str, Any]]:
        return [{"kind": "tool", "name": e.name, "toolset": e.toolset, "description": _first_sentence(e.description),
                 **self._tool_state(e.name)} for e in sorted(self.reg.entries(), key=lambda e: e.name)]

    def settings(self) -> list[dict[str, Any]]:
        from hermes.config.schema import SCHEMA as CONFIG

        out = []
        for key in CONFIG.keys.values():
            entry: dict[str, Any] = {"kind": "setting", "name": key.name, "type": key.kind,
                                     "description": f"{key.kind} setting {key.name}"}
            if key.default not in (None, ()):
                entry["default"] = key.default
            if key.choices:
                entry["choices"] = list(key.choices)
            out.append(entry)
        return out

    def entries(self, kind: str | None) -> list[dict[str, Any]]:
        kinds = [kind] if kind else list(KINDS)
        out: list[dict[str, Any]] = []
        for k in kinds:
            out += self.toolsets() if k == "toolset" else self.tools() if k == "tool" else self.settings()
        return out

    def search(self, query: str, kind: str | None, limit: int) -> dict[str, Any]:
        words = [w for w in query.lower().split() if w]
        hits = []
        for entry in self.entries(kind):
            name = entry["name"].lower()
            text = f"{name} {entry['description'].lower()} {entry.get('toolset', '')}"
            if all(w in text for w in words):
                hits.append((0 if any(w in name for w in words) else 1, entry))
        hits.sort(key=lambda h: h[0])
        found = [h[1] for h in hits]
        return {"query": query, "count": len(found), "entries": found[:limit],
                **({"more": len(found) - limit} if len(found) > limit else {})}

    def show(self, name: str) -> dict[str, Any]:
        for entry in self.toolsets():
            if entry["name"] == name:
                entry["tools"] = [{"name": t, **self._tool_state(t)} for t in entry["tools"]]
                if not entry["in_session"]:
                    entry["turn_on"] = TURN_ON.format(name=name)
                return entry
        tool = self.reg.get(name)
        if tool is not None:
            out = {"kind": "tool", "name": name, "toolset": tool.toolset, "description": tool.description,
                   "parameters": tool.schema.get("parameters", {}), **self._tool_state(name)}
            if not out.get("in_session"):
                out["turn_on"] = TURN_ON.format(name=tool.toolset)
            return out
        for entry in self.settings():
            if entry["name"] == name:
                return entry
        close = [e["name"] for e in self.entries(None) if name.lower() in e["name"].lower()][:8]
        raise ToolError(f"nothing named {name!r} in the catalog" + (f"; close: {', '.join(close)}" if close else
                                                                   "; use action='search'"))


def catalog(args: dict[str, Any], **kw: Any) -> str:
    session = session_of(kw)
    reg = getattr(session, "registry", None) or registry
    offered: frozenset[str] = getattr(session, "offered", lambda: frozenset())()
    book = Catalog(reg, offered)
    if args["action"] == "show":
        name = args.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ToolError("'name' is required with action='show'")
        return json.dumps(book.show(name.strip()), ensure_ascii=False, default=str)
    query = args.get("query") or ""
    return json.dumps(book.search(str(query), args.get("kind"), int(args.get("limit") or 15)),
                      ensure_ascii=False, default=str)


registry.register(name="catalog", toolset="catalog", schema=SCHEMA, handler=catalog)
