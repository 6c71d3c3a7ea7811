"""Tencent Yuanbao: a bot's WebSocket connection (protobuf frames), on websockets + httpx.

No SDK or public protocol document exists; the wire facts (``yuanbao_wire``) come from upstream
hermes-agent's adapter and were checked only against the tests' loopback fake. On connect the adapter
signs in (``sign-token``: a token and the bot's id), opens the WebSocket and binds it (``auth-bind``,
answered with a ``connect_id``); a reader task then answers pushes, pairs responses with their requests
by ``msg_id`` and queues messages for :meth:`listen`, and a ping goes every 30 s (two unanswered: the
connection is closed, the supervisor reconnects). A ``kickout`` push or a dropped socket ends
:meth:`listen`.

Chats are ``direct:<account>`` (one-to-one) and ``group:<group code>``. A group message addresses the
bot when it holds an @-mention element (``TIMCustomElem``, ``elem_type`` 1002) naming the bot's id.
Text goes out as ``TIMTextElem`` (4,000 characters a message); the typing signal is the "reply
heartbeat" (running). No edits, buttons, threads or files (Yuanbao's file upload goes through
Tencent COS with credentials this adapter does not fetch): the gateway falls back to plain text.

Voice: an audio element (``TIMSoundElem``) names a resource (``resourceId`` in its URL). Only once the
gateway's access gate lets the message through, ``GET {api}/api/resource/v1/download?resourceId=…``
(headers ``X-ID`` bot id, ``X-Token``, ``X-Source``) gives the file's real URL, which is fetched without
those headers, only over HTTPS from a Tencent host (``*.myqcloud.com``, ``*.tencent.com``, ``*.qq.com``)
or the configured API's own host, without following redirects, at most 25 MB.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import uuid
from datetime import datetime, timedelta, timezone
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
    download_voice,
    save_voice,
)
from hermes.surfaces.messaging.platforms import yuanbao_wire as wire
from hermes.surfaces.messaging.platforms.protowire import Schema, decode, encode

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

API = "https://bot.yuanbao.tencent.com"
WS_URL = "wss://bot-wss.yuanbao.tencent.com/wss/connection"
SIGN_PATH = "/api/v5/robotLogic/sign-token"
#: the integration id upstream hermes-agent sends in ``auth-bind`` (Tencent's list of bot integrations)
INSTANCE_ID = "17"
PING_SECONDS = 30.0
REQUEST_TIMEOUT = 30.0
MENTION_ELEM = 1002
#: push commands that are not a new message (a recall / withdrawal)
NOT_MESSAGES = frozenset({"Group.CallbackAfterRecallMsg", "C2C.CallbackAfterMsgWithDraw"})
MAX_CUSTOM_DATA = 16 * 1024  # a custom element (a mention) is a small JSON object; larger ones are ignored
_END = object()
#: where a voice message's real URL may point (besides the configured API's own host)
MEDIA_DOMAINS = (".myqcloud.com", ".tencent.com", ".qq.com")



class YuanbaoAdapter(PlatformAdapter):
    name = "yuanbao"
    max_text = 4000
    supports_edit = False
    supports_files = False

    def __init__(self, app_key: str, app_secret: str, *, api: str = API, ws_url: str = WS_URL,
                 name: str = "yuanbao", instance_id: str = INSTANCE_ID, ping_seconds: float = PING_SECONDS,
                 voice_dir: Path | None = None) -> None:
        super().__init__()
        #: where voice messages are downloaded to (0600 files, deleted once transcribed)
        self.voice_dir = voice_dir
        self.name = name
        self._app_key, self._app_secret = app_key, app_secret
        self.api, self.ws_url, self.instance_id = api.rstrip("/"), ws_url, instance_id
        self.ping_seconds = ping_seconds
        self.bot_id = ""
        self.connect_id = ""
        self._signed: dict[str, Any] = {}
        self._http: httpx.AsyncClient | None = None
        self._ws: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: dict[str, asyncio.Future[tuple[dict[str, Any], bytes]]] = {}
        self._inbox: asyncio.Queue[object] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._seq = 0

    # -- connecting ------------------------------------------------------------------------------------------

    async def _sign_in(self) -> dict[str, Any]:
        import httpx

        assert self._http is not None
        nonce = secrets.token_hex(16)
        stamp = datetime.now(timezone(timedelta(hours=8))).strftime("%Y-%m-%dT%H:%M:%S+08:00")
        body = {"app_key": self._app_key, "nonce": nonce, "timestamp": stamp,
                "signature": wire.sign(self._app_key, self._app_secret, nonce, stamp)}
        try:
            response = await self._http.post(self.api + SIGN_PATH, json=body)
            answer = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise PlatformError(f"{self.name} sign-token: {type(exc).__name__}: {exc}") from exc
        if response.status_code != 200 or not isinstance(answer, dict) or answer.get("code") != 0 \
                or not isinstance(answer.get("data"), dict):
            said = answer.get("msg") if isinstance(answer, dict) else ""
            raise PlatformError(f"{self.name} sign-token refused (HTTP {response.status_code}): {said}")
        data: dict[str, Any] = answer["data"]
        if not data.get("token") or not data.get("bot_id"):
            raise PlatformError(f"{self.name} sign-token gave no token or bot id")
        return data

    def _next_seq(self) -> int:
        self._seq = (self._seq + 1) & 0xFFFFFFFF
        return self._seq

    async def connect(self) -> None:
        import httpx
        from websockets.asyncio.client import connect

        self._loop = asyncio.get_running_loop()
        self._inbox = asyncio.Queue()
        self._http = httpx.AsyncClient(timeout=30.0)
        signed = self._signed = await self._sign_in()
        self.bot_id = str(signed["bot_id"])
        try:
            self._ws = await asyncio.wait_for(connect(self.ws_url, proxy=None, ping_interval=None), 15)
        except (OSError, TimeoutError) as exc:
            raise PlatformError(f"{self.name}: cannot open the connection: {exc}") from exc
        bind_id = str(uuid.uuid4())
        request = encode(wire.AUTH_BIND_REQ, {
            "biz_id": "ybBot",
            "auth_info": {"uid": self.bot_id, "source": str(signed.get("source") or "bot"), "token": signed["token"]},
            "device_info": {"app_version": "hermes", "app_operation_system": "linux",
                            "instance_id": self.instance_id, "bot_version": "hermes"}})
        await self._ws.send(wire.frame(wire.REQUEST, "auth-bind", bind_id, wire.CONN_MODULE, request,
                                       seq_no=self._next_seq()))
        try:
            async with asyncio.timeout(10):
                while True:
                    head, data = wire.unframe(await self._ws.recv())
                    if head["cmd_type"] == wire.RESPONSE and head["cmd"] == "auth-bind":
                        break
        except (TimeoutError, ValueError, TypeError) as exc:
            raise PlatformError(f"{self.name}: auth-bind was not answered ({type(exc).__name__})") from exc
        except Exception as exc:  # the socket closed under us
            raise PlatformError(f"{self.name}: auth-bind failed: {type(exc).__name__}") from exc
        answer = decode(wire.AUTH_BIND_RSP, data)
        if head["status"] or answer["code"] or not answer["connect_id"]:
            raise PlatformError(f"{self.name}: auth-bind refused (code {answer['code'] or head['status']}): "
                                f"{answer['message']}")
        self.connect_id = answer["connect_id"]
        self._tasks = [asyncio.create_task(self._read(), name=f"{self.name}-read"),
                       asyncio.create_task(self._ping(), name=f"{self.name}-ping")]
        from hermes.tools.yuanbao.link import attach

        attach(self.name, self)

    # -- reading -----------------------------------------------------------------------------------------------

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
                await self._frame(raw)
        except Exception as exc:  # a dropped socket: listen ends and the supervisor reconnects
            logger.info("%s: the connection ended: %s", self.name, type(exc).__name__)
        finally:
            self._fail_pending()
            self._inbox.put_nowait(_END)

    async def _frame(self, raw: Any) -> None:
        try:
            if not isinstance(raw, bytes):
                raise ValueError("a text frame")
            head, data = wire.unframe(raw)
        except (ValueError, RecursionError) as exc:
            self.malformed(str(exc), raw)
            return
        kind, cmd = head["cmd_type"], head["cmd"]
        if kind == wire.RESPONSE:
            waiting = self._pending.pop(head["msg_id"], None)
            if waiting is None and cmd == "ping":  # upstream takes any ping answer as the pong: so do we
                key = next((k for k in self._pending if k.startswith("ping-")), "")
                waiting = self._pending.pop(key, None)
            if waiting is not None and not waiting.done():
                waiting.set_result((head, data))
            return
        if kind != wire.PUSH:
            return
        if head["need_ack"]:
            await self._ws.send(wire.frame(wire.PUSH_ACK, cmd, head["msg_id"], head["module"],
                                           seq_no=self._next_seq()))
        if cmd == "kickout":
            logger.warning("%s: the server closed this connection (kickout)", self.name)
            await self._ws.close()
            return
        if not data:
            return
        try:
            msg = self._inbound(decode(wire.INBOUND_PUSH, data))
        except (ValueError, KeyError, TypeError, RecursionError) as exc:  # any sender can send these
            self.malformed(f"{cmd}: {type(exc).__name__}: {exc}", data[:200])
            return
        if msg is not None:
            self._inbox.put_nowait(msg)

    def _inbound(self, push: dict[str, Any]) -> Inbound | None:
        if push["callback_command"] in NOT_MESSAGES:
            return None
        sender, group = push["from_account"], push["group_code"]
        if not sender:
            raise ValueError("a message without a sender")
        if sender == self.bot_id:
            return None
        words, mentioned, fetch = [], False, None
        message_id = push["msg_id"] or push["msg_key"]
        for element in push["msg_body"]:
            kind, content = element["msg_type"], element["msg_content"]
            if kind == "TIMTextElem":
                words.append(content.get("text", ""))
            elif kind == "TIMCustomElem":
                with contextlib.suppress(ValueError, TypeError, AttributeError, RecursionError):
                    data = content.get("data") or "{}"
                    if len(data) > MAX_CUSTOM_DATA:
                        raise ValueError("custom element too large")
                    custom = json.loads(data)
                    if custom.get("elem_type") == MENTION_ELEM:
                        if str(custom.get("user_id")) == self.bot_id:
                            mentioned = True
                        else:
                            words.append(str(custom.get("text") or ""))
            elif kind == "TIMFaceElem":
                words.append("[sticker]")
            elif kind == "TIMSoundElem" and fetch is None and _resource_id(content.get("url", "")):
                # downloaded only once the access gate lets the message in
                fetch = partial(self._download_voice, _resource_id(content["url"]), message_id)
            elif kind in ("TIMImageElem", "TIMFileElem", "TIMSoundElem", "TIMVideoFileElem"):
                words.append(f"[{kind.removeprefix('TIM').removesuffix('Elem').lower()}]")
        direct = not group
        return Inbound(platform=self.name, chat=f"direct:{sender}" if direct else f"group:{group}", user=sender,
                       user_name=push["sender_nickname"], text=" ".join(w.strip() for w in words if w.strip()),
                       direct=direct, mentioned=direct or mentioned, message_id=message_id, fetch_voice=fetch,
                       extra={"group_name": push["group_name"]} if group else {})

    async def _download_voice(self, resource_id: str, message_id: str) -> str:
        """A voice message's audio: its real URL from the resource API, then the file (see the docstring)."""
        import httpx

        if self._http is None:
            raise PlatformError(f"{self.name}: not connected")
        headers = {"X-ID": self.bot_id, "X-Token": str(self._signed.get("token") or ""),
                   "X-Source": str(self._signed.get("source") or "bot")}
        try:
            found = await self._http.get(f"{self.api}/api/resource/v1/download", params={"resourceId": resource_id},
                                         headers=headers)
            answer = found.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise PlatformError(f"{self.name} resource download: {type(exc).__name__}") from exc
        data = answer.get("data") if isinstance(answer, dict) else None
        if found.status_code != 200 or answer.get("code") not in (None, 0) or not isinstance(data, dict):
            raise PlatformError(f"{self.name} resource download refused (HTTP {found.status_code})")
        url = str(data.get("url") or data.get("realUrl") or "")
        parts, api = urlsplit(url), urlsplit(self.api)
        host = parts.hostname or ""
        if not ((parts.scheme == "https" and host.endswith(MEDIA_DOMAINS))
                or (parts.scheme, parts.netloc) == (api.scheme, api.netloc)):
            raise PlatformError(f"{self.name}: a voice message on an unexpected host {host!r}")
        try:
            status, body = await download_voice(url)
        except httpx.HTTPError as exc:
            raise PlatformError(f"{self.name}: the voice message could not be downloaded: {type(exc).__name__}") \
                from exc
        if body is None:
            raise PlatformError(f"{self.name}: the voice message could not be downloaded (HTTP {status}, "
                                "at most 25 MB)")
        suffix = Path(parts.path).suffix[:6] or ".m4a"
        safe_id = "".join(c for c in message_id if c.isalnum() or c in "-_")[:64] or uuid.uuid4().hex
        return save_voice(self.voice_dir, f"{self.name}-{safe_id}{suffix}", body)

    async def _ping(self) -> None:
        missed = 0
        while True:
            await asyncio.sleep(self.ping_seconds)
            try:
                await self._request("ping", None, {}, module=wire.CONN_MODULE, timeout=min(10.0, self.ping_seconds))
                missed = 0
            except PlatformError:
                missed += 1
                if missed >= 2:
                    logger.warning("%s: two pings unanswered; reconnecting", self.name)
                    with contextlib.suppress(Exception):
                        await self._ws.close()
                    return

    async def listen(self, deliver: Deliver) -> None:
        while True:
            item = await self._inbox.get()
            if item is _END:
                return
            assert isinstance(item, Inbound)
            await deliver(item)

    # -- requests ------------------------------------------------------------------------------------------------

    def _fail_pending(self) -> None:
        for waiting in self._pending.values():
            if not waiting.done():
                waiting.set_exception(PlatformError(f"{self.name}: the connection ended"))
        self._pending.clear()

    async def _request(self, cmd: str, schema: Schema | None, values: dict[str, Any], *,
                       module: str = wire.BIZ_MODULE, timeout: float = REQUEST_TIMEOUT) -> bytes:
        """Send one request and wait for its response's data; PlatformError when refused or unanswered."""
        if self._ws is None or self._loop is None:
            raise PlatformError(f"{self.name}: not connected")
        msg_id = f"{cmd}-{uuid.uuid4().hex}"
        waiting: asyncio.Future[tuple[dict[str, Any], bytes]] = self._loop.create_future()
        self._pending[msg_id] = waiting
        body = encode(schema, values) if schema is not None else b""
        try:
            await self._ws.send(wire.frame(wire.REQUEST, cmd, msg_id, module, body, seq_no=self._next_seq()))
            head, data = await asyncio.wait_for(waiting, timeout)
        except TimeoutError as exc:
            raise PlatformError(f"{self.name} {cmd}: no answer in {timeout:.0f} s") from exc
        except PlatformError:
            raise
        except Exception as exc:
            raise PlatformError(f"{self.name} {cmd}: {type(exc).__name__}") from exc
        finally:
            self._pending.pop(msg_id, None)
        if head["status"]:
            raise PlatformError(f"{self.name} {cmd}: refused (status {head['status']})")
        return data

    async def _on_loop(self, coro: Any) -> Any:
        """Run ``coro`` on the connection's own loop (the tools call from their own threads)."""
        if self._loop is None:
            coro.close()
            raise PlatformError(f"{self.name}: not connected")
        with contextlib.suppress(RuntimeError):
            if asyncio.get_running_loop() is self._loop:
                return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    async def _send_body(self, chat: str, body: list[dict[str, Any]], reply_to: str = "",
                         group_code: str = "") -> str:
        msg_id = f"hermes-{uuid.uuid4().hex}"
        if chat.startswith("group:"):
            await self._request("send_group_message", wire.SEND_GROUP, {
                "msg_id": msg_id, "group_code": chat.removeprefix("group:"), "from_account": self.bot_id,
                "random": secrets.token_hex(4), "msg_body": body, "ref_msg_id": reply_to})
        else:
            await self._request("send_c2c_message", wire.SEND_C2C, {
                "msg_id": msg_id, "to_account": chat.removeprefix("direct:"), "from_account": self.bot_id,
                "msg_random": secrets.randbelow(1 << 31), "msg_body": body, "group_code": group_code})
        return msg_id

    async def send_text(self, chat: str, text: str, thread: str = "") -> str:
        return await self._send_body(chat, wire.text_body(text))

    async def typing(self, chat: str, thread: str = "") -> None:
        if chat.startswith("group:"):
            import time

            schema, values = wire.GROUP_HEARTBEAT, {"from_account": self.bot_id, "group_code": chat[6:],
                                                    "send_time": int(time.time() * 1000)}
            cmd = "send_group_heartbeat"
        else:
            schema, values = wire.PRIVATE_HEARTBEAT, {"from_account": self.bot_id, "to_account": chat[7:]}
            cmd = "send_private_heartbeat"
        with contextlib.suppress(PlatformError):  # a typing signal is best effort
            await self._request(cmd, schema, {**values, "heartbeat": wire.HEARTBEAT_RUNNING}, timeout=5)

    # -- what the Yuanbao tools call (tools/yuanbao/link.py) -----------------------------------------------------

    async def group_info(self, group_code: str) -> dict[str, Any]:
        data = await self._on_loop(self._request("query_group_info", wire.GROUP_INFO_REQ, {"group_code": group_code}))
        answer = decode(wire.GROUP_INFO_RSP, data)
        if answer["code"]:
            raise PlatformError(f"{self.name} query_group_info: {answer['message'] or answer['code']}")
        return dict(answer["group_info"])

    async def group_members(self, group_code: str) -> list[dict[str, Any]]:
        members: list[dict[str, Any]] = []
        offset = 0
        for _ in range(50):  # 200 a page; at most 10,000 members
            data = await self._on_loop(self._request("get_group_member_list", wire.MEMBER_LIST_REQ,
                                                     {"group_code": group_code, "offset": offset, "limit": 200}))
            page = decode(wire.MEMBER_LIST_RSP, data)
            if page["code"]:
                raise PlatformError(f"{self.name} get_group_member_list: {page['message'] or page['code']}")
            members += page["members"]
            if page["is_complete"] or not page["members"] or page["next_offset"] <= offset:
                break
            offset = page["next_offset"]
        return members

    async def send_dm(self, user_id: str, text: str, group_code: str = "") -> str:
        result: str = await self._on_loop(self._send_body(f"direct:{user_id}", wire.text_body(text),
                                                          group_code=group_code))
        return result

    async def send_sticker(self, chat: str, sticker: dict[str, Any], reply_to: str = "") -> str:
        data = json.dumps({k: sticker[k] for k in ("sticker_id", "package_id", "width", "height", "formats", "name")
                           if k in sticker}, ensure_ascii=False, separators=(",", ":"))
        body = [{"msg_type": "TIMFaceElem", "msg_content": {"index": 0, "data": data}}]
        result: str = await self._on_loop(self._send_body(chat, body, reply_to=reply_to))
        return result

    async def close(self) -> None:
        from hermes.tools.yuanbao.link import detach

        detach(self.name, self)
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._fail_pending()
        ws, self._ws = self._ws, None
        http, self._http = self._http, None
        await close_connections(ws, http)


def _resource_id(url: str) -> str:
    """The ``resourceId`` a Yuanbao media URL names ("" when none)."""
    query = parse_qs(urlsplit(url).query)
    found = query.get("resourceId") or query.get("resourceid") or [""]
    return found[0].strip()
