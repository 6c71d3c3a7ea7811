"""Discord on loopback (written from discord.com/developers/docs): a Gateway (WebSocket, JSON) and the
REST calls the adapter makes (``/gateway/bot``, channel messages with components and files, edits,
typing, interaction callbacks)."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from fakes.messaging import Driver, Posted
from fakes.messaging.servers import JsonHttp, WsLoop, multipart_parts

TOKEN = "MTIz.discord-fake-token.do-not-log-Zq"
BOT_ID = "999"
GUILD = "500"
CHANNEL = "700"


class DiscordDriver(Driver):
    name = "discord"
    group = CHANNEL
    secrets = (TOKEN,)
    thread_note = "a Discord thread is a channel of its own, so it is its own conversation already"

    def __init__(self) -> None:
        super().__init__()
        self.ids = itertools.count(10_000)
        self.users: dict[str, str] = {}
        self.pending: list[dict[str, Any]] = []
        self.seq = itertools.count(2)
        self.attachments: dict[str, bytes] = {}
        self.attachment_auth: list[str | None] = []
        self.ws = WsLoop(self._session)
        self.http = JsonHttp(self._answer)
        self.url = f"http://127.0.0.1:{self.http.port}/api/v10"

    async def _session(self, ws: Any) -> None:
        await ws.send(json.dumps({"op": 10, "d": {"heartbeat_interval": 41250}}))
        identify = json.loads(await ws.recv())
        if identify.get("op") != 2 or identify["d"].get("token") != TOKEN:
            await ws.close(4004, "Authentication failed.")
            return
        await ws.send(json.dumps({"op": 0, "t": "READY", "s": 1, "d": {
            "v": 10, "user": {"id": BOT_ID, "username": "hermes", "bot": True}, "session_id": "s1", "guilds": []}}))
        self.ws.conns.append(ws)
        for event in self.pending:
            await ws.send(json.dumps(event))
        self.pending.clear()
        try:
            async for raw in ws:
                if json.loads(raw).get("op") == 1:
                    await ws.send(json.dumps({"op": 11}))
        except Exception:
            pass
        finally:
            if ws in self.ws.conns:
                self.ws.conns.remove(ws)

    def _push(self, kind: str, data: Any, *, raw: str | None = None) -> None:
        event = {"op": 0, "t": kind, "s": next(self.seq), "d": data}
        if not self.ws.send_latest(raw if raw is not None else json.dumps(event)) and raw is None:
            self.pending.append(event)  # delivered when the bot identifies again

    # -- REST ----------------------------------------------------------------------------------------------

    def _answer(self, method: str, path: str, headers: Any, raw: bytes) -> tuple[int, Any]:
        if path.startswith("/attachments/"):  # the CDN: signed URLs, no token (and none may be sent)
            self.attachment_auth.append(headers.get("Authorization"))
            found = self.attachments.get(path)
            return (200, found) if found is not None else (404, {"message": "404: Not Found"})
        if headers.get("Authorization") != f"Bot {TOKEN}":
            return 401, {"message": "401: Unauthorized", "code": 0}
        return self.rest(method, path.removeprefix("/api/v10"), headers.get("Content-Type", ""), raw)

    def rest(self, method: str, path: str, ctype: str, raw: bytes) -> tuple[int, Any]:
        if path == "/gateway/bot":
            return 200, {"url": self.ws.url, "shards": 1}
        if re.fullmatch(r"/channels/\d+/typing", path) or re.fullmatch(r"/interactions/\d+/[^/]+/callback", path):
            return 204, None
        if m := re.fullmatch(r"/channels/(\d+)/messages", path):
            chat = m.group(1)
            mid = str(next(self.ids))
            if ctype.startswith("multipart/form-data"):
                upload = multipart_parts(ctype, raw)["files[0]"]
                self.record(Posted("file", chat, str(upload.get_filename()), "", mid, upload.get_payload(decode=True)))
                return 200, {"id": mid, "channel_id": chat}
            body = json.loads(raw)
            content = str(body.get("content") or "")
            if len(content) > 2000:
                return 400, {"message": "Invalid Form Body", "code": 50035}
            kind = "buttons" if body.get("components") else "text"
            self.record(Posted(kind, chat, content, "", mid, body.get("components")))
            return 200, {"id": mid, "channel_id": chat, "content": content}
        if method == "PATCH" and (m := re.fullmatch(r"/channels/(\d+)/messages/(\d+)", path)):
            body = json.loads(raw)
            self.record(Posted("edit", m.group(1), str(body.get("content")), "", m.group(2)))
            return 200, {"id": m.group(2), "channel_id": m.group(1)}
        return 404, {"message": "Unknown", "code": 10003}

    # -- the people ---------------------------------------------------------------------------------------------

    def adapter(self) -> Any:
        from hermes.surfaces.messaging.platforms.discord import DiscordAdapter

        return DiscordAdapter(TOKEN, base_url=self.url)

    def _user(self, name: str) -> dict[str, Any]:
        uid = self.users.setdefault(name, str(1000 + len(self.users)))
        return {"id": uid, "username": name}

    def dm_chat(self, user: str) -> str:
        return str(int(self._user(user)["id"]) + 5000)

    def allowed(self, users: list[str]) -> list[str]:
        return [self._user(u)["id"] for u in users]

    def say(self, user: str, text: str, *, direct: bool = False, mention: bool = True, thread: str = "") -> None:
        data: dict[str, Any] = {"id": str(next(self.ids)), "author": self._user(user), "mentions": [],
                                "channel_id": self.dm_chat(user) if direct else CHANNEL, "content": text}
        if not direct:
            data["guild_id"] = GUILD
            if mention:
                data["content"] = f"<@{BOT_ID}> {text}"
                data["mentions"] = [{"id": BOT_ID, "username": "hermes"}]
        self._push("MESSAGE_CREATE", data)

    def say_voice(self, user: str, audio: bytes) -> None:
        """A voice message (flags IS_VOICE_MESSAGE) in a direct chat: an audio/ogg attachment on the CDN."""
        mid = str(next(self.ids))
        path = f"/attachments/{self.dm_chat(user)}/{mid}/voice-message.ogg"
        self.attachments[path] = audio
        self._push("MESSAGE_CREATE", {"id": mid, "author": self._user(user), "mentions": [], "flags": 1 << 13,
                                      "channel_id": self.dm_chat(user), "content": "",
                                      "attachments": [{"id": mid, "filename": "voice-message.ogg",
                                                       "content_type": "audio/ogg", "size": len(audio),
                                                       "url": f"http://127.0.0.1:{self.http.port}{path}",
                                                       "duration_secs": 1.5, "waveform": "AAAA"}]})

    def press(self, user: str, post: Posted, choice: str) -> None:
        button = next(b for row in post.extra for b in row["components"] if b["label"] == choice)
        self._push("INTERACTION_CREATE", {"id": str(next(self.ids)), "token": "itok", "type": 3,
                                          "channel_id": post.chat, "user": self._user(user),
                                          "message": {"id": post.message_id},
                                          "data": {"custom_id": button["custom_id"], "component_type": 2}})

    def drop(self) -> None:
        self.ws.drop()

    def malformed(self) -> None:
        self._push("", None, raw="{this is not json")
        self._push("MESSAGE_CREATE", {"id": "1", "content": "no author or channel"})

    def close(self) -> None:
        self.http.close()
        self.ws.close()
