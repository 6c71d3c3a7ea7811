"""Slack in Socket Mode: events over a WebSocket, answers through the Web API, on websockets + httpx.

Written from api.slack.com (Socket Mode, the Events API, Block Kit). On connect the adapter checks the
bot token with ``auth.test`` (the bot's user id), opens a Socket Mode URL with the app-level token
(``apps.connections.open``) and waits for ``hello``. Every envelope is acknowledged with its
``envelope_id``; ``events_api`` envelopes carrying ``message`` events become messages (``channel_type``
``im``: a direct conversation; ``<@BOT>`` in the text addresses the bot; ``thread_ts``: the thread),
``interactive`` ``block_actions`` are button presses, ``disconnect`` ends :meth:`listen` (the
supervisor reconnects). The bot's own messages and edits/deletions (subtypes) are skipped.

Sending: ``chat.postMessage`` (``thread_ts`` for threads, Block Kit buttons), ``chat.update``, and
files by ``files.getUploadURLExternal`` → upload → ``files.completeUploadExternal``. Slack has no
typing signal for bots.

HTTP mode (``mode: http``, the Events API's request URL instead of Socket Mode): the adapter serves
``POST {path}`` itself (put HTTPS in front of it) for events and interactivity alike. Every request
must carry ``X-Slack-Signature`` = ``v0=`` + hex HMAC-SHA256 of ``v0:{X-Slack-Request-Timestamp}:{body}``
under the app's Signing Secret, with a timestamp at most five minutes away; anything else gets 401.
The ``url_verification`` challenge is answered; ``event_callback`` bodies and ``payload=`` forms
(button presses) go through the same handling as Socket Mode envelopes; an ``event_id`` seen before
(Slack retries after three seconds) is acknowledged and not answered again.

Voice: a message with an audio file (a ``files`` entry whose ``mimetype`` is ``audio/*``, or Slack's own
voice clips: file ``subtype`` ``slack_audio``, named ``audio_message*``, often labelled ``video/mp4``)
carries a ``fetch_voice`` that downloads ``url_private_download`` with the bot token (Slack wants it) —
only from ``files.slack.com`` (or the configured API's host), without following redirects, at most
25 MB, and only once the gateway's access gate has let the message through.
"""

from __future__ import annotations

import asyncio
import json
import logging
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
from hermes.surfaces.messaging.platforms.httpserve import AppServer

if TYPE_CHECKING:
    import httpx
    from starlette.requests import Request as HttpRequest
    from starlette.responses import Response

logger = logging.getLogger(__name__)

API = "https://slack.com/api"
#: how far a signed request's timestamp may be from now
SIGNATURE_WINDOW = 300
#: where Slack serves private files (a voice clip is downloaded, with the bot token, only from there)
FILES_HOST = "files.slack.com"

#: message subtypes that are still a person's message (a message with a file attached)
PERSON_SUBTYPES = frozenset({"", "file_share"})


class SlackAdapter(PlatformAdapter):
    name = "slack"
    max_text = 39000
    supports_buttons = True
    supports_threads = True

    def __init__(self, bot_token: str, app_token: str = "", *, base_url: str = API, name: str = "slack",
                 mode: str = "socket", signing_secret: str = "", host: str = "127.0.0.1", port: int = 3000,
                 path: str = "/slack/events", voice_dir: Path | None = None) -> None:
        super().__init__()
        #: where voice clips are downloaded to (0600 files, deleted once transcribed)
        self.voice_dir = voice_dir
        self.name, self.mode = name, mode
        self._bot_token, self._app_token = bot_token, app_token
        self._signing_secret = signing_secret
        self._serving = AppServer(name, host, port)
        self.path = path
        self._deliver: Deliver | None = None
        self._seen: dict[str, None] = {}
        self.base_url = base_url.rstrip("/")
        self.bot_user = ""
        self._http: httpx.AsyncClient | None = None
        self._ws: Any = None
        self._choices: dict[str, list[str]] = {}

    async def _api(self, method: str, token: str | None = None, **params: Any) -> dict[str, Any]:
        import httpx

        if self._http is None:
            raise PlatformError(f"{self.name}: not connected")
        try:
            response = await self._http.post(f"{self.base_url}/{method}", json=params,
                                             headers={"Authorization": f"Bearer {token or self._bot_token}"})
            data = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise PlatformError(f"{self.name} {method}: {type(exc).__name__}: {exc}") from exc
        if not isinstance(data, dict) or not data.get("ok"):
            error = data.get("error") if isinstance(data, dict) else f"HTTP {response.status_code}"
            raise PlatformError(f"{self.name} {method}: {error}")
        return data

    async def connect(self) -> None:
        import httpx
        from websockets.asyncio.client import connect

        self._http = httpx.AsyncClient(timeout=30.0)
        me = await self._api("auth.test")
        self.bot_user = str(me.get("user_id") or "")
        if self.mode == "http":
            from starlette.applications import Starlette
            from starlette.routing import Route

            self._serving.start(Starlette(routes=[Route(self.path, self._request, methods=["POST"])]))
            return
        opened = await self._api("apps.connections.open", token=self._app_token)
        try:
            self._ws = await asyncio.wait_for(connect(str(opened["url"]), proxy=None), 20)
        except (OSError, TimeoutError, KeyError) as exc:
            raise PlatformError(f"{self.name}: cannot open the Socket Mode connection: {exc}") from exc
        hello = json.loads(await self._ws.recv())
        if not isinstance(hello, dict) or hello.get("type") != "hello":
            raise PlatformError(f"{self.name}: Socket Mode did not say hello")

    @property
    def port(self) -> int:
        return self._serving.port

    async def listen(self, deliver: Deliver) -> None:
        from websockets.exceptions import ConnectionClosed

        if self.mode == "http":
            self._deliver = deliver
            await self._serving.serve()
            return

        while True:
            try:
                raw = await self._ws.recv()
            except ConnectionClosed:
                return
            try:
                envelope = json.loads(raw)
                if not isinstance(envelope, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                self.malformed(str(exc), raw)
                continue
            if envelope.get("envelope_id"):
                await self._ws.send(json.dumps({"envelope_id": envelope["envelope_id"]}))
            if envelope.get("type") == "disconnect":
                return
            try:
                msg = self._inbound(envelope)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                self.malformed(f"{envelope.get('type')}: {type(exc).__name__}: {exc}", envelope)
                continue
            if msg is not None:
                await deliver(msg)

    def _signed(self, request: HttpRequest, body: bytes) -> bool:
        import hashlib
        import hmac
        import time

        stamp = request.headers.get("x-slack-request-timestamp", "")
        if not stamp.isdigit() or abs(time.time() - int(stamp)) > SIGNATURE_WINDOW or not self._signing_secret:
            return False
        expected = "v0=" + hmac.new(self._signing_secret.encode(), f"v0:{stamp}:".encode() + body,
                                    hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, request.headers.get("x-slack-signature", ""))

    async def _request(self, request: HttpRequest) -> Response:
        from urllib.parse import parse_qs

        from starlette.responses import JSONResponse, Response

        body = await request.body()
        if not self._signed(request, body):
            logger.warning("%s: refused a request: no valid signature", self.name)
            return JSONResponse({"error": "invalid signature"}, status_code=401)
        try:
            if request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
                envelope: dict[str, Any] = {"type": "interactive",
                                            "payload": json.loads(parse_qs(body.decode())["payload"][0])}
            else:
                data = json.loads(body)
                if data.get("type") == "url_verification":
                    return JSONResponse({"challenge": data.get("challenge")})
                envelope = {"type": "events_api" if data.get("type") == "event_callback" else data.get("type"),
                            "payload": data}
            event_id = str(envelope["payload"].get("event_id") or "")
            if event_id in self._seen:
                return Response(status_code=200)
            if event_id:
                self._seen[event_id] = None
                while len(self._seen) > 2048:
                    self._seen.pop(next(iter(self._seen)))
            msg = self._inbound(envelope)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self.malformed(f"{type(exc).__name__}: {exc}", body[:200])
            return JSONResponse({"error": "malformed request"}, status_code=400)
        if msg is not None and self._deliver is not None:
            await self._deliver(msg)
        return Response(status_code=200)

    def _inbound(self, envelope: dict[str, Any]) -> Inbound | None:
        kind = envelope.get("type")
        payload: Any = envelope.get("payload")
        if kind == "events_api":
            event = payload["event"]
            if event["type"] != "message" or str(event.get("subtype") or "") not in PERSON_SUBTYPES \
                    or event.get("bot_id"):
                return None
            if str(event["user"]) == self.bot_user:
                return None
            text = str(event["text"])
            mention = f"<@{self.bot_user}>"
            direct = event.get("channel_type") == "im"
            mentioned = direct or mention in text
            audio = next((f for f in event.get("files") or [] if _is_voice(f)), None)
            ts = str(event.get("ts") or "")
            return Inbound(platform=self.name, chat=str(event["channel"]), user=str(event["user"]),
                           text=text.replace(mention, "").strip(), thread=str(event.get("thread_ts") or ""),
                           direct=direct, mentioned=mentioned, message_id=ts,
                           fetch_voice=partial(self._download, audio, ts) if audio is not None else None)
        if kind == "interactive" and payload.get("type") == "block_actions":
            action = payload["actions"][0]
            message = payload["message"]
            choices = self._choices.get(str(message["ts"]))
            index = int(str(action["action_id"]).removeprefix("hc:"))
            if choices is None or not 0 <= index < len(choices):
                return None
            channel = str(payload["channel"]["id"])
            return Inbound(platform=self.name, chat=channel, user=str(payload["user"]["id"]),
                           user_name=str(payload["user"].get("username") or ""), text=choices[index],
                           thread=str(message.get("thread_ts") or ""), direct=channel.startswith("D"),
                           mentioned=True, button=True, card=str(message["ts"]))
        if kind not in ("events_api", "interactive", "slash_commands", None):
            raise ValueError(f"an envelope of unknown type {kind!r}")
        return None

    async def _download(self, file: dict[str, Any], ts: str) -> str:
        """A voice clip's audio, fetched with the bot token only from Slack's file host."""
        from urllib.parse import urlsplit

        import httpx

        url = str(file.get("url_private_download") or file.get("url_private") or "")
        parts, api = urlsplit(url), urlsplit(self.base_url)
        if (parts.scheme, parts.netloc) not in (("https", FILES_HOST), (api.scheme, api.netloc)):
            raise ValueError(f"a file on an unexpected host {parts.netloc!r}")
        if int(file.get("size") or 0) > MAX_VOICE_BYTES:
            raise ValueError("a voice clip larger than 25 MB")
        try:
            status, body = await download_voice(url, {"Authorization": f"Bearer {self._bot_token}"})
        except httpx.HTTPError as exc:
            raise ValueError(f"the voice clip could not be downloaded: {type(exc).__name__}") from exc
        if body is None:
            raise ValueError(f"the voice clip could not be downloaded (HTTP {status}, at most 25 MB)")
        suffix = Path(str(file.get("name") or "audio_message.mp4")).suffix or ".mp4"
        return save_voice(self.voice_dir, f"{self.name}-{ts.replace('.', '-') or 'voice'}{suffix}", body)

    @staticmethod
    def _where(chat: str, thread: str) -> dict[str, Any]:
        return {"channel": chat, **({"thread_ts": thread} if thread else {})}

    async def send_text(self, chat: str, text: str, thread: str = "") -> str:
        sent = await self._api("chat.postMessage", text=text, **self._where(chat, thread))
        return str(sent.get("ts") or "")

    async def send_buttons(self, chat: str, text: str, choices: Sequence[str], thread: str = "") -> str:
        buttons = [{"type": "button", "action_id": f"hc:{i}", "value": str(i),
                    "text": {"type": "plain_text", "text": c[:75]}} for i, c in enumerate(choices[:25])]
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": text}},
                  {"type": "actions", "elements": buttons}]
        sent = await self._api("chat.postMessage", text=text, blocks=blocks, **self._where(chat, thread))
        ts = str(sent.get("ts") or "")
        self._choices[ts] = list(choices[:25])
        return ts

    async def edit_text(self, chat: str, message_id: str, text: str, thread: str = "") -> None:
        await self._api("chat.update", channel=chat, ts=message_id, text=text)

    async def send_file(self, chat: str, path: Path, caption: str = "", thread: str = "") -> str:
        import httpx

        data = path.read_bytes()
        slot = await self._api("files.getUploadURLExternal", filename=path.name, length=len(data))
        assert self._http is not None
        try:
            uploaded = await self._http.post(str(slot["upload_url"]), content=data)
        except httpx.HTTPError as exc:
            raise PlatformError(f"{self.name}: the file upload failed: {type(exc).__name__}") from exc
        if uploaded.status_code >= 400:
            raise PlatformError(f"{self.name}: the file upload failed: HTTP {uploaded.status_code}")
        params: dict[str, Any] = {"files": [{"id": slot["file_id"], "title": path.name}], "channel_id": chat}
        if thread:
            params["thread_ts"] = thread
        await self._api("files.completeUploadExternal", **params)
        return str(slot["file_id"])

    async def close(self) -> None:
        await self._serving.stop()
        ws, self._ws = self._ws, None
        http, self._http = self._http, None
        await close_connections(ws, http)




def _is_voice(file: Any) -> bool:
    """An audio file, or one of Slack's own voice clips (``slack_audio``, which Slack may label ``video/mp4``)."""
    if not isinstance(file, dict):
        return False
    return str(file.get("mimetype") or "").startswith("audio/") or file.get("subtype") == "slack_audio" \
        or str(file.get("name") or "").lower().startswith("audio_message")
