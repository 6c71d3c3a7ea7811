"""Discord: the Gateway (WebSocket, v10, JSON) for events and the REST API for sending, on websockets + httpx.

Written from discord.com/developers/docs. On connect the adapter asks ``GET /gateway/bot`` where the
Gateway is, receives ``HELLO`` (op 10) and starts heartbeating (op 1, acknowledged by op 11), sends
``IDENTIFY`` (op 2) with the intents it needs — guilds, guild and direct messages, message content —
and waits for ``READY``. ``MESSAGE_CREATE`` events become messages (no ``guild_id``: a direct
conversation; mentioning the bot or replying to it addresses it); button presses arrive as
``INTERACTION_CREATE`` (a deferred update acknowledges them). ``RECONNECT`` (op 7), ``INVALID_SESSION``
(op 9) or a closed socket end :meth:`listen`; the gateway's supervisor identifies again with backoff
(sessions are not resumed). A Discord thread is a channel of its own, so it is its own conversation.

Sending: ``POST /channels/{id}/messages`` (2000 characters; buttons as action rows of up to five),
``PATCH`` to edit, a multipart ``files[0]`` upload for files, ``POST /channels/{id}/typing``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.surfaces.messaging.adapter import (
    MAX_VOICE_BYTES,
    Deliver,
    Inbound,
    PlatformAdapter,
    PlatformError,
    close_connections,
    download_voice,
    save_voice,
)

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

API = "https://discord.com/api/v10"
#: GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT
INTENTS = (1 << 0) | (1 << 9) | (1 << 12) | (1 << 15)
BUTTONS_PER_ROW = 5


#: where Discord serves attachments (voice messages are downloaded only from there)
CDN_HOSTS = frozenset({"cdn.discordapp.com", "media.discordapp.net"})



class DiscordAdapter(PlatformAdapter):
    name = "discord"
    max_text = 2000
    supports_buttons = True

    def __init__(self, token: str, *, base_url: str = API, name: str = "discord",
                 voice_dir: Path | None = None) -> None:
        super().__init__()
        self.name = name
        #: where voice messages are downloaded to (0600 files, deleted once transcribed)
        self.voice_dir = voice_dir
        self._token = token
        self.base_url = base_url.rstrip("/")
        self.bot_id = ""
        self._http: httpx.AsyncClient | None = None
        self._ws: Any = None
        self._seq: int | None = None
        self._beat: asyncio.Task[None] | None = None
        self._choices: dict[str, list[str]] = {}

    async def _rest(self, method: str, path: str, **kw: Any) -> Any:
        import httpx

        if self._http is None:
            raise PlatformError(f"{self.name}: not connected")
        try:
            response = await self._http.request(method, self.base_url + path, **kw)
        except httpx.HTTPError as exc:
            raise PlatformError(f"{self.name} {method} {path}: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            try:
                said = response.json().get("message")
            except (ValueError, AttributeError):
                said = response.reason_phrase
            raise PlatformError(f"{self.name} {method} {path}: HTTP {response.status_code}: {said}")
        return response.json() if response.content else None

    async def connect(self) -> None:
        import httpx
        from websockets.asyncio.client import connect

        self._http = httpx.AsyncClient(timeout=30.0, headers={"Authorization": f"Bot {self._token}",
                                                                "User-Agent": "DiscordBot (hermes, 1)"})
        where = await self._rest("GET", "/gateway/bot")
        url = str((where or {}).get("url") or "")
        if not url:
            raise PlatformError(f"{self.name}: /gateway/bot named no Gateway URL")
        try:
            self._ws = await asyncio.wait_for(connect(f"{url}/?v=10&encoding=json", proxy=None), 20)
        except (OSError, TimeoutError) as exc:
            raise PlatformError(f"{self.name}: cannot reach the Gateway: {exc}") from exc
        hello = await self._receive()
        if hello.get("op") != 10:
            raise PlatformError(f"{self.name}: the Gateway did not say HELLO")
        interval = float(hello["d"]["heartbeat_interval"]) / 1000
        self._beat = asyncio.create_task(self._heartbeat(interval))
        await self._ws.send(json.dumps({"op": 2, "d": {
            "token": self._token, "intents": INTENTS,
            "properties": {"os": "linux", "browser": "hermes", "device": "hermes"}}}))
        while True:
            event = await self._receive()
            if event.get("op") == 9:
                raise PlatformError(f"{self.name}: the Gateway refused the login (invalid session)")
            if event.get("t") == "READY":
                self.bot_id = str(event["d"]["user"]["id"])
                return

    async def _receive(self) -> dict[str, Any]:
        raw = await self._ws.recv()
        try:
            event = json.loads(raw)
        except ValueError:
            self.malformed("not JSON", raw)
            return {}
        if not isinstance(event, dict):
            self.malformed("not an object", raw)
            return {}
        if isinstance(event.get("s"), int):
            self._seq = event["s"]
        return event

    async def _heartbeat(self, interval: float) -> None:
        with contextlib.suppress(Exception):
            while True:
                await asyncio.sleep(interval)
                await self._ws.send(json.dumps({"op": 1, "d": self._seq}))

    async def listen(self, deliver: Deliver) -> None:
        from websockets.exceptions import ConnectionClosed

        while True:
            try:
                event = await self._receive()
            except ConnectionClosed:
                return
            op = event.get("op")
            if op in (7, 9):
                return
            if op == 1:
                await self._ws.send(json.dumps({"op": 1, "d": self._seq}))
            if op != 0:
                continue
            try:
                msg = await self._dispatch(str(event.get("t")), event.get("d"))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                self.malformed(f"{event.get('t')}: {type(exc).__name__}: {exc}", event)
                continue
            if msg is not None:
                await deliver(msg)

    async def _dispatch(self, kind: str, data: Any) -> Inbound | None:
        if kind == "MESSAGE_CREATE":
            author = data["author"]
            if str(author["id"]) == self.bot_id:
                return None
            text = str(data["content"])
            mentions = {str(m["id"]) for m in data.get("mentions") or []}
            replied = str(((data.get("referenced_message") or {}).get("author") or {}).get("id", "")) == self.bot_id
            direct = not data.get("guild_id")
            text = re.sub(rf"<@!?{re.escape(self.bot_id)}>", "", text).strip()
            audio = next((a for a in data.get("attachments") or []
                          if str(a.get("content_type") or "").startswith("audio/")), None)
            fetch = partial(self._download, audio, str(data["id"])) if audio is not None else None
            return Inbound(platform=self.name, chat=str(data["channel_id"]), user=str(author["id"]),
                           user_name=str(author.get("username") or ""), text=text, direct=direct,
                           mentioned=direct or replied or self.bot_id in mentions, from_bot=bool(author.get("bot")),
                           message_id=str(data["id"]), fetch_voice=fetch)  # downloaded after the access gate
        if kind == "INTERACTION_CREATE" and data.get("type") == 3:
            await self._rest("POST", f"/interactions/{data['id']}/{data['token']}/callback", json={"type": 6})
            user = (data.get("member") or {}).get("user") or data.get("user") or {}
            choices = self._choices.get(str(data["message"]["id"]))
            index = int(str(data["data"]["custom_id"]).removeprefix("hc:"))
            if choices is None or not 0 <= index < len(choices):
                return None
            return Inbound(platform=self.name, chat=str(data["channel_id"]), user=str(user["id"]),
                           user_name=str(user.get("username") or ""), text=choices[index],
                           direct=not data.get("guild_id"), mentioned=True, button=True,
                           card=str(data["message"]["id"]))
        return None

    async def _download(self, attachment: dict[str, Any], message_id: str) -> str:
        """A voice message's audio attachment, fetched only from Discord's CDN (or the configured API's host)."""
        from urllib.parse import urlsplit

        url = str(attachment["url"])
        host = urlsplit(url).netloc
        if host not in CDN_HOSTS and host != urlsplit(self.base_url).netloc:
            raise ValueError(f"an attachment on an unexpected host {host!r}")
        if int(attachment.get("size") or 0) > MAX_VOICE_BYTES:
            raise ValueError("a voice message larger than 25 MB")
        import httpx

        try:  # without the bot's token: the CDN's URLs are signed, and the token goes to the API only
            status, body = await download_voice(url)
        except httpx.HTTPError as exc:
            raise ValueError(f"the voice message could not be downloaded: {type(exc).__name__}") from exc
        if body is None:
            raise ValueError(f"the voice message could not be downloaded (HTTP {status}, at most 25 MB)")
        suffix = Path(str(attachment.get("filename") or "voice.ogg")).suffix or ".ogg"
        return save_voice(self.voice_dir, f"{self.name}-{message_id}{suffix}", body)

    async def send_text(self, chat: str, text: str, thread: str = "") -> str:
        sent = await self._rest("POST", f"/channels/{chat}/messages", json={"content": text})
        return str(sent["id"])

    async def send_buttons(self, chat: str, text: str, choices: Sequence[str], thread: str = "") -> str:
        buttons = [{"type": 2, "style": 2 if c == "skip" else 1, "label": c[:80], "custom_id": f"hc:{i}"}
                   for i, c in enumerate(choices[:25])]
        rows = [{"type": 1, "components": buttons[i:i + BUTTONS_PER_ROW]}
                for i in range(0, len(buttons), BUTTONS_PER_ROW)]
        sent = await self._rest("POST", f"/channels/{chat}/messages", json={"content": text, "components": rows})
        self._choices[str(sent["id"])] = list(choices[:25])
        return str(sent["id"])

    async def edit_text(self, chat: str, message_id: str, text: str, thread: str = "") -> None:
        await self._rest("PATCH", f"/channels/{chat}/messages/{message_id}", json={"content": text})

    async def send_file(self, chat: str, path: Path, caption: str = "", thread: str = "") -> str:
        payload = {"content": caption if caption != path.name else "",
                   "attachments": [{"id": 0, "filename": path.name}]}
        sent = await self._rest("POST", f"/channels/{chat}/messages", data={"payload_json": json.dumps(payload)},
                                files={"files[0]": (path.name, path.read_bytes())})
        return str(sent["id"])

    async def typing(self, chat: str, thread: str = "") -> None:
        await self._rest("POST", f"/channels/{chat}/typing")

    async def close(self) -> None:
        beat, self._beat = self._beat, None
        if beat is not None:
            beat.cancel()
        ws, self._ws = self._ws, None
        http, self._http = self._http, None
        await close_connections(ws, http)
