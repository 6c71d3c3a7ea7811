"""One pooled Chromium's DevTools pipe, shared by every CDP client of its session.

Chromium started with ``--remote-debugging-pipe`` reads CDP commands from its file descriptor 3 and
writes replies and events to 4, each message JSON followed by a NUL byte. Nothing listens on a port
or a socket: only the gateway, which holds the other ends of both pipes, can drive the browser.

The pipe is one connection, so the gateway multiplexes its clients onto it:

* each client gets a **browser session of its own** (``Target.attachToBrowserTarget``, flat mode),
  which Chromium treats like a separate connection to its browser endpoint — its own target
  discovery, auto-attach, events and attached sessions, and the browser contexts it creates go away
  when it detaches. A client's commands without a ``sessionId`` go to that browser session, and its
  id is taken off what comes back, so the client sees what a direct connection would show;
* command ids are **rewritten** to ids unique on the pipe and restored in the replies, which go to
  the client that sent the command;
* a client may name only **its own** sessions: its browser session and every session attached
  through one of its sessions (a reply to ``Target.attachToTarget``/``attachToBrowserTarget``, a
  ``Target.attachedToTarget`` event). Any other ``sessionId`` is answered the way Chromium answers an
  unknown one. Events go to the owner of their ``sessionId``; the pipe's root-level events, which
  only the gateway's own commands cause, are dropped;
* a client that leaves is detached (its sessions and contexts end); one that does not read its
  messages while ``MAX_BACKLOG`` bytes wait for it is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("hermes.toolgateway")

MAX_MESSAGE = 64 * 1024 * 1024  # Chromium → gateway; screenshots are large, gigabyte strings are not welcome
MAX_BACKLOG = 2 * MAX_MESSAGE  # bytes waiting for one client before it is dropped as too slow
ATTACH_METHODS = frozenset({"Target.attachToTarget", "Target.attachToBrowserTarget"})
_REPLY_HEAD = re.compile(rb'\{"id":(\d+)[,}]')


class PipeClosed(Exception):
    """The browser's pipe is closed (Chromium exited or the session ended)."""


class PipeError(Exception):
    """Chromium answered one of the gateway's own commands with an error."""


def encode(message: dict[str, Any]) -> str:
    """Compact JSON, ASCII only (a lone surrogate in a string cannot break the UTF-8 encoding)."""
    return json.dumps(message, separators=(",", ":"))


def error_reply(ident: Any, code: int, text: str, session_id: Any = None) -> str:
    """A CDP error reply (with the ``sessionId`` the command named, when it named one)."""
    reply: dict[str, Any] = {"id": ident, "error": {"code": code, "message": text}}
    if isinstance(session_id, str):
        reply["sessionId"] = session_id
    return encode(reply)


@dataclass(eq=False)
class _Waiter:
    """A command on its way: whose (None: the gateway's own), under which id and session it was sent."""

    client: PipeClient | None
    ident: Any
    method: str
    session_id: str | None = None
    future: asyncio.Future[dict[str, Any]] | None = None


class PipeClient:
    """One client's share of the pipe (one WebSocket of the CDP proxy)."""

    def __init__(self, pipe: CDPPipe) -> None:
        self.pipe = pipe
        self.session_id = ""  # its browser session
        self.sessions: set[str] = set()
        self.closed = False
        self.overflowed = False
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._backlog = 0

    async def send(self, message: dict[str, Any]) -> str | None:
        """Forward a (screened) command; returns a CDP error reply for the client instead when it may not go.

        Raises :class:`PipeClosed` when the browser is gone or the client was dropped.
        """
        ident = message.get("id")
        if isinstance(ident, bool) or not isinstance(ident, int):
            return error_reply(ident, -32600, "Message must have integer 'id' property")
        named = message.get("sessionId")
        if named is not None and (not isinstance(named, str) or named not in self.sessions):
            return error_reply(ident, -32001, "Session with given id not found.", named)
        if self.closed:
            raise PipeClosed
        message["sessionId"] = named or self.session_id
        waiter = _Waiter(self, ident, str(message.get("method")), named)
        message["id"] = self.pipe.waiting(waiter)
        await self.pipe.write(message)
        return None

    async def receive(self) -> str | None:
        """The next message for this client; None once the client is closed or the pipe is gone."""
        if self.closed and self._queue.empty():
            return None
        text = await self._queue.get()
        if text is not None:
            self._backlog -= len(text)
        return text

    def deliver(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        if message.get("sessionId") == self.session_id:
            del message["sessionId"]
        text = encode(message)
        self._backlog += len(text)
        if self._backlog > MAX_BACKLOG:
            log.warning("CDP pipe: a client fell %d bytes behind; dropping it", self._backlog)
            self.overflowed = True
            self.close()
            return
        self._queue.put_nowait(text)

    def close(self) -> None:
        """Leave: the client's browser session is detached (ending its sessions), nothing more is delivered."""
        if self.closed:
            return
        self.closed = True
        self.pipe.forget(self)
        while not self._queue.empty():
            self._queue.get_nowait()
        self._backlog = 0
        self._queue.put_nowait(None)


class CDPPipe:
    """The gateway's end of one Chromium's ``--remote-debugging-pipe`` (a reader for fd 4, a writer for fd 3)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._next_id = 0
        self._pending: dict[int, _Waiter] = {}
        self._owners: dict[str, PipeClient] = {}
        self._clients: set[PipeClient] = set()
        self.closed = asyncio.Event()
        self._task = asyncio.create_task(self._read_loop(), name="cdp-pipe-reader")

    # -- writing ---------------------------------------------------------------------------------------
    def waiting(self, waiter: _Waiter) -> int:
        """A fresh pipe id for a command whose reply goes to ``waiter``."""
        self._next_id += 1
        self._pending[self._next_id] = waiter
        return self._next_id

    def _write_now(self, message: dict[str, Any]) -> None:
        if self.closed.is_set() or self._writer.is_closing():
            raise PipeClosed
        self._writer.write(encode(message).encode("ascii") + b"\0")

    async def write(self, message: dict[str, Any]) -> None:
        self._write_now(message)
        try:
            await self._writer.drain()
        except (OSError, RuntimeError) as exc:  # a broken pipe: Chromium is gone
            raise PipeClosed from exc

    async def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 10.0,
                   client: PipeClient | None = None) -> dict[str, Any]:
        """A command of the gateway's own; its result (raises PipeClosed, PipeError, TimeoutError)."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        ident = self.waiting(_Waiter(client, None, method, None, future))
        try:
            await self.write({"id": ident, "method": method, "params": params or {}})
            reply = await asyncio.wait_for(future, timeout)
        finally:
            if client is None:  # a client's attach that timed out stays awaited: a late session is detached (_own)
                self._pending.pop(ident, None)
        if "error" in reply:
            raise PipeError(f"{method}: {reply['error']}")
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    async def connect(self, timeout: float = 10.0) -> PipeClient:
        """A new client with a browser session of its own."""
        client = PipeClient(self)
        self._clients.add(client)
        try:
            result = await self.call("Target.attachToBrowserTarget", timeout=timeout, client=client)
            if not isinstance(result.get("sessionId"), str):
                raise PipeError("Target.attachToBrowserTarget named no session")
            client.session_id = result["sessionId"]
        except BaseException:
            client.close()
            raise
        return client

    def forget(self, client: PipeClient) -> None:
        """Drop a client's sessions and detach its browser session (fire and forget)."""
        self._clients.discard(client)
        for session_id in client.sessions:
            if self._owners.get(session_id) is client:
                del self._owners[session_id]
        client.sessions.clear()
        if client.session_id:
            self._detach(client.session_id)

    def _detach(self, session_id: str) -> None:
        with contextlib.suppress(PipeClosed, OSError, RuntimeError):
            ident = self.waiting(_Waiter(None, None, "Target.detachFromTarget"))
            self._write_now({"id": ident, "method": "Target.detachFromTarget", "params": {"sessionId": session_id}})

    # -- reading ---------------------------------------------------------------------------------------
    def _own(self, session_id: str, client: PipeClient) -> None:
        if client.closed:  # it left while the session was being attached
            self._detach(session_id)
            return
        self._owners[session_id] = client
        client.sessions.add(session_id)

    def _dispatch(self, message: dict[str, Any]) -> None:
        ident = message.get("id")
        if ident is not None:
            waiter = self._pending.pop(ident, None) if isinstance(ident, int) else None
            if waiter is None:
                return
            result = message.get("result")
            if waiter.client is not None and waiter.method in ATTACH_METHODS and isinstance(result, dict) \
                    and isinstance(result.get("sessionId"), str):
                self._own(result["sessionId"], waiter.client)
            if waiter.future is not None:
                if not waiter.future.done():
                    waiter.future.set_result(message)
            elif waiter.client is not None:
                message["id"] = waiter.ident
                waiter.client.deliver(message)
            return
        session_id = message.get("sessionId")
        owner = self._owners.get(session_id) if isinstance(session_id, str) else None
        if owner is None:
            return
        method, params = message.get("method"), message.get("params")
        child = params.get("sessionId") if isinstance(params, dict) else None
        if method == "Target.attachedToTarget" and isinstance(child, str):
            self._own(child, owner)
        owner.deliver(message)
        if method == "Target.detachedFromTarget" and isinstance(child, str) and self._owners.get(child) is owner:
            del self._owners[child]
            owner.sessions.discard(child)

    def _too_large(self, head: bytes) -> None:
        """A message over ``MAX_MESSAGE`` was skipped: a reply's sender gets an error instead."""
        match = _REPLY_HEAD.match(head)
        waiter = self._pending.pop(int(match.group(1)), None) if match else None
        log.warning("CDP pipe: skipped a message over %d bytes (%s)", MAX_MESSAGE,
                    waiter.method if waiter else "an event")
        if waiter is not None and waiter.future is not None and not waiter.future.done():
            waiter.future.set_result({"error": {"message": "reply too large"}})
        elif waiter is not None and waiter.client is not None and not waiter.client.closed:
            text = error_reply(waiter.ident, -32000, f"the reply exceeds the gateway's limit of {MAX_MESSAGE} bytes",
                               waiter.session_id)
            waiter.client.deliver(json.loads(text))

    async def _read_loop(self) -> None:
        skipping, head = False, b""
        try:
            while True:
                try:
                    raw = await self._reader.readuntil(b"\0")
                except asyncio.LimitOverrunError as exc:  # drop what is buffered, keep looking for the end
                    chunk = await self._reader.readexactly(exc.consumed)
                    if not skipping:
                        skipping, head = True, chunk[:64]
                    continue
                if skipping:
                    skipping = False
                    self._too_large(head)
                    continue
                try:
                    message = json.loads(raw[:-1])
                except ValueError:
                    log.warning("CDP pipe: Chromium sent a message that is not JSON")
                    continue
                if isinstance(message, dict):
                    self._dispatch(message)
        except (asyncio.IncompleteReadError, OSError):
            pass  # Chromium closed its end: it exited
        except Exception:
            log.exception("CDP pipe: reading from Chromium failed; closing the pipe")
        finally:
            self._shut()

    def _shut(self) -> None:
        self.closed.set()
        for waiter in self._pending.values():
            if waiter.future is not None and not waiter.future.done():
                waiter.future.set_exception(PipeClosed())
        self._pending.clear()
        self._owners.clear()
        for client in list(self._clients):
            client.close()

    async def aclose(self) -> None:
        """Stop reading and close the gateway's ends (the clients see the pipe closed)."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._writer.close()
        self._shut()


__all__ = ["MAX_MESSAGE", "CDPPipe", "PipeClient", "PipeClosed", "PipeError", "error_reply"]
