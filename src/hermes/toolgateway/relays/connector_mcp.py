"""Connector apps served by an MCP server the gateway runs (``[connectors.apps.<app>.mcp]``).

The gateway starts each such app's stdio server when it starts (the same supervised connection the
client uses: :class:`hermes.connectors.mcp.connection.Connection` — handshake, paged tool listing,
reconnect with backoff, a crash or a hang turned into an error naming the server), and stops it on
shutdown. The server's tools become the app's actions (name, description, input schema made safe),
refreshed when it says its list changed; a call goes through :mod:`.connector_actions` like a REST
action — metered, rate-limited, under the gateway-held 5-minute deadline — and answers the tool's
result (text in ``result``, ``structured_content``, resources; media are listed, never decoded here).
Elicitation, sampling, resources and prompts are off: nobody stands behind the gateway to answer.
The server's stderr goes to ``<state_dir>/logs/mcp/<app>.log`` (0600).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
from typing import TYPE_CHECKING, Any

from hermes.toolgateway.errors import GatewayHTTPError

if TYPE_CHECKING:
    from hermes.connectors.mcp.connection import Connection
    from hermes.connectors.mcp.state import ServerState
    from hermes.toolgateway.connector_apps import Action, App
    from hermes.toolgateway.services import Gateway


def _actions(state: ServerState) -> dict[str, Action]:
    from hermes.toolgateway.connector_apps import ACTION_NAME, Action

    return {t.name: Action(t.name, "mcp", "", t.description or t.name, t.input_schema)
            for t in state.tools if ACTION_NAME.match(t.name)}


class McpApps:
    """The MCP servers of one gateway's MCP apps, keyed by app; ``apps`` is the table their actions fill."""

    def __init__(self, gateway: Gateway, apps: dict[str, App]) -> None:
        self.gateway = gateway
        self.apps = apps
        self.connections: dict[str, Connection] = {}
        self._listed: dict[str, asyncio.Event] = {}

    def start(self) -> None:
        """Start every MCP app's server (on the running loop: the gateway's lifespan)."""
        from hermes.connectors.mcp.config import McpServerConfig
        from hermes.connectors.mcp.connection import Connection

        for name, app in self.apps.items():
            mcp = app.config.mcp
            if mcp is None:
                continue
            config = McpServerConfig(name=name, transport="stdio", command=mcp.command, args=mcp.args,
                                     env=dict(mcp.env), cwd=mcp.cwd, timeout=mcp.timeout,
                                     connect_timeout=mcp.connect_timeout, elicitation=False, sampling=False,
                                     resources=False, prompts=False)
            self._listed[name] = asyncio.Event()
            conn = Connection(config, log_dir=self.gateway.config.state_dir / "logs" / "mcp",
                              on_change=functools.partial(self._changed, name))
            self.connections[name] = conn
            conn.start()

    def _changed(self, name: str, state: ServerState) -> None:
        from hermes.connectors.mcp.state import READY

        if state.status == READY:
            self.apps[name] = dataclasses.replace(self.apps[name], actions=_actions(state))
            self._listed[name].set()

    async def ready(self, name: str) -> None:
        """Wait (up to the app's connect timeout) for the first listing of an MCP app's actions; a server
        whose first attempt already failed answers 503 at once (it is retried in the background)."""
        from hermes.connectors.mcp.state import CONNECTING

        listed = self._listed.get(name)
        app = self.apps.get(name)
        if listed is None or listed.is_set() or app is None or app.config.mcp is None:
            return
        state = self.connections[name].state
        if state.status == CONNECTING:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(listed.wait(), timeout=app.config.mcp.connect_timeout)
        if not listed.is_set():
            why = f": {state.error}" if state.error else ""
            raise GatewayHTTPError(503, "app_unavailable",
                                   f"{app.title}'s MCP server is not ready ({state.status}{why})")

    async def call(self, app: App, action: str, arguments: dict[str, Any], timeout: float) -> tuple[Any, int]:
        """The tool's result as the action's answer; a failure of the server is a 502 naming the app."""
        from hermes.connectors.mcp.results import convert_result
        from hermes.errors import McpError

        conn = self.connections[app.config.app]
        try:
            result = await conn.call(action, arguments, timeout=max(1.0, timeout))
        except McpError as exc:
            raise GatewayHTTPError(502, "app_error", f"{app.title}: {exc}") from None
        out = convert_result(result, server=app.config.app, tool=action, media_dir=None)
        if "error" in out:
            raise GatewayHTTPError(502, "app_error", str(out["error"]))
        return out, 200

    async def aclose(self) -> None:
        for conn in self.connections.values():
            await conn.stop()
        self.connections.clear()
