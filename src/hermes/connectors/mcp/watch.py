"""Resource subscriptions of one MCP server: who watches which resource, and what changed since they looked.

A session subscribes with the ``resources/subscribe`` tool (:mod:`.extras`); the server then says when
the resource changed — on the 2026-07-28 protocol as events of one ``subscriptions/listen`` stream
holding every watched URI (re-opened whenever the set changes, and after a reconnect), on older
servers as ``notifications/resources/updated`` after ``resources/subscribe``. Each change is queued
for every session watching that URI; :meth:`Watcher.take` hands a session its queue (the agent tells
the model before its next step). The queues are bounded and URIs are cut to 300 characters: a server
cannot flood a session. The URIs come from the server: they are untrusted text.

The listen stream runs in a task of its own on the manager's loop (the SDK's scopes are entered and
left there); :meth:`Watcher.stop` ends it before the client closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import warnings
from typing import Any

from hermes.errors import McpError

logger = logging.getLogger(__name__)

#: changed URIs kept per session until it looks (older ones are dropped first)
MAX_PENDING = 50
#: URIs one server may have watched at once
MAX_WATCHED = 100
MAX_URI = 300


class Watcher:
    def __init__(self, server: str) -> None:
        self.server = server
        #: uri -> the sessions watching it
        self.watched: dict[str, set[str]] = {}
        self._pending: dict[str, dict[str, None]] = {}
        self._lock = threading.Lock()  # take() runs on a session's thread, the rest on the manager's loop
        self._task: asyncio.Task[None] | None = None
        self._legacy = False

    # -- the sessions' side ---------------------------------------------------------------------------
    def take(self, subscriber: str) -> list[str]:
        """The URIs that changed since ``subscriber`` last looked (and forget them)."""
        with self._lock:
            return list(self._pending.pop(subscriber, {}))

    def forget(self, subscriber: str) -> list[str]:
        """Drop a session that ended; the URIs nobody watches any more (to stop listening for)."""
        with self._lock:
            self._pending.pop(subscriber, None)
            orphans = []
            for uri, subs in list(self.watched.items()):
                subs.discard(subscriber)
                if not subs:
                    del self.watched[uri]
                    orphans.append(uri)
            return orphans

    def record(self, uri: str) -> None:
        """The server says ``uri`` changed: queue it for each session watching it."""
        uri = str(uri)[:MAX_URI]
        with self._lock:
            for subscriber in self.watched.get(uri, ()):
                queue = self._pending.setdefault(subscriber, {})
                queue.pop(uri, None)
                queue[uri] = None
                while len(queue) > MAX_PENDING:
                    del queue[next(iter(queue))]

    # -- the server's side (on the manager's loop) -------------------------------------------------------
    async def subscribe(self, client: Any, uri: str, subscriber: str, timeout: float) -> dict[str, Any]:
        if len(uri) > MAX_URI:
            raise McpError(f"MCP server '{self.server}': a resource uri to watch is at most {MAX_URI} characters")
        with self._lock:
            if uri not in self.watched and len(self.watched) >= MAX_WATCHED:
                raise McpError(f"MCP server '{self.server}': already watching {MAX_WATCHED} resources")
            new = uri not in self.watched
            self.watched.setdefault(uri, set()).add(subscriber)
        if new:
            try:
                await self._apply(client, timeout, added=uri)
            except BaseException:
                self.forget_uri(uri, subscriber)
                raise
        return _said(f"watching {uri}; you will be told when the server says it changed")

    async def unsubscribe(self, client: Any, uri: str, subscriber: str, timeout: float) -> dict[str, Any]:
        if self.forget_uri(uri, subscriber):
            await self._apply(client, timeout, removed=uri)
        return _said(f"no longer watching {uri}")

    def forget_uri(self, uri: str, subscriber: str) -> bool:
        """Stop ``subscriber`` watching ``uri``; True when nobody watches it any more."""
        with self._lock:
            subs = self.watched.get(uri)
            if subs is None:
                return False
            subs.discard(subscriber)
            if subs:
                return False
            del self.watched[uri]
            return True

    async def _apply(self, client: Any, timeout: float, added: str | None = None, removed: str | None = None) -> None:
        """Tell the server the new set: re-open the listen stream, or (older servers) one subscribe call."""
        from mcp.client.subscriptions import ListenNotSupportedError

        if not self._legacy:
            try:
                await self.resume(client, timeout)
                return
            except ListenNotSupportedError:
                self._legacy = True
            except TimeoutError:
                raise McpError(f"MCP server '{self.server}' did not acknowledge the resource watch in time") from None
            except Exception as exc:
                raise McpError(f"MCP server '{self.server}' refused to watch resources: "
                               f"{type(exc).__name__}: {str(exc)[:200]}") from None
        with warnings.catch_warnings():  # the SDK marks the pre-2026 methods deprecated; they are what such
            warnings.simplefilter("ignore")  # servers speak
            async with asyncio.timeout(timeout):
                if added is not None:
                    await client.session.subscribe_resource(added)
                if removed is not None:  # hermes stops telling at once; a server without the method is fine
                    with contextlib.suppress(Exception):
                        await client.session.unsubscribe_resource(removed)

    async def resume(self, client: Any, timeout: float) -> None:
        """(Re-)open the listen stream for every watched URI and wait for the server's acknowledgment
        (after a reconnect: the old stream died with the old connection). Older servers are asked again."""
        await self.stop()
        uris = sorted(self.watched)
        if not uris:
            return
        if self._legacy:
            with warnings.catch_warnings(), contextlib.suppress(Exception):
                warnings.simplefilter("ignore")
                for uri in uris:
                    await client.session.subscribe_resource(uri)
            return
        acked: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.get_running_loop().create_task(self._listen(client, uris, acked),
                                                            name=f"mcp-{self.server}-listen")
        async with asyncio.timeout(timeout):
            await acked

    async def _listen(self, client: Any, uris: list[str], acked: asyncio.Future[None]) -> None:
        try:
            async with client.listen(resource_subscriptions=uris) as stream:
                acked.set_result(None)
                async for event in stream:
                    uri = getattr(event, "uri", None)
                    if uri is not None:
                        self.record(str(uri))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            if not acked.done():
                acked.set_exception(exc)
            else:
                logger.info("MCP server %s: the resource listen stream ended: %s", self.server, type(exc).__name__)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _said(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}
