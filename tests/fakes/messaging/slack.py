"""Slack on loopback (written from api.slack.com): Socket Mode (``apps.connections.open``, ``hello``,
envelopes acknowledged by ``envelope_id``) and the Web API calls the adapter makes; with
``mode="http"`` the people's events are signed requests to the bot's Events API request URL. Private
files (a person's voice clip) are served under ``/files-pri/`` only to a request with the bot token."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from fakes.messaging import Driver, Posted
from fakes.messaging.servers import JsonHttp, WsLoop

BOT_TOKEN = "xoxb-1111-2222-fakebottokenvalue"
APP_TOKEN = "xapp-1-A111-3333-fakeapptokenvalue"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_USER = "UBOT"
CHANNEL = "C0700"


class SlackDriver(Driver):
    name = "slack"
    group = CHANNEL
    supports_threads = True
    secrets = (BOT_TOKEN, APP_TOKEN)

    def __init__(self, mode: str = "socket") -> None:
        super().__init__()
        self.mode = mode
        self.bot: Any = None
        self.ids = itertools.count(1)
        self.users: dict[str, str] = {}
        self.pending: list[str] = []
        self.acked: list[str] = []
        self.uploads: dict[str, tuple[str, bytes]] = {}
        #: private files by path, and the Authorization header of every request for one
        self.private_files: dict[str, bytes] = {}
        self.file_auth: list[str | None] = []
        self.voice_dir: Any = None
        self.ws = WsLoop(self._session)
        self.http = JsonHttp(self._answer)
        self.url = f"http://127.0.0.1:{self.http.port}/api"

    async def _session(self, ws: Any) -> None:
        await ws.send(json.dumps({"type": "hello", "num_connections": 1}))
        self.ws.conns.append(ws)
        for text in self.pending:
            await ws.send(text)
        self.pending.clear()
        try:
            async for raw in ws:
                ack = json.loads(raw)
                if "envelope_id" in ack:
                    self.acked.append(ack["envelope_id"])
        except Exception:
            pass
        finally:
            if ws in self.ws.conns:
                self.ws.conns.remove(ws)

    def _ts(self) -> str:
        return f"{int(time.time())}.{next(self.ids):06d}"

    def _answer(self, method: str, path: str, headers: Any, raw: bytes) -> tuple[int, Any]:
        call = path.removeprefix("/api/")
        auth = headers.get("Authorization", "")
        if path.startswith("/files-pri/"):  # url_private_download: the bot token as a bearer, else no file
            self.file_auth.append(headers.get("Authorization"))
            found = self.private_files.get(path)
            if auth != f"Bearer {BOT_TOKEN}" or found is None:
                return 404, {"ok": False, "error": "file_not_found"}
            return 200, found
        if call.startswith("upload/"):
            file_id = call.removeprefix("upload/")
            name, _ = self.uploads[file_id]
            self.uploads[file_id] = (name, raw)
            return 200, None
        body = json.loads(raw or b"{}")
        if call == "apps.connections.open":
            if auth != f"Bearer {APP_TOKEN}":
                return 200, {"ok": False, "error": "invalid_auth"}
            return 200, {"ok": True, "url": self.ws.url}
        if auth != f"Bearer {BOT_TOKEN}":
            return 200, {"ok": False, "error": "invalid_auth"}
        if call == "auth.test":
            return 200, {"ok": True, "user_id": BOT_USER, "team_id": "T1"}
        if call == "chat.postMessage":
            ts = self._ts()
            kind = "buttons" if body.get("blocks") else "text"
            self.record(Posted(kind, body["channel"], body["text"], body.get("thread_ts", ""), ts, body.get("blocks")))
            return 200, {"ok": True, "channel": body["channel"], "ts": ts}
        if call == "chat.update":
            self.record(Posted("edit", body["channel"], body["text"], "", body["ts"]))
            return 200, {"ok": True, "channel": body["channel"], "ts": body["ts"]}
        if call == "files.getUploadURLExternal":
            file_id = f"F{next(self.ids)}"
            self.uploads[file_id] = (body["filename"], b"")
            return 200, {"ok": True, "file_id": file_id, "upload_url": f"http://127.0.0.1:{self.http.port}/api/upload/{file_id}"}
        if call == "files.completeUploadExternal":
            for f in body["files"]:
                name, data = self.uploads[f["id"]]
                self.record(Posted("file", body["channel_id"], name, body.get("thread_ts", ""), f["id"], data))
            return 200, {"ok": True, "files": body["files"]}
        return 200, {"ok": False, "error": "unknown_method"}

    def signed_post(self, raw: bytes, ctype: str = "application/json", *, secret: str = SIGNING_SECRET,
                    stamp: int | None = None) -> Any:
        """POST ``raw`` to the bot's request URL, signed as Slack signs it (v0 HMAC-SHA256)."""
        import hashlib
        import hmac

        import httpx

        when = str(int(time.time()) if stamp is None else stamp)
        signature = "v0=" + hmac.new(secret.encode(), f"v0:{when}:".encode() + raw, hashlib.sha256).hexdigest()
        return httpx.post(f"http://127.0.0.1:{self.bot.port}/slack/events", content=raw, timeout=30, headers={
            "Content-Type": ctype, "X-Slack-Request-Timestamp": when, "X-Slack-Signature": signature})

    def _envelope(self, kind: str, payload: Any) -> None:
        if self.mode == "http":
            from urllib.parse import urlencode

            if kind == "interactive":
                self.signed_post(urlencode({"payload": json.dumps(payload)}).encode(),
                                 "application/x-www-form-urlencoded")
            else:
                self.signed_post(json.dumps({**payload, "event_id": f"Ev{next(self.ids)}"}).encode())
            return
        text = json.dumps({"envelope_id": f"e{next(self.ids)}", "type": kind, "payload": payload,
                           "accepts_response_payload": False})
        if not self.ws.send_latest(text):
            self.pending.append(text)

    # -- the people -------------------------------------------------------------------------------------------

    def adapter(self) -> Any:
        from hermes.surfaces.messaging.platforms.slack import SlackAdapter

        if self.mode == "http":
            self.bot = SlackAdapter(BOT_TOKEN, base_url=self.url, mode="http", signing_secret=SIGNING_SECRET, port=0)
            return self.bot
        return SlackAdapter(BOT_TOKEN, APP_TOKEN, base_url=self.url, voice_dir=self.voice_dir)

    def _user(self, name: str) -> str:
        return self.users.setdefault(name, f"U{100 + len(self.users)}")

    def dm_chat(self, user: str) -> str:
        return f"D{self._user(user)}"

    def allowed(self, users: list[str]) -> list[str]:
        return [self._user(u) for u in users]

    def say(self, user: str, text: str, *, direct: bool = False, mention: bool = True, thread: str = "") -> None:
        event: dict[str, Any] = {"type": "message", "user": self._user(user), "ts": self._ts(),
                                 "channel": self.dm_chat(user) if direct else CHANNEL,
                                 "channel_type": "im" if direct else "channel",
                                 "text": text if direct or not mention else f"<@{BOT_USER}> {text}"}
        if thread:
            event["thread_ts"] = thread
        self._envelope("events_api", {"type": "event_callback", "event": event})

    def say_voice(self, user: str, audio: bytes) -> None:
        """A voice clip recorded in Slack, in a direct chat: a ``file_share`` message whose file is
        ``slack_audio``, named ``audio_message.mp4`` and (as Slack often does) labelled ``video/mp4``."""
        file_id = f"F{next(self.ids)}"
        path = f"/files-pri/T1-{file_id}/download/audio_message.mp4"
        self.private_files[path] = audio
        url = f"http://127.0.0.1:{self.http.port}{path}"
        event = {"type": "message", "subtype": "file_share", "user": self._user(user), "ts": self._ts(),
                 "channel": self.dm_chat(user), "channel_type": "im", "text": "",
                 "files": [{"id": file_id, "name": "audio_message.mp4", "mimetype": "video/mp4",
                            "filetype": "mp4", "subtype": "slack_audio", "size": len(audio),
                            "url_private": url, "url_private_download": url}]}
        self._envelope("events_api", {"type": "event_callback", "event": event})

    def press(self, user: str, post: Posted, choice: str) -> None:
        buttons = next(b for b in post.extra if b["type"] == "actions")["elements"]
        button = next(b for b in buttons if b["text"]["text"] == choice)
        self._envelope("interactive", {"type": "block_actions", "user": {"id": self._user(user), "username": user},
                                       "channel": {"id": post.chat}, "message": {"ts": post.message_id},
                                       "actions": [{"action_id": button["action_id"], "value": button["value"]}]})

    def drop(self) -> None:
        self.ws.drop()

    def malformed(self) -> None:
        self.ws.send_latest("{not json")
        self._envelope("events_api", {"event": {"type": "message", "text": "no user or channel"}})

    def close(self) -> None:
        self.http.close()
        self.ws.close()
