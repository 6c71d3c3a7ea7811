"""One MCP server's connection, kept alive on the manager's event loop (the official ``mcp`` SDK).

:meth:`Connection.run` is the supervisor: connect (stdio, Streamable HTTP or SSE, the protocol version
negotiated by the SDK's ``Client``), list the tools (every page), mark the server ready, and hold the
session open until it breaks or the manager stops it. A connection that fails or breaks is retried
with exponential backoff (1 s doubling to 60 s); after :data:`MAX_ATTEMPTS` failures in a row the
server is ``failed`` and probed again every :data:`PARKED_RETRY` seconds — or at once when a call
asks for it. Every message is masked with the server's secrets (env and header values).

:meth:`Connection.call` waits (up to the connect timeout) for a server that is still connecting, runs
the call under the server's call timeout, and turns every way a server can fail — it crashed, it hangs,
it sent garbage, it answered with a protocol error — into :class:`~hermes.errors.McpError` naming the
server. A broken transport wakes the supervisor, which reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TextIO

from hermes.config.paths import open_private_log
from hermes.connectors.mcp.config import McpServerConfig
from hermes.connectors.mcp.elicit import Asker, InFlight, answer
from hermes.connectors.mcp.extras import RESERVED, RESOURCES_SUBSCRIBE, WATCHING, utility_tools
from hermes.connectors.mcp.extras import run as run_extra
from hermes.connectors.mcp.schema import MAX_TOOLS_PER_SERVER
from hermes.connectors.mcp.state import (
    FAILED,
    READY,
    RECONNECTING,
    STOPPED,
    McpTool,
    ServerState,
)
from hermes.connectors.mcp.watch import Watcher
from hermes.errors import McpError
from hermes.redact import redact

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
FIRST_BACKOFF = 1.0
MAX_BACKOFF = 60.0
PARKED_RETRY = 300.0
_PAGE_CAP = 50

Listener = Callable[[ServerState], None]


def describe_error(exc: BaseException) -> str:
    """A one-line reason (an exception group is unwrapped to its first leaf)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Connection:
    """One configured server: its state and, while ready, its SDK client."""

    def __init__(self, config: McpServerConfig, *, log_dir: Path | None, on_change: Listener,
                 cached_tools: tuple[McpTool, ...] | None = None, token_dir: Path | None = None,
                 login: Any = None) -> None:
        self.config = config
        #: where ``auth: oauth`` tokens live, and the person's login (``hermes mcp login`` only)
        self._token_dir = token_dir
        self._login = login
        self.state = ServerState(config.name, tools=cached_tools or (), tools_cached=cached_tools is not None)
        self._log_dir = log_dir
        self._on_change = on_change
        self._client: Any = None
        self._ready = asyncio.Event()
        self._broken = asyncio.Event()
        self._wake = asyncio.Event()
        #: bumped when an attempt to connect ends (ready or failed); calls wait on it
        self._attempts_done = 0
        self._settled = asyncio.Condition()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._in_flight = InFlight()
        #: the sessions' resource subscriptions on this server (kept across reconnects)
        self.watch = Watcher(config.name)

    # -- lifecycle (on the manager's loop) -----------------------------------------------------------
    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self.run(), name=f"mcp-{self.config.name}")

    async def stop(self) -> None:
        self._stopping = True
        self._broken.set()
        self._wake.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._task), timeout=8)
            if not self._task.done():
                self._task.cancel()
        self._set(STOPPED, None)

    def _mask(self, text: str) -> str:
        return redact(text, self.config.secrets)

    def _set(self, status: str, error: str | None, **changes: Any) -> None:
        state = self.state
        state.status, state.error, state.changed_at = status, error, time.time()
        for key, value in changes.items():
            setattr(state, key, value)
        try:
            self._on_change(state)
        except Exception:
            logger.warning("MCP state listener failed for %s", self.config.name, exc_info=True)

    async def _attempt_ended(self) -> None:
        async with self._settled:
            self._attempts_done += 1
            self._settled.notify_all()

    async def run(self) -> None:
        backoff = FIRST_BACKOFF
        while not self._stopping:
            started = time.monotonic()
            try:
                await self._session()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # every failure of a server is a state, never a crash
                if self._stopping:
                    break
                self.state.attempts += 1
                reason = self._mask(describe_error(exc))
                logger.info("MCP server %s: %s", self.config.name, reason)
                parked = self.state.attempts >= MAX_ATTEMPTS
                wait = PARKED_RETRY if parked else backoff
                self._set(FAILED if parked else RECONNECTING, reason, next_retry_at=time.time() + wait)
                await self._attempt_ended()
            else:
                if self._stopping:
                    break
                wait = FIRST_BACKOFF
                self._set(RECONNECTING, self.state.error or "the connection closed",
                          next_retry_at=time.time() + wait)
            self._ready.clear()
            # a connection that ran a long while starts the backoff over
            ran_long = time.monotonic() - started > MAX_BACKOFF
            backoff = FIRST_BACKOFF if ran_long else min(backoff * 2, MAX_BACKOFF)
            self._wake.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=wait)

    async def _session(self) -> None:
        """Connect, list, serve until broken (returns) or fail (raises). Entering and leaving the SDK's
        client happen in this one task (its anyio scopes require it), so the deadlines are
        ``asyncio.timeout`` blocks, never ``wait_for`` (which would run the entry in another task)."""
        try:
            from mcp import Client
        except ImportError:
            raise McpError("the mcp package is not installed: pip install 'hermes[mcp]'") from None

        self._broken.clear()
        deadline = self.config.connect_timeout
        with self._errlog() as errlog:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    async with asyncio.timeout(deadline):
                        client = await stack.enter_async_context(Client(
                            self._transport(errlog), mode=self.config.protocol, read_timeout_seconds=deadline,
                            message_handler=self._on_message,
                            elicitation_callback=self._on_elicit if self.config.elicitation else None,
                            sampling_callback=self._on_sample if self.config.sampling else None))
                        tools = await self._list_tools(client)
                except TimeoutError:
                    raise McpError(f"no answer to the handshake and tool listing within {deadline:g} s") from None
                self._client = client
                self.state.attempts = 0
                self._set(READY, None, tools=tools, tools_cached=False, connected_at=time.time(),
                          next_retry_at=None, protocol_version=client.protocol_version)
                self._ready.set()
                await self._attempt_ended()
                try:
                    if self.watch.watched:  # a reconnect: the new connection listens for what the old one did
                        try:
                            await self.watch.resume(client, deadline)
                        except Exception as exc:
                            logger.info("MCP server %s: resource subscriptions not resumed: %s", self.config.name,
                                        self._mask(describe_error(exc)))
                    await self._broken.wait()
                finally:
                    await self.watch.stop()
                    self._client = None
                    self._ready.clear()

    @contextlib.contextmanager
    def _errlog(self) -> Any:
        """Where a stdio server's stderr goes: ``logs/mcp/<server>.log`` (never the person's terminal)."""
        if self.config.transport != "stdio" or self._log_dir is None:
            yield None
            return
        with open_private_log(self._log_dir / f"{self.config.name}.log") as handle:  # 0600 in a 0700 folder
            yield handle

    def _transport(self, errlog: TextIO | None) -> Any:
        cfg = self.config
        if cfg.transport == "stdio":
            import subprocess

            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(command=cfg.command or "", args=list(cfg.args), env=dict(cfg.env) or None,
                                           cwd=str(Path(cfg.cwd).expanduser()) if cfg.cwd else None)
            sink: Any = errlog if errlog is not None else subprocess.DEVNULL
            return stdio_client(params, errlog=sink)
        auth = self._oauth()
        if cfg.transport == "sse":
            from mcp.client.sse import sse_client

            return sse_client(cfg.url or "", headers=dict(cfg.headers) or None, timeout=cfg.connect_timeout,
                              sse_read_timeout=max(cfg.timeout, 300.0), auth=auth)
        return _streamable_http(cfg, auth)

    def _oauth(self) -> Any:
        """The SDK's OAuth provider for ``auth: oauth`` (None otherwise); without a stored token and outside
        ``hermes mcp login`` the attempt fails at once, never starting a login in the background."""
        cfg = self.config
        if cfg.auth != "oauth":
            return None
        from hermes.connectors.mcp.oauth import LOGIN_NEEDED, TokenFile, provider_for, token_path

        if self._token_dir is None:
            raise McpError(LOGIN_NEEDED.format(name=cfg.name))
        if self._login is None and not TokenFile(token_path(self._token_dir, cfg.name)).has_tokens():
            raise McpError(LOGIN_NEEDED.format(name=cfg.name))
        return provider_for(cfg.name, cfg.url or "", self._token_dir, scope=cfg.oauth_scope, login=self._login)

    async def _list_tools(self, client: Any) -> tuple[McpTool, ...]:
        tools: list[McpTool] = []
        cursor: str | None = None
        for _ in range(_PAGE_CAP):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                if tool.name in RESERVED:  # hermes's names for resources and prompts (connectors/mcp/extras.py)
                    logger.warning("MCP server %s: tool %s left out (a name hermes reserves)", self.config.name,
                                   tool.name)
                elif self.config.wants(tool.name):
                    listed = McpTool.listed(tool.name, tool.description or "", tool.input_schema,
                                            server=self.config.name)
                    if listed is not None:
                        tools.append(listed)
            cursor = page.next_cursor
            if not cursor or len(tools) >= MAX_TOOLS_PER_SERVER:
                break
        if len(tools) > MAX_TOOLS_PER_SERVER:
            logger.warning("MCP server %s lists %d tools; the first %d are offered", self.config.name,
                           len(tools), MAX_TOOLS_PER_SERVER)
        extra = await utility_tools(client, resources=self.config.resources, prompts=self.config.prompts)
        return tuple(tools[:MAX_TOOLS_PER_SERVER]) + tuple(extra)

    async def _on_message(self, message: Any) -> None:
        """A server's ``notifications/tools/list_changed`` refreshes the listing."""
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":  # older servers' subscriptions
            uri = getattr(getattr(root, "params", None), "uri", None)
            if uri is not None:
                self.watch.record(str(uri))
            return
        if getattr(root, "method", None) == "notifications/tools/list_changed" and self._client is not None:
            client = self._client

            async def relist() -> None:
                try:
                    tools = await asyncio.wait_for(self._list_tools(client), timeout=self.config.connect_timeout)
                except Exception as exc:
                    logger.info("MCP server %s: relisting failed: %s", self.config.name, describe_error(exc))
                    return
                self._set(self.state.status, self.state.error, tools=tools, tools_cached=False)

            asyncio.get_running_loop().create_task(relist())

    # -- calls (on the manager's loop) -----------------------------------------------------------------
    async def _on_elicit(self, context: Any, params: Any) -> Any:
        return await answer(self._in_flight, self.config.name, params)

    async def _on_sample(self, context: Any, params: Any) -> Any:
        from hermes.connectors.mcp.sampling import answer as sample

        return await sample(self._in_flight, self.config.name, params, self.config.sampling_max_tokens)

    async def call(self, tool: str, arguments: dict[str, Any], timeout: float | None = None,
                   asker: Asker | None = None, subscriber: str | None = None) -> Any:
        """The server's ``CallToolResult`` for one call; every failure is :class:`McpError` naming the server.
        ``asker`` answers the server's requests for input during the call (None: nobody can); ``subscriber``
        is the calling session, for ``resources/subscribe`` and ``resources/unsubscribe``."""
        name = self.config.name
        if self._stopping:
            raise McpError(f"MCP server '{name}' is stopped")
        if not self._ready.is_set():
            # a call is a reason to try now: wake the supervisor and wait for that attempt's outcome
            seen = self._attempts_done
            self._wake.set()
            try:
                async with asyncio.timeout(self.config.connect_timeout + 1):
                    async with self._settled:
                        await self._settled.wait_for(lambda: self._ready.is_set() or self._attempts_done > seen)
            except TimeoutError:
                pass
            if not self._ready.is_set():
                why = f": {self.state.error}" if self.state.error else ""
                raise McpError(f"MCP server '{name}' is not connected ({self.state.status}{why})")
        client = self._client
        if client is None:
            raise McpError(f"MCP server '{name}' is not connected ({self.state.status})")
        limit = timeout or self.config.timeout
        try:
            with self._in_flight.during(asker):
                async with asyncio.timeout(limit + 1):
                    if tool in WATCHING:
                        if subscriber is None:
                            raise McpError(f"MCP server '{name}': only a session can watch resources")
                        change = self.watch.subscribe if tool == RESOURCES_SUBSCRIBE else self.watch.unsubscribe
                        return await change(client, str(arguments["uri"]), subscriber, limit)
                    if tool in RESERVED:
                        return await run_extra(client, tool, arguments)
                    return await client.call_tool(tool, arguments, read_timeout_seconds=limit)
        except TimeoutError:
            raise McpError(f"MCP server '{name}' did not answer '{tool}' within {limit:g} s") from None
        except McpError as exc:  # hermes's own refusal (the resource watch): the connection is fine
            raise McpError(self._mask(str(exc))) from None
        except Exception as exc:
            from mcp import MCPError

            if _is_timeout(exc):
                raise McpError(f"MCP server '{name}' did not answer '{tool}' within {limit:g} s") from None
            if isinstance(exc, MCPError) and not _is_transport_error(exc):
                raise McpError(self._mask(f"MCP server '{name}' refused '{tool}': {exc}")) from None
            self._broken.set()  # the transport is gone: the supervisor reconnects
            reason = self._mask(describe_error(exc))
            raise McpError(f"MCP server '{name}' failed during '{tool}' ({reason}); reconnecting") from None


def _is_timeout(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, TimeoutError) or "timed out" in text or "timeout" in text


def _is_transport_error(exc: BaseException) -> bool:
    """An MCPError the SDK raises for a closed connection rather than a server's answer."""
    code = getattr(getattr(exc, "error", None), "code", None) or getattr(exc, "code", None)
    text = str(exc).lower()
    return code == -32000 or "connection closed" in text or ("closed" in text and "connection" in text)


@contextlib.asynccontextmanager
async def _streamable_http(cfg: McpServerConfig, auth: Any = None) -> AsyncIterator[Any]:
    """Streamable HTTP with the configured headers and OAuth (the SDK's client takes them on its httpx2
    client)."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    http = create_mcp_http_client(headers=dict(cfg.headers) or None, auth=auth,
                                  timeout=httpx2.Timeout(cfg.connect_timeout, read=max(cfg.timeout, 300.0)))
    async with http, streamable_http_client(cfg.url or "", http_client=http) as streams:
        yield streams
