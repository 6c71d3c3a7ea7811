"""MCP servers' tools in the catalog: one entry per tool, ``mcp_<server>_<tool>``, toolset ``mcp-<server>``.

:func:`load_mcp_tools` reads ``mcp_servers:``, hands the servers to the process's
:class:`~hermes.connectors.mcp.manager.McpManager` (which connects them in the background and returns
at once) and registers each server's tools in the catalog: the live listing when the server is
already connected, else the last listing it sent (``cache/mcp/<server>.json``), so a session starting
now offers them without waiting. When a listing arrives later the entries are brought up to date for
sessions started afterwards (a running session keeps the tools it was offered, TS-9).

Each call is validated against the server's input schema (all of JSON Schema, with the field named
in the error), sent through the manager under the server's timeout, and its content turned into a
result (:mod:`hermes.connectors.mcp.results`); the session's finish step applies the result budget
and the secret masking. A tool is unavailable while its server has failed (left out of new sessions'
definitions); a call to a server that crashed, hangs or sent garbage answers ``{"error": ...}`` naming
the server.

With many tools (``mcp.tool_index``/``mcp.index_threshold``) and a login with the ``managed_tools``
claim, the servers' tools are reached through the one ``connections`` tool instead
(:mod:`hermes.tools.mcp.index`).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.connectors.mcp.config import McpServerConfig, McpSettings, read_servers
from hermes.connectors.mcp.extras import WATCHING
from hermes.connectors.mcp.names import ambiguous, function_names
from hermes.connectors.mcp.schema import safe_description
from hermes.connectors.mcp.state import DISABLED, FAILED, READY, STOPPED, McpTool, ServerState
from hermes.errors import McpError
from hermes.redact import redact
from hermes.tools.untrusted import mark_untrusted

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.connectors.mcp.manager import McpManager
    from hermes.tools.registry import ToolRegistry

logger = logging.getLogger(__name__)

TOOLSET_PREFIX = "mcp-"
#: the session-state key of a session's resource-subscription id
SUBSCRIBER_KEY = "mcp_subscriber"
INDEX_AUTO, INDEX_ALWAYS, INDEX_NEVER = "auto", "always", "never"
DEFAULT_INDEX_THRESHOLD = 40


def mcp_settings(settings: Settings) -> McpSettings:
    """The configured servers (``mcp_servers:``) with ``${VAR}`` filled from the environment and ``.env``."""
    return read_servers(settings.get("mcp_servers"), settings.env.get)


def toolset_of(server: str) -> str:
    return f"{TOOLSET_PREFIX}{server}"


def _masked(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {k: _masked(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v, secrets) for v in value]
    return value


def resource_notes(updates: dict[str, list[str]]) -> list[str]:
    """The model's lines for changed resources: the URIs are the servers' words, between untrusted lines."""
    return [mark_untrusted(f"mcp:{server}/resources/updated",
                           f"MCP server '{server}' says these watched resources changed (read them again with its "
                           f"resources_read tool if they matter): " + ", ".join(uris))
            for server, uris in sorted(updates.items())]


def _as_untrusted(out: dict[str, Any], source: str, secrets: tuple[str, ...]) -> dict[str, Any]:
    """A server's answer as data for the model: its text between the untrusted-content lines naming
    ``mcp:SERVER/TOOL``, and every string masked with the server's own secrets (its env and header
    values, which the session's finish step does not know)."""
    out = _masked(out, secrets)
    for key in ("result", "error"):
        if out.get(key):
            out[key] = mark_untrusted(source, out[key])
    for resource in out.get("resources") or ():
        if isinstance(resource.get("text"), str):
            resource["text"] = mark_untrusted(source, resource["text"])
    return out


class _Binding:
    """The MCP entries one catalog holds, kept in step with the manager's listings: each server's tools
    as their own entries, or — in index mode — the single ``connections`` tool reaching all of them."""

    def __init__(self, reg: ToolRegistry, manager: McpManager, media_dir: Path) -> None:
        self.reg = reg
        self.manager = manager
        self.media_dir = media_dir
        self.configs: dict[str, McpServerConfig] = {}
        self.registered: dict[str, dict[str, str]] = {}  # server → {function name: tool name}
        #: each server's tools that its include/exclude lists let through (the last listing known)
        self.listings: dict[str, tuple[McpTool, ...]] = {}
        self.index_mode = INDEX_AUTO
        self.index_threshold = DEFAULT_INDEX_THRESHOLD
        self.indexed = False
        #: whether the login carries the ``managed_tools`` claim: ``connections`` is offered only then
        self.managed_tools = False
        self._validators: dict[tuple[str, str], Any] = {}
        self._lock = threading.RLock()

    def sync(self, server: str, tools: tuple[McpTool, ...]) -> None:
        config = self.configs.get(server)
        with self._lock:
            if config is None or not config.enabled:
                self.listings.pop(server, None)
            else:
                self.listings[server] = tuple(t for t in tools if config.wants(t.name))
            self._rebuild()

    def wants_index(self) -> bool:
        """Index mode: a login with the ``managed_tools`` claim (T-CONN: ``connections`` is offered only
        then; without it every server's tools stay their own tools), and ``mcp.tool_index: always`` or
        ``auto`` with more tools than ``mcp.index_threshold``."""
        total = sum(len(tools) for tools in self.listings.values())
        wanted = self.index_mode == INDEX_ALWAYS or (self.index_mode == INDEX_AUTO and total > self.index_threshold)
        return wanted and self.managed_tools

    def _rebuild(self) -> None:
        for names in self.registered.values():  # new listings replace the old entries (no "registered again")
            for name in names:
                self.reg.unregister(name)
        self.registered = {}
        self.indexed = self.wants_index() and bool(self.listings)
        from hermes.tools.mcp.index import CONNECTIONS, register_connections

        if self.indexed:
            register_connections(self)
            return
        entry = self.reg.get(CONNECTIONS)
        if entry is not None and entry.options.get("mcp_index"):  # back to the managed-connectors entry
            from hermes.tools.mcp.connections import register_base

            register_base(self.reg)
        for server, chosen in self.listings.items():
            config = self.configs[server]
            others = {n for names in self.registered.values() for n in names} | {
                n for n in self.reg.names() if not n.startswith("mcp_")}
            names = function_names(server, [t.name for t in chosen], taken=others,
                                   all_suffixed=ambiguous(server, self.configs))
            for tool in chosen:
                self._register(config, tool, names[tool.name])
            self.registered[server] = {names[t.name]: t.name for t in chosen}

    def available(self, server: str) -> bool:
        state = self.manager.states().get(server)
        return state is not None and state.status not in (FAILED, DISABLED, STOPPED)

    def invoke(self, config: McpServerConfig, tool: McpTool, args: dict[str, Any],
               kw: dict[str, Any]) -> dict[str, Any]:
        """One call of ``tool``: arguments checked with its schema, sent under the server's timeout, the
        result converted and marked untrusted (for its own entry and for ``connections`` alike)."""
        from hermes.connectors.mcp.results import convert_result
        from hermes.tools.mcp.elicit import asker_for
        from hermes.tools.mcp.schemas import argument_validator, check_arguments

        server = config.name
        key = (server, tool.name)
        validator = self._validators.get(key)
        if validator is None or validator.schema is not tool.input_schema:
            validator = self._validators[key] = argument_validator(tool.input_schema)
        # an explicit null for an optional argument means "not given" (as for every hermes tool)
        required = set(tool.input_schema.get("required") or ())
        sent = {k: v for k, v in args.items() if v is not None or k in required}
        check_arguments(validator, sent)
        subscriber = self._subscriber(kw) if tool.name in WATCHING else None
        result = self.manager.call(server, tool.name, sent, asker=asker_for(kw, config), subscriber=subscriber)
        converted = convert_result(result, server=server, tool=tool.name, media_dir=self.media_dir)
        secrets = config.result_secrets
        if config.auth == "oauth":  # the server's OAuth tokens never reach the model, even echoed back
            from hermes.connectors.mcp.oauth import token_secrets

            secrets = (*token_secrets(self.manager.token_dir, server), *secrets)
        return _as_untrusted(converted, f"mcp:{server}/{tool.name}", secrets)

    def _subscriber(self, kw: dict[str, Any]) -> str:
        """The calling session's key for resource subscriptions; the first one makes the session tell the
        model, before each step, which watched resources changed, and drop its subscriptions at its end."""
        import secrets

        from hermes.tools.context import on_model_step, on_session_end, session_of

        session = session_of(kw)
        if session is None:
            raise McpError("watching a resource needs a session (the changes are told to its model)")
        key = session.state.get(SUBSCRIBER_KEY)
        if not isinstance(key, str):
            key = session.state[SUBSCRIBER_KEY] = "sub-" + secrets.token_hex(8)
        manager = self.manager
        on_model_step(kw, "mcp:resources", lambda: resource_notes(manager.take_updates(key)))
        on_session_end(kw, "mcp:resources", lambda: manager.forget_subscriber(key))
        return key

    def _register(self, config: McpServerConfig, tool: McpTool, name: str) -> None:
        server = config.name
        description = safe_description(tool.description) or f"the {tool.name} tool"
        schema = {"name": name, "description": f"{description} (MCP server '{server}', tool '{tool.name}')",
                  "parameters": tool.input_schema}

        def handler(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
            return self.invoke(config, tool, args, kw)

        def available() -> bool:
            return self.available(server)

        previous = self.reg.current_source
        self.reg.current_source = f"mcp:{server}"
        try:
            self.reg.register(name=name, toolset=toolset_of(server), schema=schema, handler=handler,
                              check_fn=available, max_result_chars=None, mcp_server=server, mcp_tool=tool.name)
        except (ValueError, TypeError) as exc:
            logger.warning("MCP tool %s of %s not registered: %s", tool.name, server, exc)
        finally:
            self.reg.current_source = previous

    def on_change(self, state: ServerState) -> None:
        if state.name not in self.configs:
            return
        if state.status == READY and not state.tools_cached:
            self.sync(state.name, state.tools)
        elif self.indexed:  # the index line shows each server's status
            with self._lock:
                from hermes.tools.mcp.index import register_connections

                register_connections(self)


_bindings: dict[int, _Binding] = {}
_bindings_lock = threading.Lock()


def _binding(reg: ToolRegistry, manager: McpManager, home: Path) -> _Binding:
    with _bindings_lock:
        binding = _bindings.get(id(reg))
        if binding is None or binding.reg is not reg or binding.manager is not manager:
            binding = _bindings[id(reg)] = _Binding(reg, manager, home / "cache" / "mcp_media")
            manager.add_listener(binding.on_change)
        return binding


def load_mcp_tools(settings: Settings, reg: ToolRegistry) -> McpSettings:
    """Start (in the background) the configured servers and register their known tools in ``reg``."""
    cfg = mcp_settings(settings)
    for name, why in cfg.errors.items():
        reg.load_errors[f"mcp:{name}"] = why
    if not cfg.servers and not _bindings:
        return cfg
    from hermes.connectors.mcp.manager import manager_for

    manager = manager_for(settings.paths.home)
    binding = _binding(reg, manager, settings.paths.home)
    binding.configs = {s.name: s for s in cfg.servers}
    binding.index_mode = str(settings.get("mcp.tool_index", INDEX_AUTO) or INDEX_AUTO)
    binding.index_threshold = int(settings.get("mcp.index_threshold", DEFAULT_INDEX_THRESHOLD))
    binding.managed_tools = _managed_tools(settings)
    manager.configure(cfg.servers)
    states = manager.states()
    for server in list(binding.listings):
        if server not in binding.configs:
            binding.sync(server, ())
    for config in cfg.servers:
        state = states.get(config.name)
        tools = state.tools if state is not None and state.tools else (
            manager.files.cached_tools(config.name, config.fingerprint()) or ())
        binding.sync(config.name, tools)
    return cfg


def _managed_tools(settings: Settings) -> bool:
    """Offline: whether the portal login's token carries the ``managed_tools`` claim."""
    from hermes.errors import HermesError
    from hermes.routing import load_credentials

    try:
        return bool(load_credentials(settings.paths.auth, settings.env.as_dict()).managed_tools)
    except HermesError:
        return False


def server_report(settings: Settings) -> list[dict[str, Any]]:
    """Each configured server and what is known of it: live in this process, else from its last run."""
    import time

    cfg = mcp_settings(settings)
    from hermes.connectors.mcp.manager import existing_manager
    from hermes.connectors.mcp.state import StateFiles

    manager = existing_manager(settings.paths.home)
    live = manager.states() if manager is not None else {}
    files = StateFiles(settings.paths.home / "cache" / "mcp")
    out: list[dict[str, Any]] = []
    for config in cfg.servers:
        row: dict[str, Any] = {"name": config.name, "transport": config.transport, "where": config.describe(),
                               "enabled": config.enabled}
        if not config.enabled:
            row["status"] = DISABLED
        elif config.name in live:
            row.update(live[config.name].summary())
        else:
            last = files.read(config.name)
            same = last.get("fingerprint") == config.fingerprint()
            if not same or "status" not in last:
                row["status"] = "not connected yet (run: hermes mcp test " + config.name + ")"
            else:
                ago = max(0, round(time.time() - float(last.get("checked_at") or 0)))
                row["status"] = f"last run: {last['status']} ({_ago(ago)} ago)"
                if last.get("error"):
                    row["error"] = last["error"]
                row["tools"] = len(last.get("tools") or [])
        out.append(row)
    for name, why in cfg.errors.items():
        out.append({"name": name, "status": "invalid", "error": why})
    return out


def _ago(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


def report_lines(rows: list[dict[str, Any]]) -> list[str]:
    """``hermes tools list`` and ``hermes status --full``: one line per server (and its error)."""
    lines: list[str] = []
    for row in rows:
        tools = f", {row['tools']} tools" if "tools" in row else ""
        where = f"{row['where']} — " if row.get("where") else ""
        lines.append(f"  {row['name']:<14}{where}{row['status']}{tools}")
        if row.get("error"):
            lines.append(f"  {'':<14}✗ {row['error']}")
    return lines
