"""The app server's ``toolsets.*`` methods: the tool picker of ``hermes tools`` over the API.

* ``toolsets.list`` — every toolset a desktop session may have, its state for a new session (or for
  the named session: frozen once it started, TS-9) and each tool's availability here with the reason;
* ``toolsets.enable`` / ``toolsets.disable`` — without ``session``: config.yaml, exactly as
  ``hermes tools enable/disable --surface desktop`` (from the next session); with ``session``: only that
  session, which must not have started yet (its toolsets freeze at its first turn).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes.tools.toolsets import TOOLSETS, Surface

if TYPE_CHECKING:
    from hermes.surfaces.appserver.rpc import AppApi, Client, Conversation
    from hermes.tools.registry import ToolRegistry


class ToolsetMethods:
    def __init__(self, api: AppApi) -> None:
        self.api = api

    def methods(self) -> dict[str, Callable[[Client, dict[str, Any]], Any]]:
        return {"toolsets.list": self.list_toolsets, "toolsets.enable": self.enable, "toolsets.disable": self.disable}

    def _registry(self) -> ToolRegistry:
        from hermes.agent.session import load_tools

        return load_tools(self.api.settings)

    def _session(self, params: dict[str, Any]) -> Conversation | None:
        return None if params.get("session") is None else self.api.conversation(params)

    def _started(self, conversation: Conversation) -> str | None:
        """The stored session id once the conversation's toolsets froze (its first turn began), else None."""
        live = self.api.host.get(conversation.key)
        session_id = self.api.host.session_id(conversation.key)
        if session_id is None and live is not None and (live.running or live.agent is not None):
            return "(starting)"
        return session_id

    def list_toolsets(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.tools.toolset_choice import state
        from hermes.tools.toolsets import resolve_toolsets

        conversation = self._session(params)
        reg = self._registry()
        registered = reg.toolsets()
        from hermes.config.yamlfile import ConfigFile

        settings = self.api.settings
        settings.config = ConfigFile.load(settings.paths.config)  # as a new session reads it (edits made elsewhere)
        config_disabled = settings.agent().disabled_toolsets
        out: dict[str, Any] = {}
        requested = settings.requested_toolsets()
        disabled = tuple(config_disabled)
        frozen: list[str] | None = None
        if conversation is not None:
            out["session"] = conversation.key
            started = self._started(conversation)
            if started is not None and started != "(starting)":
                frozen = self.api.host.store.get_session(started).tools
            requested = conversation.toolsets if conversation.toolsets is not None else requested
            disabled = (*disabled, *conversation.disabled)
        surface = conversation.surface if conversation is not None else Surface.DESKTOP
        out["surface"] = surface.value
        resolved = resolve_toolsets(surface, requested, disabled=disabled, registered=registered)
        from hermes.agent.session import switched_off_by

        session_tools = [t for t in resolved.tools if t in reg and reg.is_available(t)
                         and switched_off_by(settings, t, reg) is None]
        out["frozen"] = frozen is not None
        out["tools"] = frozen if frozen is not None else session_tools
        names = [n for n, t in TOOLSETS.items() if surface in t.surfaces and not n.startswith("hermes-")]
        names += sorted(n for n in registered if n not in TOOLSETS)
        listed = []
        for name in names:
            spec = TOOLSETS.get(name)
            members = list(spec.tools) if spec else []
            members += [t for t in registered.get(name, []) if t not in members]
            status, note = state(name, resolved, disabled, registered)
            tools = []
            for tool in members:
                if tool not in reg:
                    tools.append({"name": tool, "available": False, "reason": "not built"})
                    continue
                ok, reason = reg.availability(tool)
                if ok and (switch := switched_off_by(settings, tool, reg)) is not None:
                    ok, reason = False, f"off: {switch} is false"
                tools.append({"name": tool, "available": ok, **({} if ok else {"reason": reason})})
            listed.append({"name": name, "description": spec.description if spec else "from a plugin",
                           "state": status, "note": note, "tools": tools,
                           "includes": list(spec.includes) if spec else [], "opt_in": bool(spec and spec.opt_in)})
        out["toolsets"] = listed
        return out

    def _names(self, params: dict[str, Any]) -> list[str]:
        from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

        names = params.get("names")
        if not (isinstance(names, list) and names and all(isinstance(n, str) and n for n in names)):
            raise RpcError(INVALID_PARAMS, "'names' must be a non-empty list of toolset names")
        return list(dict.fromkeys(names))

    def _change(self, params: dict[str, Any], turn_on: bool) -> dict[str, Any]:
        from hermes.config.yamlfile import ConfigFile
        from hermes.surfaces.appserver.rpc import APP_ERROR, RpcError
        from hermes.tools.toolset_choice import NEXT_SESSION, check_known, disable, enable

        names = self._names(params)
        conversation = self._session(params)
        registered = self._registry().toolsets()
        check_known(names, registered)
        if conversation is None:
            settings = self.api.settings
            settings.config = ConfigFile.load(settings.paths.config)  # edits made elsewhere since are kept
            lines = (enable(settings, names, Surface.DESKTOP, registered) if turn_on
                     else disable(settings, names, registered))
            return {"changed": lines, "applies": NEXT_SESSION}
        started = self._started(conversation)
        if started is not None:
            raise RpcError(APP_ERROR, f"session {conversation.key} already started with its toolsets (they stay "
                                      "as they were for its whole life, TS-9); create a new session, or change "
                                      "the configuration by calling this without 'session'")
        if turn_on:
            base = conversation.toolsets
            if base is None:
                from hermes.tools.toolsets import SURFACE_BUNDLES

                base = self.api.settings.requested_toolsets() or [SURFACE_BUNDLES[conversation.surface]]
            conversation.toolsets = [*base, *(n for n in names if n not in base)]
            conversation.disabled = tuple(n for n in conversation.disabled if n not in names)
        else:
            conversation.disabled = (*conversation.disabled, *(n for n in names if n not in conversation.disabled))
        return {"session": conversation.key, "toolsets": conversation.toolsets,
                "disabled": list(conversation.disabled)}

    def enable(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        return self._change(params, True)

    def disable(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        return self._change(params, False)
