"""Tencent Yuanbao on loopback: the sign-token endpoint and the bot WebSocket's protobuf frames.

Speaks what ``hermes.surfaces.messaging.platforms.yuanbao_wire`` documents (facts read from upstream
hermes-agent's adapter; Tencent publishes no protocol): ``sign-token`` checks the HMAC signature and
the app key, the socket must ``auth-bind`` with the token it issued before anything else, pushes ask for
an acknowledgement, every request is answered under its ``msg_id``, a group's info and members are
served in pages, and a voice message's resource resolves (to the bot's token only) to a file URL."""

from __future__ import annotations

import hmac
import itertools
import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fakes.messaging import Driver, Posted
from fakes.messaging.servers import JsonHttp, WsLoop
from hermes.surfaces.messaging.platforms import yuanbao_wire as wire
from hermes.surfaces.messaging.platforms.protowire import decode, encode

APP_KEY = "yb-app-4471"
APP_SECRET = "yb-secret-7e1d0c55a9b24f6f"
TOKEN = "yb-ws-token-93f0aa71c2d84e1b"
BOT_ID = "bot-hermes-01"
GROUP = "g100"
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+08:00")


class YuanbaoDriver(Driver):
    name = "yuanbao"
    group = f"group:{GROUP}"
    supports_files = False
    supports_edit = False
    secrets = (APP_SECRET, TOKEN)

    def __init__(self) -> None:
        super().__init__()
        self.ids = itertools.count(1)
        self.users: dict[str, str] = {}
        self.nicknames: dict[str, str] = {}
        self.pending: list[bytes] = []
        self.acked: list[str] = []
        self.typing: list[str] = []
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.bound: list[dict[str, Any]] = []
        #: resource id → audio; the headers of every resource lookup and of every file fetch
        self.resources: dict[str, bytes] = {}
        self.resource_asks: list[dict[str, str]] = []
        self.file_fetches: list[dict[str, str]] = []
        self.voice_dir: Any = None
        #: what the resource API answers as the file's URL instead of its own (a test of the host check)
        self.resource_url = ""
        #: pings: whether they are answered, and under which msg_id (None: the ping's own)
        self.answer_pings = True
        self.ping_reply_id: str | None = None
        #: members of GROUP beyond the people who spoke: (user_id, nickname, user type)
        self.members: list[tuple[str, str, int]] = [(BOT_ID, "hermes", 3), ("yb-ai", "Yuanbao", 2)]
        self.ws = WsLoop(self._session)
        self.http = JsonHttp(self._answer)
        self.api = f"http://127.0.0.1:{self.http.port}"

    # -- sign-token --------------------------------------------------------------------------------------------

    def _answer(self, method: str, path: str, headers: Any, raw: bytes) -> tuple[int, Any]:
        seen = {k: str(headers.get(k) or "") for k in ("X-ID", "X-Token", "X-Source")}
        if method == "GET" and path.startswith("/api/resource/v1/download?"):
            self.resource_asks.append(seen)
            rid = (parse_qs(urlsplit(path).query).get("resourceId") or [""])[0]
            if seen["X-Token"] != TOKEN or seen["X-ID"] != BOT_ID:
                return 401, {"code": 401, "msg": "unauthorized"}
            if rid not in self.resources:
                return 200, {"code": 404, "msg": "no such resource"}
            return 200, {"code": 0, "data": {"url": self.resource_url or f"{self.api}/cos/{rid}.m4a?sign=q-sig"}}
        if method == "GET" and path.startswith("/cos/"):  # the storage's signed URL: no bot headers wanted
            self.file_fetches.append(seen)
            found = self.resources.get(urlsplit(path).path.removeprefix("/cos/").removesuffix(".m4a"))
            return (200, found) if found is not None else (404, {"code": 404})
        if method != "POST" or path != "/api/v5/robotLogic/sign-token":
            return 404, {"code": 404, "msg": "not found"}
        body = json.loads(raw or b"{}")
        if body.get("app_key") != APP_KEY or not STAMP.fullmatch(str(body.get("timestamp"))):
            return 200, {"code": 10001, "msg": "invalid app_key or timestamp"}
        expected = wire.sign(APP_KEY, APP_SECRET, str(body.get("nonce")), str(body["timestamp"]))
        if not body.get("nonce") or not hmac.compare_digest(expected, str(body.get("signature"))):
            return 200, {"code": 10002, "msg": "invalid signature"}
        return 200, {"code": 0, "msg": "ok", "data": {"token": TOKEN, "bot_id": BOT_ID, "source": "bot",
                                                      "duration": 3600, "product": "yuanbao"}}

    # -- the socket -----------------------------------------------------------------------------------------------

    async def _session(self, ws: Any) -> None:
        try:
            head, data = wire.unframe(await ws.recv())
            bind = decode(wire.AUTH_BIND_REQ, data)
            ok = head["cmd"] == "auth-bind" and bind["auth_info"].get("token") == TOKEN \
                and bind["auth_info"].get("uid") == BOT_ID
            self.bound.append(bind)
            answer = {"code": 0, "connect_id": f"conn-{next(self.ids)}"} if ok else {"code": 41, "message": "bad token"}
            await ws.send(wire.frame(wire.RESPONSE, "auth-bind", head["msg_id"], wire.CONN_MODULE,
                                     encode(wire.AUTH_BIND_RSP, answer)))
            if not ok:
                await ws.close()
                return
            self.ws.conns.append(ws)
            for raw in self.pending:
                await ws.send(raw)
            self.pending.clear()
            async for raw in ws:
                await self._request(ws, raw)
        except Exception:
            pass
        finally:
            if ws in self.ws.conns:
                self.ws.conns.remove(ws)

    async def _request(self, ws: Any, raw: bytes) -> None:
        head, data = wire.unframe(raw)
        cmd = head["cmd"]
        if head["cmd_type"] == wire.PUSH_ACK:
            self.acked.append(head["msg_id"])
            return
        if cmd == "ping":
            self.requests.append((cmd, {}))
            if self.answer_pings:
                reply_id = head["msg_id"] if self.ping_reply_id is None else self.ping_reply_id
                await ws.send(wire.frame(wire.RESPONSE, cmd, reply_id, head["module"]))
            return
        schema = wire.REQUESTS.get(cmd)
        body = decode(schema, data) if schema is not None else {}
        self.requests.append((cmd, body))
        answer, status = b"", 0
        if cmd in ("send_c2c_message", "send_group_message"):
            chat = f"group:{body['group_code']}" if cmd == "send_group_message" else f"direct:{body['to_account']}"
            for element in body["msg_body"]:
                content = element["msg_content"]
                if element["msg_type"] == "TIMTextElem":
                    self.record(Posted("text", chat, content["text"], "", body["msg_id"]))
                elif element["msg_type"] == "TIMFaceElem":
                    self.record(Posted("sticker", chat, json.loads(content["data"])["name"], "", body["msg_id"],
                                       json.loads(content["data"])))
        elif cmd in ("send_private_heartbeat", "send_group_heartbeat"):
            self.typing.append(body.get("to_account") or body.get("group_code", ""))
        elif cmd == "query_group_info":
            if body["group_code"] != GROUP:
                answer = encode(wire.GROUP_INFO_RSP, {"code": 4004, "message": "group not found"})
            else:
                answer = encode(wire.GROUP_INFO_RSP, {"group_info": {
                    "group_name": "Hermes testers", "group_owner_user_id": self._user("alice"),
                    "group_owner_nickname": "alice", "group_size": len(self._members())}})
        elif cmd == "get_group_member_list":
            members = self._members()
            start, limit = body["offset"], body["limit"] or 200
            page = members[start:start + limit]
            answer = encode(wire.MEMBER_LIST_RSP, {
                "members": [{"user_id": u, "nickname": n, "user_type": t} for u, n, t in page],
                "next_offset": start + len(page), "is_complete": int(start + len(page) >= len(members))})
        else:
            status = 404
        await ws.send(wire.frame(wire.RESPONSE, cmd, head["msg_id"], head["module"], answer, status=status))

    def _members(self) -> list[tuple[str, str, int]]:
        return [(u, n, 1) for n, u in self.users.items()] + self.members

    def _push(self, push: dict[str, Any]) -> None:
        raw = wire.frame(wire.PUSH, "inbound_message", f"push-{next(self.ids)}", wire.BIZ_MODULE,
                         encode(wire.INBOUND_PUSH, push), need_ack=True)
        if not self.ws.send_latest(raw):
            self.pending.append(raw)

    # -- the people ---------------------------------------------------------------------------------------------------

    def adapter(self) -> Any:
        from hermes.surfaces.messaging.platforms.yuanbao import YuanbaoAdapter

        return YuanbaoAdapter(APP_KEY, APP_SECRET, api=self.api, ws_url=self.ws.url, voice_dir=self.voice_dir)

    def _user(self, name: str) -> str:
        return self.users.setdefault(name, f"u-{name}")

    def dm_chat(self, user: str) -> str:
        return f"direct:{self._user(user)}"

    def allowed(self, users: list[str]) -> list[str]:
        return [self._user(u) for u in users]

    def say(self, user: str, text: str, *, direct: bool = False, mention: bool = True, thread: str = "") -> None:
        body: list[dict[str, Any]] = []
        if mention and not direct:
            body.append({"msg_type": "TIMCustomElem", "msg_content": {"data": json.dumps(
                {"elem_type": 1002, "text": "@hermes", "user_id": BOT_ID})}})
        body.append({"msg_type": "TIMTextElem", "msg_content": {"text": text}})
        n = next(self.ids)
        push: dict[str, Any] = {"from_account": self._user(user), "sender_nickname": user, "msg_body": body,
                                "msg_seq": n, "msg_id": f"m{n}", "msg_time": 1_760_000_000 + n}
        if direct:
            push.update(callback_command="C2C.CallbackAfterSendMsg", to_account=BOT_ID)
        else:
            push.update(callback_command="Group.CallbackAfterSendMsg", group_code=GROUP, group_name="Hermes testers")
        self._push(push)

    def say_voice(self, user: str, audio: bytes) -> None:
        """A voice message in a direct chat: a ``TIMSoundElem`` naming its resource."""
        n = next(self.ids)
        self.resources[f"r{n}"] = audio
        self._push({"callback_command": "C2C.CallbackAfterSendMsg", "from_account": self._user(user),
                    "to_account": BOT_ID, "sender_nickname": user, "msg_id": f"m{n}", "msg_seq": n,
                    "msg_body": [{"msg_type": "TIMSoundElem", "msg_content": {
                        "url": f"https://hunyuan.tencent.com/api/resource/download?resourceId=r{n}",
                        "file_size": len(audio)}}]})

    def drop(self) -> None:
        self.ws.drop()

    def malformed(self) -> None:
        self.ws.send_latest(b"\x0a\xff\x01")  # a ConnMsg whose head runs past the frame
        self._push({"callback_command": "C2C.CallbackAfterSendMsg", "msg_body": []})  # no sender
        n = next(self.ids)  # a custom element nested past any parser's depth (json.loads: RecursionError)
        self._push({"callback_command": "C2C.CallbackAfterSendMsg", "from_account": self._user("mallory"),
                    "to_account": BOT_ID, "sender_nickname": "mallory", "msg_id": f"m{n}", "msg_seq": n,
                    "msg_body": [{"msg_type": "TIMCustomElem", "msg_content": {"data": "[" * 5000}}]})

    def close(self) -> None:
        self.http.close()
        self.ws.close()
