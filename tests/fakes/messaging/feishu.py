"""Feishu on loopback (written from open.feishu.cn's server API docs and the lark-oapi SDK's long
connection): the app token, the long-connection endpoint and its protobuf frames (pings answered,
every event in two ``sum``/``seq`` parts, acknowledgements kept), the message APIs, and the docx and
drive-comment APIs the Feishu tools call. ``webhook_post`` plays Feishu's side of webhook mode."""

from __future__ import annotations

import itertools
import json
import re
import time
import uuid
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fakes.messaging import Driver, Posted
from fakes.messaging.servers import JsonHttp, WsLoop, multipart_parts

APP_ID = "cli_fake0000000001"
APP_SECRET = "feishu-fake-app-secret-do-not-log"
VERIFICATION_TOKEN = "feishu-fake-verification-token"
ENCRYPT_KEY = "feishu-fake-encrypt-key"
BOT = "ou_bot0000"
GROUP = "oc_group0001"
SERVICE = 33
TENANT_TOKEN = "t-fake-tenant-token"
#: the longest text message the fake takes (Feishu's own limit is a request of 150 KB)
TEXT_LIMIT = 8000


class FeishuDriver(Driver):
    name = "feishu"
    group = GROUP
    supports_threads = True
    secrets = (APP_SECRET,)

    def __init__(self, mode: str = "long_connection") -> None:
        super().__init__()
        self.mode = mode
        self.ids = itertools.count(1)
        self.users: dict[str, str] = {}
        self.chat_of: dict[str, str] = {}
        self.pending: list[bytes] = []
        self.acks: list[dict[str, Any]] = []
        self.pings = 0
        self.uploads: dict[str, tuple[str, bytes]] = {}
        self.resources: dict[tuple[str, str], bytes] = {}
        #: document token → text; (file token, comment id) → replies ({reply_id, user_id, content})
        self.documents: dict[str, str] = {}
        self.comments: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.ws = WsLoop(self._session)
        self.http = JsonHttp(self._answer)
        self.url = f"http://127.0.0.1:{self.http.port}"
        self.bot: Any = None

    # -- the long connection ------------------------------------------------------------------------------

    async def _session(self, ws: Any) -> None:
        from hermes.surfaces.messaging.platforms import feishu_wire as wire

        query = parse_qs(urlsplit(ws.request.path).query)
        if query.get("service_id") != [str(SERVICE)] or query.get("device_id") != ["dev1"]:
            await ws.close(1008, "bad connection url")
            return
        self.ws.conns.append(ws)
        for raw in self.pending:
            await ws.send(raw)
        self.pending.clear()
        try:
            async for raw in ws:
                frame = wire.decode(raw)
                if frame.method == wire.CONTROL and frame.header("type") == "ping":
                    self.pings += 1
                    await ws.send(wire.encode(wire.Frame(service=SERVICE, method=wire.CONTROL,
                                                         headers=[("type", "pong")])))
                elif frame.method == wire.DATA:
                    self.acks.append({"message_id": frame.header("message_id"), **json.loads(frame.payload)})
        except Exception:
            pass
        finally:
            if ws in self.ws.conns:
                self.ws.conns.remove(ws)

    def _frames(self, payload: bytes) -> list[bytes]:
        from hermes.surfaces.messaging.platforms import feishu_wire as wire

        message_id = uuid.uuid4().hex
        half = len(payload) // 2
        return [wire.encode(wire.Frame(seq_id=next(self.ids), service=SERVICE, method=wire.DATA, payload=part,
                                       headers=[("type", "event"), ("message_id", message_id), ("sum", "2"),
                                                ("seq", str(seq)), ("trace_id", "tr")]))
                for seq, part in enumerate((payload[:half], payload[half:]))]

    def push(self, event_type: str, event: dict[str, Any], *, raw: bytes | None = None) -> None:
        body = {"schema": "2.0", "header": {"event_id": uuid.uuid4().hex, "event_type": event_type,
                                            "token": VERIFICATION_TOKEN, "app_id": APP_ID,
                                            "create_time": str(int(time.time() * 1000)), "tenant_key": "tk"},
                "event": event}
        if self.mode == "webhook":
            self.webhook_post(body)
            return
        for frame in [raw] if raw is not None else self._frames(json.dumps(body).encode()):
            if not self.ws.send_latest(frame):
                self.pending.append(frame)

    def webhook_post(self, body: dict[str, Any], *, token: str = VERIFICATION_TOKEN, key: str = ENCRYPT_KEY,
                     sign_with: str | None = None, encrypted: bool = True) -> Any:
        """POST ``body`` to the bot's webhook as Feishu does (encrypted and signed with ``key``)."""
        import os

        import httpx

        from hermes.surfaces.messaging.platforms import feishu_wire as wire

        if "header" in body:
            body = {**body, "header": {**body["header"], "token": token}}
        elif body.get("type") == "url_verification":
            body = {**body, "token": token}
        raw = json.dumps({"encrypt": wire.encrypt(json.dumps(body), key, os.urandom(16))} if encrypted
                         else body).encode()
        stamp, nonce = str(int(time.time())), uuid.uuid4().hex
        headers = {"Content-Type": "application/json", "X-Lark-Request-Timestamp": stamp,
                   "X-Lark-Request-Nonce": nonce,
                   "X-Lark-Signature": wire.signature(stamp, nonce, sign_with if sign_with is not None else key, raw)}
        return httpx.post(f"http://127.0.0.1:{self.bot.port}/feishu/events", content=raw, headers=headers,
                          timeout=30)

    # -- the Open Platform API --------------------------------------------------------------------------------

    def _answer(self, method: str, path: str, headers: Any, raw: bytes) -> tuple[int, Any]:
        url = urlsplit(path)
        route, query = url.path, {k: v[0] for k, v in parse_qs(url.query).items()}
        if route == "/open-apis/auth/v3/tenant_access_token/internal":
            body = json.loads(raw)
            if body != {"app_id": APP_ID, "app_secret": APP_SECRET}:
                return 200, {"code": 10014, "msg": "app secret invalid"}
            return 200, {"code": 0, "msg": "ok", "tenant_access_token": TENANT_TOKEN, "expire": 7200}
        if route == "/callback/ws/endpoint":
            if json.loads(raw) != {"AppID": APP_ID, "AppSecret": APP_SECRET}:
                return 200, {"code": 1000040344, "msg": "bad credential"}
            return 200, {"code": 0, "msg": "ok", "data": {
                "URL": f"{self.ws.url}/ws?device_id=dev1&service_id={SERVICE}",
                "ClientConfig": {"ReconnectCount": -1, "ReconnectInterval": 120, "ReconnectNonce": 30,
                                 "PingInterval": 120}}}
        if headers.get("Authorization") != f"Bearer {TENANT_TOKEN}":
            return 401, {"code": 99991663, "msg": "Invalid access token for authorization"}
        if route == "/open-apis/bot/v3/info":
            return 200, {"code": 0, "msg": "ok", "bot": {"open_id": BOT, "app_name": "hermes", "activate_status": 2}}
        if m := re.fullmatch(r"/open-apis/im/v1/messages/([^/]+)/resources/([^/]+)", route):
            found = self.resources.get((m.group(1), m.group(2)))
            return (200, found) if found is not None else (404, {"code": 234003, "msg": "File not in msg."})
        if route.startswith("/open-apis/im/"):
            return self._im(method, route, query, headers, raw)
        return self._docs(method, route, query, raw)

    def _im(self, method: str, route: str, query: dict[str, str], headers: Any, raw: bytes) -> tuple[int, Any]:
        if route == "/open-apis/im/v1/files":
            parts = multipart_parts(headers.get("Content-Type", ""), raw)
            key = f"file_{next(self.ids)}"
            self.uploads[key] = (str(parts["file_name"].get_content()), parts["file"].get_payload(decode=True))
            return 200, {"code": 0, "msg": "ok", "data": {"file_key": key}}
        body = json.loads(raw)
        if route == "/open-apis/im/v1/messages" and method == "POST":
            if query.get("receive_id_type") != "chat_id":
                return 400, {"code": 230001, "msg": "invalid receive_id_type"}
            return self._post(body["receive_id"], "", body)
        if method == "POST" and (m := re.fullmatch(r"/open-apis/im/v1/messages/([^/]+)/reply", route)):
            root = m.group(1)
            return self._post(self.chat_of.get(root, GROUP), root if body.get("reply_in_thread") else "", body)
        if method == "PUT" and (m := re.fullmatch(r"/open-apis/im/v1/messages/([^/]+)", route)):
            mid = m.group(1)
            self.record(Posted("edit", self.chat_of.get(mid, ""), json.loads(body["content"])["text"], "", mid))
            return 200, {"code": 0, "msg": "ok", "data": {"message_id": mid}}
        return 404, {"code": 404, "msg": "not found"}

    def _post(self, chat: str, thread: str, body: dict[str, Any]) -> tuple[int, Any]:
        mid = f"om_{next(self.ids)}"
        self.chat_of[mid] = chat
        content = json.loads(body["content"])
        if body["msg_type"] == "file":
            name, data = self.uploads[content["file_key"]]
            self.record(Posted("file", chat, name, thread, mid, data))
        elif body["msg_type"] == "interactive":  # a card: its text and its buttons
            elements = content["elements"]
            text = "".join(e["text"]["content"] for e in elements if e["tag"] == "div")
            buttons = [b for e in elements if e["tag"] == "action" for b in e["actions"] if b["tag"] == "button"]
            if not buttons or any(not isinstance(b.get("value"), dict) for b in buttons):
                return 400, {"code": 230099, "msg": "invalid card content"}
            self.record(Posted("buttons", chat, text, thread, mid, buttons))
            time.sleep(0.3)  # the card is on screen (and pressable) before the sender has its message id
        else:
            if len(content["text"]) > TEXT_LIMIT:
                return 400, {"code": 230025, "msg": "message content too long"}
            self.record(Posted("text", chat, content["text"], thread, mid))
        return 200, {"code": 0, "msg": "ok", "data": {"message_id": mid, "chat_id": chat, "msg_type": body["msg_type"]}}

    def _docs(self, method: str, route: str, query: dict[str, str], raw: bytes) -> tuple[int, Any]:
        if m := re.fullmatch(r"/open-apis/docx/v1/documents/([^/]+)/raw_content", route):
            if m.group(1) not in self.documents:
                return 404, {"code": 1770002, "msg": "not found"}
            return 200, {"code": 0, "msg": "ok", "data": {"content": self.documents[m.group(1)]}}
        if query.get("file_type") not in ("doc", "docx", "sheet", "file", "slides"):
            return 400, {"code": 1069302, "msg": "param error: file_type"}
        if m := re.fullmatch(r"/open-apis/drive/v1/files/([^/]+)/comments/([^/]+)/replies", route):
            key = (m.group(1), m.group(2))
            if key not in self.comments:
                return 404, {"code": 1069307, "msg": "comment not found"}
            if method == "GET":
                return 200, {"code": 0, "msg": "ok", "data": {"items": self.comments[key], "has_more": False}}
            reply = {"reply_id": f"r{next(self.ids)}", "user_id": BOT, "content": json.loads(raw)["content"]}
            self.comments[key].append(reply)
            self.record(Posted("comment_reply", key[1], _plain(reply["content"]), "", reply["reply_id"]))
            return 200, {"code": 0, "msg": "ok", "data": reply}
        if m := re.fullmatch(r"/open-apis/drive/v1/files/([^/]+)/comments", route):
            token = m.group(1)
            if method == "GET":
                items = [{"comment_id": c, "is_whole": False, "is_solved": False, "quote": "",
                          "reply_list": {"replies": replies}}
                         for (t, c), replies in self.comments.items() if t == token]
                return 200, {"code": 0, "msg": "ok", "data": {"items": items, "has_more": False}}
            cid = f"c{next(self.ids)}"
            replies = json.loads(raw)["reply_list"]["replies"]
            self.comments[(token, cid)] = [{"reply_id": f"r{next(self.ids)}", "user_id": BOT, "content": r["content"]}
                                           for r in replies]
            self.record(Posted("comment", token, _plain(replies[0]["content"]), "", cid))
            return 200, {"code": 0, "msg": "ok", "data": {"comment_id": cid, "is_whole": True}}
        return 404, {"code": 404, "msg": "not found"}

    # -- the people -------------------------------------------------------------------------------------------

    def adapter(self) -> Any:
        from hermes.surfaces.messaging.platforms.feishu import FeishuAdapter

        self.bot = FeishuAdapter(APP_ID, APP_SECRET, base_url=self.url, mode=self.mode, port=0,
                                 verification_token=VERIFICATION_TOKEN, encrypt_key=ENCRYPT_KEY)
        return self.bot

    def user(self, name: str) -> str:
        return self.users.setdefault(name, f"ou_{100 + len(self.users)}")

    def dm_chat(self, user: str) -> str:
        return f"oc_dm_{self.user(user)}"

    def allowed(self, users: list[str]) -> list[str]:
        return [self.user(u) for u in users]

    def message(self, user: str, msg_type: str, content: dict[str, Any], *, direct: bool = False,
                mention: bool = True, thread: str = "") -> dict[str, Any]:
        chat = self.dm_chat(user) if direct else GROUP
        mid = f"om_in{next(self.ids)}"
        self.chat_of[mid] = chat
        message: dict[str, Any] = {"message_id": mid, "chat_id": chat, "chat_type": "p2p" if direct else "group",
                                   "message_type": msg_type, "create_time": str(int(time.time() * 1000))}
        if msg_type == "text" and not direct and mention:
            content = {"text": f"@_user_1 {content['text']}"}
            message["mentions"] = [{"key": "@_user_1", "id": {"open_id": BOT}, "name": "hermes", "tenant_key": "tk"}]
        message["content"] = json.dumps(content)
        if thread:
            self.chat_of[thread] = chat
            message.update(root_id=thread, parent_id=thread, thread_id=f"omt_{thread}")
        return {"sender": {"sender_id": {"open_id": self.user(user)}, "sender_type": "user", "tenant_key": "tk"},
                "message": message}

    def say(self, user: str, text: str, *, direct: bool = False, mention: bool = True, thread: str = "") -> None:
        self.push("im.message.receive_v1", self.message(user, "text", {"text": text}, direct=direct,
                                                        mention=mention, thread=thread))

    def send_voice(self, user: str, audio: bytes) -> None:
        event = self.message(user, "audio", {"file_key": "file_v1", "duration": 1200}, direct=True)
        self.resources[(event["message"]["message_id"], "file_v1")] = audio
        self.push("im.message.receive_v1", event)

    def press(self, user: str, post: Posted, choice: str, *, chat: str | None = None,
               value: dict[str, Any] | None = None) -> None:
        """Press ``choice`` on a card: the ``card.action.trigger`` callback (``chat``/``value`` forge it)."""
        button = next(b for b in post.extra if b["text"]["content"] == choice)
        self.push("card.action.trigger", {
            "operator": {"open_id": self.user(user), "tenant_key": "tk"}, "token": f"c-{uuid.uuid4().hex}",
            "action": {"tag": "button", "value": value if value is not None else button["value"]},
            "host": "im_message",
            "context": {"open_message_id": post.message_id, "open_chat_id": chat or post.chat}})

    def drop(self) -> None:
        self.ws.drop()

    def malformed(self) -> None:
        self.push("", {}, raw=b"\x0a\xff\xff")  # not a frame
        self.push("im.message.receive_v1", {"message": {"content": "{}"}})  # no sender, no chat

    def close(self) -> None:
        self.http.close()
        self.ws.close()


def _plain(content: dict[str, Any]) -> str:
    return "".join(e["text_run"]["text"] for e in content["elements"] if e["type"] == "text_run")
