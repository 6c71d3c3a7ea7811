"""Telegram over the Bot API (HTTPS + JSON, ``getUpdates`` long polling), with httpx.

What the adapter uses: ``getMe`` (who the bot is), ``getUpdates`` with ``offset`` and ``timeout``
(long polling), ``sendMessage`` (``message_thread_id`` for forum topics, an ``inline_keyboard`` for
buttons), ``editMessageText``, ``sendDocument``, ``sendChatAction`` (typing) and
``answerCallbackQuery``. A private chat is a direct conversation; in groups a message addresses the
bot when it names ``@username`` or replies to one of the bot's messages. Texts are limited to 4096
UTF-16 code units. A button press arrives as a ``callback_query`` whose data is the choice's index.

Every update moves the offset on, also one that cannot be understood (it is logged and skipped), so
one bad update never blocks the ones after it. The token is part of every URL: errors and log lines
must not show it (the gateway masks it).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.surfaces.messaging.adapter import Deliver, Inbound, PlatformAdapter, PlatformError, save_voice
from hermes.surfaces.messaging.split import utf16_length

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger(__name__)

API = "https://api.telegram.org"


class TelegramAdapter(PlatformAdapter):
    name = "telegram"
    max_text = 4096
    supports_buttons = True
    supports_threads = True

    def __init__(self, token: str, *, base_url: str = API, poll_timeout: int = 25, name: str = "telegram",
                 voice_dir: Path | None = None) -> None:
        super().__init__()
        #: where voice messages are downloaded to (0600 files, deleted once transcribed)
        self.voice_dir = voice_dir
        self.name = name
        self._token = token
        self.base_url = base_url.rstrip("/")
        self.poll_timeout = poll_timeout
        self.username = ""
        self.bot_id = 0
        self.offset = 0
        self._client: httpx.AsyncClient | None = None
        #: (chat, message id) → the choices of a buttons message
        self._choices: dict[tuple[str, str], list[str]] = {}

    def measure(self, text: str) -> int:
        return utf16_length(text)

    async def _call(self, method: str, files: dict[str, Any] | None = None, **params: Any) -> Any:
        import httpx

        if self._client is None:
            raise PlatformError(f"{self.name}: not connected")
        url = f"{self.base_url}/bot{self._token}/{method}"
        try:
            if files:
                response = await self._client.post(url, data={k: str(v) for k, v in params.items()}, files=files)
            else:
                response = await self._client.post(url, json=params)
        except httpx.HTTPError as exc:
            raise PlatformError(f"{self.name} {method}: {type(exc).__name__}: {exc}") from exc
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict) or not data.get("ok"):
            description = data.get("description") if isinstance(data, dict) else response.reason_phrase
            raise PlatformError(f"{self.name} {method}: HTTP {response.status_code}: {description}")
        return data.get("result")

    async def connect(self) -> None:
        import httpx

        self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.poll_timeout + 15.0, connect=15.0))
        me = await self._call("getMe")
        if not isinstance(me, dict) or not me.get("username"):
            raise PlatformError(f"{self.name}: getMe answered without a bot username")
        self.username, self.bot_id = str(me["username"]), int(me.get("id") or 0)

    async def listen(self, deliver: Deliver) -> None:
        while True:
            updates = await self._call("getUpdates", offset=self.offset, timeout=self.poll_timeout,
                                       allowed_updates=["message", "callback_query"])
            if not isinstance(updates, list):
                self.malformed("getUpdates result is not a list", updates)
                continue
            for update in updates:
                update_id = update.get("update_id") if isinstance(update, dict) else None
                if isinstance(update_id, int):
                    self.offset = max(self.offset, update_id + 1)
                try:
                    msg = await self._inbound(update)
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    self.malformed(f"{type(exc).__name__}: {exc}", update)
                    continue
                except PlatformError as exc:  # e.g. a voice message that could not be downloaded
                    logger.warning("%s: skipped an update: %s", self.name, exc)
                    continue
                if msg is not None:
                    await deliver(msg)

    async def _inbound(self, update: dict[str, Any]) -> Inbound | None:
        if "callback_query" in update:
            return await self._pressed(update["callback_query"])
        message = update.get("message")
        if message is None:
            if not any(k in update for k in ("edited_message", "channel_post", "my_chat_member")):
                raise ValueError("an update of no known kind")
            return None  # kinds the gateway does not answer
        text = message.get("text")
        fetch_voice = None
        audio = message.get("voice") or message.get("audio")
        if isinstance(audio, dict) and audio.get("file_id"):
            file_id, message_id = str(audio["file_id"]), str(message["message_id"])
            fetch_voice = partial(self._download, file_id, message_id)  # after the access gate
            text = str(message.get("caption") or "")
        if not isinstance(text, str):
            return None  # stickers, photos without caption, joins …
        sender, chat = message["from"], message["chat"]
        direct = chat["type"] == "private"
        handle = f"@{self.username}"
        replied = (message.get("reply_to_message") or {}).get("from", {}).get("id") == self.bot_id
        mentioned = direct or replied or handle.casefold() in text.casefold()
        if handle.casefold() in text.casefold():
            at = text.casefold().index(handle.casefold())
            text = (text[:at] + text[at + len(handle):]).strip()
        thread = str(message.get("message_thread_id") or "") if message.get("is_topic_message") else ""
        return Inbound(platform=self.name, chat=str(chat["id"]), user=str(sender["id"]),
                       user_name=str(sender.get("username") or sender.get("first_name") or ""), text=text,
                       thread=thread, direct=direct, mentioned=mentioned, from_bot=bool(sender.get("is_bot")),
                       message_id=str(message["message_id"]), fetch_voice=fetch_voice)

    async def _download(self, file_id: str, message_id: str) -> str:
        """Fetch a voice message's audio (``getFile``, then the file URL) into :attr:`voice_dir`."""
        found = await self._call("getFile", file_id=file_id)
        file_path = str(found["file_path"])
        assert self._client is not None
        response = await self._client.get(f"{self.base_url}/file/bot{self._token}/{file_path}")
        if response.status_code >= 400:
            raise PlatformError(f"{self.name}: the voice message could not be downloaded (HTTP {response.status_code})")
        return save_voice(self.voice_dir, f"{self.name}-{message_id}{Path(file_path).suffix or '.ogg'}",
                          response.content)

    async def _pressed(self, query: dict[str, Any]) -> Inbound | None:
        await self._call("answerCallbackQuery", callback_query_id=query["id"])
        message, sender = query["message"], query["from"]
        chat = str(message["chat"]["id"])
        choices = self._choices.get((chat, str(message["message_id"])))
        index = int(query["data"])
        if choices is None or not 0 <= index < len(choices):
            return None  # a button of an expired prompt
        thread = str(message.get("message_thread_id") or "") if message.get("is_topic_message") else ""
        return Inbound(platform=self.name, chat=chat, user=str(sender["id"]),
                       user_name=str(sender.get("username") or ""), text=choices[index], thread=thread,
                       direct=message["chat"].get("type") == "private", mentioned=True, button=True,
                       card=str(message["message_id"]))

    @staticmethod
    def _where(chat: str, thread: str) -> dict[str, Any]:
        where: dict[str, Any] = {"chat_id": int(chat) if chat.lstrip("-").isdigit() else chat}
        if thread:
            where["message_thread_id"] = int(thread)
        return where

    async def send_text(self, chat: str, text: str, thread: str = "") -> str:
        result = await self._call("sendMessage", text=text, **self._where(chat, thread))
        return str(result["message_id"])

    async def send_buttons(self, chat: str, text: str, choices: Sequence[str], thread: str = "") -> str:
        keyboard = {"inline_keyboard": [[{"text": c[:64], "callback_data": str(i)}] for i, c in enumerate(choices)]}
        result = await self._call("sendMessage", text=text, reply_markup=keyboard, **self._where(chat, thread))
        message_id = str(result["message_id"])
        self._choices[(chat, message_id)] = list(choices)
        return message_id

    async def edit_text(self, chat: str, message_id: str, text: str, thread: str = "") -> None:
        where = self._where(chat, "")
        await self._call("editMessageText", message_id=int(message_id), text=text, **where)

    async def send_file(self, chat: str, path: Path, caption: str = "", thread: str = "") -> str:
        files = {"document": (path.name, path.read_bytes())}
        params = self._where(chat, thread)
        if caption and caption != path.name:
            params["caption"] = caption
        result = await self._call("sendDocument", files=files, **params)
        return str(result["message_id"])

    async def typing(self, chat: str, thread: str = "") -> None:
        await self._call("sendChatAction", action="typing", **self._where(chat, thread))

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
