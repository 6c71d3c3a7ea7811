"""An asyncio JSON-RPC client of the app server (docs/app-server.md): what ``hermes tui`` talks through.

One WebSocket; :meth:`AppClient.call` sends a request and waits for its response (requests run
concurrently, so a response may come after the notifications it caused); every notification goes to
the ``on_note`` callback in arrival order. The token, when there is one, travels in the
``Authorization`` header (never in the URL).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

NoteHandler = Callable[[str, dict[str, Any]], Awaitable[None] | None]


class RpcFailure(HermesError):
    """The server answered a request with an error object; ``code`` is its JSON-RPC code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class AppClient:
    def __init__(self, url: str, token: str | None, on_note: NoteHandler) -> None:
        self.url, self._token, self.on_note = url, token, on_note
        self._ws: ClientConnection | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._reader: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus

        headers = {"Authorization": f"Bearer {self._token}"} if self._token else None
        try:
            self._ws = await connect(self.url, additional_headers=headers, open_timeout=15, max_size=2**24)
        except InvalidStatus as exc:
            status = exc.response.status_code
            why = " (a missing or wrong token)" if status == 403 else ""
            raise HermesError(f"the app server at {self.url} refused the connection: HTTP {status}{why}") from None
        except (OSError, TimeoutError) as exc:
            raise HermesError(f"cannot reach the app server at {self.url}: {exc}") from None
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self._ws is not None
        try:
            async for raw in self._ws:
                message = json.loads(raw)
                if "method" in message:
                    handled = self.on_note(message["method"], message.get("params") or {})
                    if handled is not None:
                        await handled
                    continue
                future = self._waiting.pop(message.get("id"), None)
                if future is None or future.done():
                    continue
                if "error" in message:
                    error = message["error"]
                    future.set_exception(RpcFailure(int(error.get("code", 0)), str(error.get("message"))))
                else:
                    future.set_result(message.get("result"))
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(HermesError("the connection to the app server closed"))
            self._waiting.clear()

    async def call(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0) -> Any:
        if self._ws is None:
            raise HermesError("not connected to the app server")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        await self._ws.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                        "params": params or {}}))
        return await asyncio.wait_for(future, timeout)

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
