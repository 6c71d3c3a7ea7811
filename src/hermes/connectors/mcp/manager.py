"""The process's MCP servers: one background event loop holding every server's connection.

:class:`McpManager` owns a daemon thread running an asyncio loop; each configured server is a
:class:`~hermes.connectors.mcp.connection.Connection` supervised there. :meth:`McpManager.configure`
returns at once — servers connect in the background, so an agent's start-up never waits for them —
and reconciles a changed configuration (new servers start, removed ones stop, changed ones restart).
:meth:`McpManager.call` is synchronous: tool handlers call it from any thread, and it waits at most
the server's timeout plus a margin. Listeners hear of every state change (the tool family re-registers
a server's tools when its listing arrives); every change is also written to the state files.

One manager per ``HERMES_HOME`` (:func:`manager_for`); :func:`close_all` stops every server at exit.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes.config.paths import open_private_log
from hermes.connectors.mcp.config import McpServerConfig
from hermes.connectors.mcp.connection import Connection
from hermes.connectors.mcp.elicit import Asker
from hermes.connectors.mcp.state import CONNECTING, DISABLED, ServerState, StateFiles
from hermes.errors import McpError

logger = logging.getLogger(__name__)

Listener = Callable[[ServerState], None]
_CALL_MARGIN = 5.0


class McpManager:
    """Every MCP server of one HERMES_HOME, on one background event loop."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.files = StateFiles(home / "cache" / "mcp")
        self.log_dir = home / "logs" / "mcp"
        self.token_dir = home / "mcp-tokens"
        #: the person's OAuth login for servers connected from now on (``hermes mcp login`` only)
        self.login: Any = None
        self._connections: dict[str, Connection] = {}
        self._disabled: dict[str, ServerState] = {}
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        _sdk_logs_to(self.log_dir)

    # -- the loop ----------------------------------------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is not None and self._thread is not None and self._thread.is_alive():
                return self._loop
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                try:
                    loop.run_forever()
                finally:
                    loop.close()

            thread = threading.Thread(target=run, name="hermes-mcp", daemon=True)
            thread.start()
            ready.wait()
            self._loop, self._thread = loop, thread
            return loop

    def _submit(self, coro: Any) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())

    # -- configuration -------------------------------------------------------------------------------------
    def add_listener(self, listener: Listener) -> None:
        if listener not in self._listeners:
            self._listeners.append(listener)

    def _changed(self, state: ServerState, config: McpServerConfig) -> None:
        self.files.write(state, config.fingerprint())
        for listener in list(self._listeners):
            listener(state)

    def _listener_for(self, config: McpServerConfig) -> Listener:
        def changed(state: ServerState) -> None:
            self._changed(state, config)

        return changed

    def configure(self, servers: tuple[McpServerConfig, ...]) -> None:
        """Run exactly ``servers`` (returns at once; connecting happens in the background)."""
        wanted = {s.name: s for s in servers}
        with self._lock:
            current = dict(self._connections)
        stale = [c for name, c in current.items() if name not in wanted or c.config != wanted[name]
                 or not wanted[name].enabled]
        fresh = [s for s in servers if s.enabled and (s.name not in current or current[s.name] in stale)]
        self._disabled = {s.name: ServerState(s.name, status=DISABLED) for s in servers if not s.enabled}
        if not stale and not fresh:
            return
        for conn in stale:
            with self._lock:
                self._connections.pop(conn.config.name, None)
        new = [Connection(s, log_dir=self.log_dir, token_dir=self.token_dir, login=self.login,
                          cached_tools=self.files.cached_tools(s.name, s.fingerprint()),
                          on_change=self._listener_for(s)) for s in fresh]
        with self._lock:
            self._connections.update({c.config.name: c for c in new})

        async def apply() -> None:
            for conn in stale:
                await conn.stop()
            for conn in new:
                conn.start()

        self._submit(apply())

    # -- reading --------------------------------------------------------------------------------------------
    def connection(self, name: str) -> Connection | None:
        with self._lock:
            return self._connections.get(name)

    def states(self) -> dict[str, ServerState]:
        with self._lock:
            live = {name: c.state for name, c in self._connections.items()}
        return {**self._disabled, **live}

    def wait_settled(self, names: list[str] | None = None, timeout: float = 60.0) -> dict[str, ServerState]:
        """Wait until each server (or those named) is ready or has failed once; for ``hermes mcp test``."""
        import time

        end = time.monotonic() + timeout
        while time.monotonic() < end:
            states = self.states()
            chosen = [states[n] for n in (names or list(states)) if n in states]
            if all(s.status != CONNECTING for s in chosen):
                break
            time.sleep(0.05)
        return self.states()

    # -- calls ---------------------------------------------------------------------------------------------
    def call(self, server: str, tool: str, arguments: dict[str, Any], timeout: float | None = None,
             asker: Asker | None = None, subscriber: str | None = None) -> Any:
        """The server's result for one call, from any thread; failures raise :class:`McpError`.
        ``subscriber`` names the calling session (resource subscriptions)."""
        conn = self.connection(server)
        if conn is None:
            disabled = server in self._disabled
            raise McpError(f"MCP server '{server}' is {'disabled in config.yaml' if disabled else 'not configured'}")
        limit = (timeout or conn.config.timeout) + conn.config.connect_timeout + _CALL_MARGIN
        future = self._submit(conn.call(tool, arguments, timeout, asker, subscriber))
        try:
            return future.result(limit)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpError(f"MCP server '{server}' did not answer '{tool}' in time") from None

    def take_updates(self, subscriber: str) -> dict[str, list[str]]:
        """Per server, the watched resources that changed since ``subscriber`` last asked (any thread)."""
        with self._lock:
            conns = list(self._connections.items())
        return {name: uris for name, conn in conns if (uris := conn.watch.take(subscriber))}

    def forget_subscriber(self, subscriber: str) -> None:
        """A session ended: its subscriptions and queued changes go (the servers' streams follow at the next
        change of what is watched)."""
        with self._lock:
            conns = list(self._connections.values())
        for conn in conns:
            conn.watch.forget(subscriber)

    def close(self, timeout: float = 10.0) -> None:
        """Stop every server (bounded) and the loop."""
        with self._lock:
            conns = list(self._connections.values())
            self._connections.clear()
            loop = self._loop
        if loop is None or not loop.is_running():
            return

        async def stop_all() -> None:
            await asyncio.gather(*(c.stop() for c in conns), return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(stop_all(), loop).result(timeout)
        except Exception:
            logger.info("MCP servers did not all stop within %s s", timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        with self._lock:
            self._loop = None


def _sdk_logs_to(folder: Path) -> None:
    """The SDK's own log records (a server's malformed frames are logged with tracebacks) go to
    ``logs/mcp/sdk.log``, never to the person's terminal."""
    sdk = logging.getLogger("mcp")
    if any(getattr(h, "hermes_mcp", False) for h in sdk.handlers):
        return
    try:
        handler: logging.Handler = logging.StreamHandler(open_private_log(folder / "sdk.log"))
    except OSError:
        handler = logging.NullHandler()
    handler.hermes_mcp = True  # type: ignore[attr-defined]
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    sdk.addHandler(handler)
    sdk.propagate = False


_managers: dict[Path, McpManager] = {}
_managers_lock = threading.Lock()


def manager_for(home: Path) -> McpManager:
    """The manager of ``home`` (made on first use; stopped at exit)."""
    key = home.resolve()
    with _managers_lock:
        manager = _managers.get(key)
        if manager is None:
            if not _managers:
                atexit.register(close_all)
            manager = _managers[key] = McpManager(key)
        return manager


def existing_manager(home: Path) -> McpManager | None:
    """The manager of ``home`` if this process started one (status reads it; never starts servers)."""
    with _managers_lock:
        return _managers.get(home.resolve())


def close_home(home: Path) -> None:
    """Stop the servers of ``home`` and forget its manager (the next use starts a new one)."""
    with _managers_lock:
        manager = _managers.pop(home.resolve(), None)
    if manager is not None:
        manager.close()


def close_all() -> None:
    with _managers_lock:
        managers = list(_managers.values())
        _managers.clear()
    for manager in managers:
        manager.close()
