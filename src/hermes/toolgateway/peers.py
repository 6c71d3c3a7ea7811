"""State any gateway process can serve: who holds what, and forwarding a request to the process that does.

Some things live in one gateway process and cannot move: a ``modal`` sandbox (its processes and folder),
a local ``browser-use`` session (its Chromium and DevTools pipe) and an upload's file (in that process's
``upload_dir``, unless the folder is shared). Behind one address a request for one of them may land on any
process, so each process records what it holds in the shared database — a row of ``relay_jobs``
(:class:`~hermes.toolgateway.storage.jobs.JobTable`, namespace ``held:<kind>``) naming the holder's
:meth:`~hermes.toolgateway.config.GatewayConfig.peer_url` (``internal_url``, else ``http://host:port``) and
keyed by the user who owns the thing (the WebSocket of a browser session by the hash of its capability
secret) — and a process that does not hold it forwards the request there:

* the forwarding process checks the caller first (the token, or the upload's key), so strangers learn
  nothing and cause no internal traffic; it takes no rate-limit token and meters nothing;
* the forwarded request carries :data:`PEER_HEADER`, an HMAC (a key derived from the shared signing
  ``secret``, which every process already has) over the time, method, path and body; the holder refuses a
  wrong or stale one (403 ``peer_refused``) and never forwards a forwarded request again;
* the holder runs its whole pipeline on it: the user is authenticated and authorized again, rate limited
  and metered there, once;
* a holder that does not answer is 503 ``holder_unavailable`` with a sentence saying so (connection
  refused is immediate; an unresponsive one is bounded by ``limits.vendor_deadline``), never a hang.

A process deletes the rows naming its own address when it starts: what it held died with its previous
life, so those ids answer 404 like any unknown one.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from hermes.toolgateway.errors import GatewayHTTPError, refusal
from hermes.toolgateway.storage.base import StorageError
from hermes.toolgateway.storage.jobs import JobTable

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway

log = logging.getLogger("hermes.toolgateway")

PEER_HEADER = "x-hermes-peer"
#: seconds a forwarded request's signature stays good (the processes' clocks must agree this closely)
WINDOW = 60
CONNECT_TIMEOUT = 3.0
_NAMESPACE = "held:"
#: headers never passed on a forwarded hop, either way
_HOP = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding", "upgrade", "te",
                  "trailer", "proxy-authorization", "proxy-connection", PEER_HEADER})

ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def peer_key(signing_secret: bytes) -> bytes:
    """The key the processes sign forwarded requests with (derived: the signing key itself is never used)."""
    return hmac.new(signing_secret, b"hermes toolgateway peer requests", hashlib.sha256).digest()


def target_of(scope: Scope) -> str:
    """The path (under its ``/relay/<label>`` prefix) and query a request was made to."""
    query = scope.get("query_string", b"").decode("latin-1")
    path = str(scope.get("root_path", "")) + str(scope["path"])
    return path + (f"?{query}" if query else "")


class Peers:
    """This process's address, what it holds, and the signed hop to another process (one per Gateway)."""

    def __init__(self, gateway: Gateway, key: bytes) -> None:
        self.gateway = gateway
        self.url = gateway.config.peer_url()
        self._key = key
        self._tables: dict[tuple[str, float], JobTable] = {}  # by kind and lifetime: each row keeps its own
        self._mine = json.dumps({"peer": self.url}, separators=(",", ":"))

    # -- who holds what ------------------------------------------------------------------------------
    def _table(self, kind: str, ttl: float) -> JobTable:
        """The table of ``kind`` that writes rows living ``ttl`` seconds (reading ignores the ttl: a row's
        expiry is stored with it)."""
        table = self._tables.get((kind, ttl))
        if table is None:
            table = self._tables[kind, ttl] = JobTable(lambda: self.gateway.conn, _NAMESPACE + kind, ttl=ttl,
                                                       clock=self.gateway.clock)
        return table

    async def hold(self, kind: str, item_id: str, owner: str, ttl: float) -> None:
        """Record that this process holds ``item_id`` (of ``owner``) for at most ``ttl`` seconds. When the
        database does not answer, the thing is still made, reachable through this process only (logged)."""
        try:
            await self._table(kind, ttl).remember(item_id, owner, {"peer": self.url})
        except StorageError as exc:
            log.warning("could not record that this process holds %s %s (%s): other processes cannot forward "
                        "to it", kind, item_id, exc.code)

    async def holder(self, kind: str, item_id: str, owner: str) -> str | None:
        """The address of the *other* process holding ``owner``'s ``item_id``; None when it is this one or
        nobody (the caller then answers as for an unknown id)."""
        data = await self._table(kind, 3600.0).get(item_id, owner)
        peer = data.get("peer") if data is not None else None
        return peer if peer and peer != self.url else None

    def release(self, kind: str, item_id: str) -> None:
        """Forget the row of something this process no longer holds."""
        self.gateway.conn.execute("DELETE FROM relay_jobs WHERE namespace = ? AND job_id = ? AND data = ?",
                                  (_NAMESPACE + kind, item_id, self._mine))

    def forget_mine(self) -> None:
        """At start: what an earlier process at this address held is gone with it."""
        self.gateway.conn.execute("DELETE FROM relay_jobs WHERE namespace LIKE ? AND data = ?",
                                  (_NAMESPACE + "%", self._mine))

    # -- signatures ----------------------------------------------------------------------------------
    def _mac(self, stamp: str, method: str, target: str, body: bytes) -> str:
        message = f"{stamp}\n{method}\n{target}\n{hashlib.sha256(body).hexdigest()}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def sign(self, method: str, target: str, body: bytes = b"") -> str:
        stamp = str(int(self.gateway.clock()))
        return f"{stamp}.{self._mac(stamp, method, target, body)}"

    def check(self, value: str, method: str, target: str, body: bytes = b"") -> None:
        """Nothing for a good signature; 403 ``peer_refused`` for a wrong or stale one."""
        stamp, _, mac = value.partition(".")
        fresh = stamp.isdigit() and abs(self.gateway.clock() - int(stamp)) <= WINDOW
        if not fresh or not hmac.compare_digest(mac.encode(), self._mac(stamp, method, target, body).encode()):
            raise GatewayHTTPError(403, "peer_refused", "this forwarded request is not signed by a process of "
                                   "this gateway (or its signature is too old)")

    # -- forwarding ----------------------------------------------------------------------------------
    def unavailable(self, what: str) -> GatewayHTTPError:
        return GatewayHTTPError(503, "holder_unavailable",
                                f"the gateway process that holds this {what} does not answer; it may have stopped, "
                                f"and the {what} with it", headers={"retry-after": "5"})

    async def request(self, peer: str, method: str, target: str, headers: list[tuple[str, str]], body: bytes,
                      what: str, limit: int = 0) -> tuple[int, dict[str, str], bytes]:
        """``method target`` sent to ``peer`` with a signature: its status, headers (hop-by-hop ones left
        out) and body (at most ``limit`` bytes, else ``limits.max_response_bytes``); 503
        ``holder_unavailable`` when it does not answer."""
        import httpx

        limits = self.gateway.config.limits
        sent = [*headers, (PEER_HEADER, self.sign(method, target, body))]
        timeout = httpx.Timeout(limits.vendor_deadline, connect=CONNECT_TIMEOUT)
        try:
            async with self.gateway.http.stream(method, peer + target, content=body, headers=sent,
                                                timeout=timeout) as resp:
                chunks: list[bytes] = []
                size = 0
                async for chunk in resp.aiter_raw():
                    size += len(chunk)
                    if size > (limit or limits.max_response_bytes):
                        raise GatewayHTTPError(502, "holder_bad_response",
                                               f"the answer of the process holding this {what} is too large")
                    chunks.append(chunk)
        except httpx.HTTPError:
            raise self.unavailable(what) from None
        return resp.status_code, {k: v for k, v in resp.headers.items() if k.lower() not in _HOP}, b"".join(chunks)

    async def forward(self, peer: str, scope: Scope, body: bytes, what: str, limit: int = 0) -> Response:
        """``scope``'s request (with ``body``) sent to ``peer``; its answer, as it came."""
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]
                   if k.decode("latin-1").lower() not in _HOP]
        status, kept, data = await self.request(peer, str(scope["method"]), target_of(scope), headers, body, what,
                                                limit)
        return Response(data, status_code=status, headers=kept)

    async def serve(self, scope: Scope, receive: Receive, send: Send, app: ASGIApp, *,
                    find: Callable[[], Awaitable[str | None]], what: str, limit: int) -> None:
        """Run ``app`` here, or forward to the process ``find`` names (it checks the caller and returns the
        other holder's address, or None to serve here). A request that was itself forwarded is checked and
        always served here."""
        signed = Headers(scope=scope).get(PEER_HEADER)
        peer: str | None = None
        try:
            if signed is None:
                peer = await find()
                if peer is None:
                    await app(scope, receive, send)
                    return
            from hermes.toolgateway.relays.base import read_body

            body = await read_body(scope, receive, Headers(scope=scope), limit)
            if signed is not None:
                self.check(signed, str(scope["method"]), target_of(scope), body)
                await app(scope, _replay(body, receive), send)
                return
            assert peer is not None
            response = await self.forward(peer, scope, body, what)
        except (GatewayHTTPError, StorageError) as exc:
            response = refusal(exc).response()
        await response(scope, receive, send)

    async def forward_websocket(self, peer: str, scope: Scope, receive: Receive, send: Send, what: str) -> None:
        """Relay a WebSocket to ``peer`` (same path and query, signed), message by message, both ways."""
        from starlette.websockets import WebSocket, WebSocketDisconnect
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

        from hermes.toolgateway.browser.cdppipe import MAX_MESSAGE

        ws = WebSocket(scope, receive, send)
        target = target_of(scope)
        url = ("wss" if peer.startswith("https:") else "ws") + peer[peer.index(":"):] + target
        try:
            upstream = await asyncio.wait_for(
                connect(url, additional_headers={PEER_HEADER: self.sign("GET", target)}, max_size=MAX_MESSAGE,
                        open_timeout=CONNECT_TIMEOUT * 2, ping_interval=None, compression=None, proxy=None),
                CONNECT_TIMEOUT * 3)
        except InvalidStatus as exc:
            await deny(ws, scope, _peer_refusal(exc.response.status_code, exc.response.body, what))
            return
        except (OSError, TimeoutError, InvalidHandshake):
            await deny(ws, scope, self.unavailable(what))
            return
        await ws.accept()

        async def up() -> None:
            with contextlib.suppress(WebSocketDisconnect):
                while True:
                    message = await ws.receive()
                    if message["type"] == "websocket.disconnect":
                        return
                    data = message.get("text") if message.get("text") is not None else message.get("bytes")
                    if data is not None:
                        await upstream.send(data)

        async def down() -> None:
            with contextlib.suppress(ConnectionClosed):
                async for data in upstream:
                    if isinstance(data, str):
                        await ws.send_text(data)
                    else:
                        await ws.send_bytes(data)

        tasks = [asyncio.ensure_future(up()), asyncio.ensure_future(down())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await upstream.close()
            with contextlib.suppress(Exception):
                await ws.close()


def _peer_refusal(status: int, body: bytes | bytearray | None, what: str) -> GatewayHTTPError:
    """The holder's own refusal of a forwarded WebSocket, passed on as it was (code and message)."""
    try:
        data: Any = json.loads(body or b"")
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("code"), str):
        message = data.get("error") if isinstance(data.get("error"), str) else data.get("message")
        return GatewayHTTPError(status, data["code"], str(message or f"the {what} refused the connection"))
    return GatewayHTTPError(status if status >= 400 else 502, "holder_refused",
                            f"the process holding this {what} refused the connection")


async def deny(ws: Any, scope: Scope, exc: GatewayHTTPError) -> None:
    """Refuse a WebSocket upgrade with the JSON error (or close 1008 where the server cannot answer HTTP)."""
    if "websocket.http.response" in scope.get("extensions", {}):
        await ws.send_denial_response(exc.response())
    else:
        await ws.close(1008, exc.code)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the already-read body over once, then waits on the real one."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


__all__ = ["PEER_HEADER", "Peers", "deny", "peer_key", "target_of"]
