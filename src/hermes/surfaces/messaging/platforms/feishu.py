"""Feishu / Lark: events over the long connection (or a webhook), answers through the Open Platform API.

Written from the Open Platform docs (event subscription, ``im.message.receive_v1``, the message APIs)
and the lark-oapi SDK's long-connection client, on websockets + httpx (the frame codec and the
webhook checks are in :mod:`~hermes.surfaces.messaging.platforms.feishu_wire`).

**Receiving.** ``mode: long_connection`` (the default; no public address needed, and the only way
document-comment events arrive): ``POST /callback/ws/endpoint`` gives a WebSocket URL whose
``service_id`` the pings carry; every data frame is acknowledged. ``mode: webhook``: the adapter
serves ``POST {path}`` itself (put HTTPS in front of it); a request whose Verification Token is wrong,
whose signature does not match (with an Encrypt Key) or that is not encrypted when a key is set gets
401; the URL verification's ``challenge`` is answered. Events are taken once (``event_id``), so
Feishu's redeliveries are not answered twice.

A ``p2p`` chat is a direct conversation; in groups a message addresses the bot when its ``mentions``
include the bot's ``open_id`` (``GET /open-apis/bot/v3/info``); the mention's placeholder
(``@_user_1``) is removed from the text. A topic (``thread_id``) is its own conversation, keyed by its
root message, and answered with ``reply_in_thread``. A voice message (``audio``) is downloaded from the
message's resources for the gateway to transcribe. ``drive.notice.comment_add_v1`` events go to
:attr:`FeishuAdapter.on_comment` (the document-comment handler), not to a chat.

**Sending.** ``POST /open-apis/im/v1/messages?receive_id_type=chat_id`` (text), ``…/{id}/reply`` in
topics, ``PUT /open-apis/im/v1/messages/{id}`` to edit, files by ``POST /open-apis/im/v1/files`` then a
``file`` message. Feishu has no typing signal for bots.

**Buttons.** Clarify questions and approvals go out as an ``interactive`` card (card JSON: the text and
an ``action`` row of buttons whose ``value`` is the choice's index and a random per-card nonce). A
press arrives as the ``card.action.trigger`` callback — over the long connection (a data frame, type
``event`` or ``card``), or at the webhook URL, where it passes the same Verification Token, signature
and decryption checks as any event. It is taken only when its ``context.open_message_id`` is a card
this adapter sent, in that card's chat (``open_chat_id``), with that card's nonce and a choice index
the card has; anything else is logged and dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from hermes.surfaces.messaging.adapter import (
    Deliver,
    Inbound,
    PlatformAdapter,
    PlatformError,
    close_connections,
    save_voice,
)
from hermes.surfaces.messaging.platforms import feishu_wire as wire
from hermes.surfaces.messaging.platforms.httpserve import AppServer
from hermes.vendors.feishu import FEISHU, FeishuApi, FeishuError, text_content

if TYPE_CHECKING:
    from starlette.requests import Request as HttpRequest
    from starlette.responses import Response

logger = logging.getLogger(__name__)

MESSAGES = "/open-apis/im/v1/messages"
COMMENT_EVENT = "drive.notice.comment_add_v1"
CARD_ACTION = "card.action.trigger"
#: cards remembered for their presses, and the most buttons one card gets
CARDS_KEPT = 512
MAX_BUTTONS = 20
#: event ids remembered to drop redeliveries
SEEN_EVENTS = 2048


class FeishuAdapter(PlatformAdapter):
    name = "feishu"
    max_text = 8000
    supports_threads = True
    supports_buttons = True

    def __init__(self, app_id: str, app_secret: str, *, base_url: str = FEISHU, mode: str = "long_connection",
                 verification_token: str = "", encrypt_key: str = "", host: str = "127.0.0.1", port: int = 8643,
                 path: str = "/feishu/events", name: str = "feishu", voice_dir: Path | None = None) -> None:
        super().__init__()
        self.name, self.mode = name, mode
        self.app_id, self._secret = app_id, app_secret
        self.base_url = base_url.rstrip("/")
        self._token, self._key = verification_token, encrypt_key
        self.path = path
        self.voice_dir = voice_dir
        self.bot_open_id = ""
        #: the document-comment handler (set by the gateway's builder); None: comment events are skipped
        self.on_comment: Callable[[dict[str, Any]], Awaitable[None]] | None = None
        self._serving = AppServer(name, host, port)
        self._api: FeishuApi | None = None
        self._ws: Any = None
        self._service = 0
        self._ping_every = 120.0
        self._deliver: Deliver | None = None
        self._parts: dict[str, list[bytes | None]] = {}
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._comments: set[asyncio.Task[None]] = set()
        #: card message id → (chat, thread, nonce, choices); chats seen as one-to-one (p2p)
        self._cards: OrderedDict[str, tuple[str, str, str, list[str]]] = OrderedDict()
        self._p2p: set[str] = set()
        #: cards being sent: a press can arrive before the send's answer gives the card's id
        self._card_sends: set[asyncio.Event] = set()

    @property
    def port(self) -> int:
        return self._serving.port

    @property
    def api(self) -> FeishuApi:
        if self._api is None:
            raise PlatformError(f"{self.name}: not connected")
        return self._api

    async def connect(self) -> None:
        # one short-lived HTTP connection per call: a send still in flight when the long connection drops
        # (and the adapter is closed and reconnected) finishes on its own connection instead of being cut
        self._api = self._api or FeishuApi(self.app_id, self._secret, base_url=self.base_url)
        try:
            info = await self._api.call("GET", "/open-apis/bot/v3/info")
            self.bot_open_id = str((info.get("bot") or {}).get("open_id") or "")
            if self.mode == "webhook":
                from starlette.applications import Starlette
                from starlette.routing import Route

                self._serving.start(Starlette(routes=[Route(self.path, self._webhook, methods=["POST"])]))
                return
            endpoint = await self._api.ws_endpoint()
        except FeishuError as exc:
            raise PlatformError(f"{self.name}: {exc}") from exc
        from websockets.asyncio.client import connect

        self._ping_every = endpoint.ping_interval
        query = parse_qs(urlsplit(endpoint.url).query)
        self._service = int((query.get("service_id") or ["0"])[0] or 0)
        try:
            self._ws = await asyncio.wait_for(connect(endpoint.url, proxy=None), 20)
        except (OSError, TimeoutError) as exc:
            raise PlatformError(f"{self.name}: cannot open the long connection: {type(exc).__name__}") from exc

    async def listen(self, deliver: Deliver) -> None:
        self._deliver = deliver
        if self.mode == "webhook":
            await self._serving.serve()
            return
        from websockets.exceptions import ConnectionClosed

        pinger = asyncio.create_task(self._ping())
        try:
            while True:
                try:
                    raw = await self._ws.recv()
                except ConnectionClosed:
                    return
                await self._frame(raw)
        finally:
            pinger.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pinger

    async def close(self) -> None:
        await self._serving.stop()
        ws, self._ws = self._ws, None
        await close_connections(ws, None)

    # -- the long connection ------------------------------------------------------------------------------

    async def _ping(self) -> None:
        while True:
            with contextlib.suppress(Exception):
                await self._ws.send(wire.encode(wire.Frame(service=self._service, method=wire.CONTROL,
                                                           headers=[("type", "ping")])))
            await asyncio.sleep(max(1.0, self._ping_every))

    async def _frame(self, raw: Any) -> None:
        try:
            if not isinstance(raw, bytes):
                raise ValueError("a text frame")
            frame = wire.decode(raw)
        except ValueError as exc:
            self.malformed(f"frame: {exc}", raw)
            return
        kind = frame.header("type")
        if frame.method == wire.CONTROL:
            if kind == "pong" and frame.payload:
                with contextlib.suppress(ValueError, TypeError, AttributeError):
                    self._ping_every = float(json.loads(frame.payload).get("PingInterval") or self._ping_every)
            return
        payload: bytes | None = frame.payload
        total = int(frame.header("sum") or 1)
        if total > 1:
            payload = self._combine(frame.header("message_id"), total, int(frame.header("seq") or 0), frame.payload)
        started = time.monotonic()
        if payload is not None and kind in ("event", "card"):
            await self._event_bytes(payload)
        ack = wire.Frame(frame.seq_id, frame.log_id, frame.service, frame.method,
                         [*frame.headers, ("biz_rt", str(int((time.monotonic() - started) * 1000)))],
                         json.dumps({"code": 200}).encode(), log_id_new=frame.log_id_new)
        with contextlib.suppress(Exception):
            await self._ws.send(wire.encode(ack))

    def _combine(self, message_id: str, total: int, seq: int, part: bytes) -> bytes | None:
        parts = self._parts.setdefault(message_id, [None] * total)
        if 0 <= seq < len(parts):
            parts[seq] = part
        if any(p is None for p in parts):
            return None
        del self._parts[message_id]
        return b"".join(p or b"" for p in parts)

    # -- the webhook ------------------------------------------------------------------------------------------

    async def _webhook(self, request: HttpRequest) -> Response:
        from starlette.responses import JSONResponse

        body = await request.body()
        try:
            outer = json.loads(body)
            if not isinstance(outer, dict):
                raise ValueError("not an object")
            if self._key and "encrypt" not in outer:
                raise PermissionError("the event is not encrypted, but an Encrypt Key is set")
            event = json.loads(wire.decrypt(str(outer["encrypt"]), self._key)) if "encrypt" in outer else outer
            if not isinstance(event, dict):
                raise ValueError("not an object")
        except PermissionError as exc:
            logger.warning("%s: refused an event: %s", self.name, exc)
            return JSONResponse({"msg": "unauthorized"}, status_code=401)
        except (ValueError, KeyError, TypeError) as exc:
            self.malformed(f"webhook body: {type(exc).__name__}", "")
            return JSONResponse({"msg": "bad request"}, status_code=400)
        token = event.get("token") if event.get("type") == "url_verification" else \
            (event.get("header") or {}).get("token")
        if not self._token or token != self._token:
            logger.warning("%s: refused an event: wrong verification token", self.name)
            return JSONResponse({"msg": "unauthorized"}, status_code=401)
        if event.get("type") == "url_verification":
            return JSONResponse({"challenge": event.get("challenge")})
        head = request.headers
        if self._key and not wire.signed(head.get("x-lark-request-timestamp", ""), head.get("x-lark-request-nonce", ""),
                                         self._key, body, head.get("x-lark-signature", "")):
            logger.warning("%s: refused an event: the signature does not match", self.name)
            return JSONResponse({"msg": "unauthorized"}, status_code=401)
        await self._event(event)
        return JSONResponse({"msg": "success"})

    # -- events ---------------------------------------------------------------------------------------------

    async def _event_bytes(self, payload: bytes) -> None:
        try:
            event = json.loads(payload)
            if not isinstance(event, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            self.malformed(f"event: {exc}", payload)
            return
        await self._event(event)

    async def _event(self, event: dict[str, Any]) -> None:
        found = event.get("header")
        header: dict[str, Any] = found if isinstance(found, dict) else {}
        event_id = str(header.get("event_id") or "")
        if event_id:
            if event_id in self._seen:
                return
            self._seen[event_id] = None
            while len(self._seen) > SEEN_EVENTS:
                self._seen.popitem(last=False)
        kind = header.get("event_type")
        try:
            if kind == COMMENT_EVENT:
                if self.on_comment is not None:  # a sub-agent's run: beside the connection, not in its way
                    task = asyncio.create_task(self._comment(self.on_comment, dict(event["event"])))
                    self._comments.add(task)
                    task.add_done_callback(self._comments.discard)
                return
            if kind == CARD_ACTION:
                msg = await self._press(event["event"])
            elif kind != "im.message.receive_v1":
                return  # events this adapter does not answer (chat member changes, reactions …)
            else:
                msg = await self._inbound(event["event"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self.malformed(f"{kind}: {type(exc).__name__}: {exc}", event)
            return
        except (PlatformError, FeishuError) as exc:
            logger.warning("%s: skipped an event: %s", self.name, exc)
            return
        if msg is not None and self._deliver is not None:
            await self._deliver(msg)

    async def _comment(self, handler: Callable[[dict[str, Any]], Awaitable[None]], event: dict[str, Any]) -> None:
        try:
            await handler(event)
        except Exception as exc:  # a failed answer never touches the connection
            logger.warning("%s: a document comment could not be answered: %s: %s", self.name,
                           type(exc).__name__, exc)

    async def _inbound(self, event: dict[str, Any]) -> Inbound | None:
        message, sender = event["message"], event["sender"]
        content = json.loads(message["content"])
        kind = message["message_type"]
        user = str(sender["sender_id"]["open_id"])
        if user == self.bot_open_id:
            return None
        fetch = None
        if kind == "audio":  # downloaded only once the access gate lets the message in
            fetch = partial(self._download, str(message["message_id"]), str(content["file_key"]))
            text = ""
        elif kind == "text":
            text = str(content["text"])
        else:
            return None  # images, stickers, posts …
        direct = message["chat_type"] == "p2p"
        if direct:
            self._p2p.add(str(message["chat_id"]))
        mentioned = direct
        for mention in message.get("mentions") or []:
            if str((mention.get("id") or {}).get("open_id") or "") == self.bot_open_id and self.bot_open_id:
                mentioned = True
                text = text.replace(str(mention.get("key") or "\0"), "")
        thread = str(message.get("root_id") or "") if message.get("thread_id") else ""
        return Inbound(platform=self.name, chat=str(message["chat_id"]), user=user, text=text.strip(),
                       thread=thread, direct=direct, mentioned=mentioned,
                       from_bot=sender.get("sender_type") not in (None, "user"),
                       message_id=str(message["message_id"]), fetch_voice=fetch)

    async def _press(self, event: dict[str, Any]) -> Inbound | None:
        """A button press on one of this adapter's cards (see the module docstring), else None."""
        context, value = event["context"], event["action"]["value"]
        card = str(context["open_message_id"])
        if card not in self._cards and self._card_sends:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(e.wait() for e in list(self._card_sends))), 10)
        found = self._cards.get(card)
        if found is None or not isinstance(value, dict):
            logger.warning("%s: dropped a card action for a card it did not send", self.name)
            return None
        chat, thread, nonce, choices = found
        index = str(value.get("hc", ""))
        same_card = secrets.compare_digest(str(value.get("card", "")), nonce)
        if str(context.get("open_chat_id") or "") != chat or not same_card or not index.isdigit() \
                or int(index) >= len(choices):
            logger.warning("%s: dropped a card action that does not match its card", self.name)
            return None
        operator = event["operator"]
        return Inbound(platform=self.name, chat=chat, user=str(operator["open_id"]), text=choices[int(index)],
                       thread=thread, direct=chat in self._p2p, mentioned=True, button=True, card=card)

    async def _download(self, message_id: str, file_key: str) -> str:
        """A voice message's audio (the message's resource), saved 0600 under :attr:`voice_dir`."""
        data = await self.api.download(f"{MESSAGES}/{message_id}/resources/{file_key}", params={"type": "file"})
        return save_voice(self.voice_dir, f"{self.name}-{message_id}.opus", data)

    # -- sending ------------------------------------------------------------------------------------------------

    async def _send(self, chat: str, thread: str, msg_type: str, content: str) -> str:
        try:
            if thread:
                sent = await self.api.call("POST", f"{MESSAGES}/{thread}/reply", body={
                    "msg_type": msg_type, "content": content, "reply_in_thread": True})
            else:
                sent = await self.api.call("POST", MESSAGES, params={"receive_id_type": "chat_id"}, body={
                    "receive_id": chat, "msg_type": msg_type, "content": content})
        except FeishuError as exc:
            raise PlatformError(f"{self.name}: {exc}") from exc
        return str(sent.get("message_id") or "")

    async def send_text(self, chat: str, text: str, thread: str = "") -> str:
        return await self._send(chat, thread, "text", text_content(text))

    async def send_buttons(self, chat: str, text: str, choices: Sequence[str], thread: str = "") -> str:
        nonce = secrets.token_hex(8)
        kept = list(choices[:MAX_BUTTONS])
        buttons = [{"tag": "button", "text": {"tag": "plain_text", "content": c[:100]},
                    "type": "default" if c == "skip" else "primary", "value": {"hc": str(i), "card": nonce}}
                   for i, c in enumerate(kept)]
        card = {"config": {"wide_screen_mode": True},
                "elements": [{"tag": "div", "text": {"tag": "plain_text", "content": text}},
                             {"tag": "action", "actions": buttons}]}
        sending = asyncio.Event()
        self._card_sends.add(sending)
        try:
            message_id = await self._send(chat, thread, "interactive", json.dumps(card, ensure_ascii=False))
            self._cards[message_id] = (chat, thread, nonce, kept)
        finally:
            sending.set()
            self._card_sends.discard(sending)
        while len(self._cards) > CARDS_KEPT:
            self._cards.popitem(last=False)
        return message_id

    async def edit_text(self, chat: str, message_id: str, text: str, thread: str = "") -> None:
        try:
            await self.api.call("PUT", f"{MESSAGES}/{message_id}", body={"msg_type": "text",
                                                                           "content": text_content(text)})
        except FeishuError as exc:
            raise PlatformError(f"{self.name}: {exc}") from exc

    async def send_file(self, chat: str, path: Path, caption: str = "", thread: str = "") -> str:
        try:
            uploaded = await self.api.call("POST", "/open-apis/im/v1/files",
                                           files={"file": (path.name, path.read_bytes())},
                                           form={"file_type": "stream", "file_name": path.name})
        except FeishuError as exc:
            raise PlatformError(f"{self.name}: the file upload failed: {exc}") from exc
        return await self._send(chat, thread, "file", json.dumps({"file_key": uploaded["file_key"]}))
