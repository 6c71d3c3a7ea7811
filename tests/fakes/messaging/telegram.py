"""A Telegram Bot API on loopback (written from core.telegram.org/bots/api): long polling, sending, editing.

Methods: ``getMe``, ``getUpdates`` (long polling: ``offset``, ``timeout``), ``sendMessage`` (with
``message_thread_id`` and an ``inline_keyboard`` ``reply_markup``), ``editMessageText``,
``sendDocument`` (multipart), ``sendChatAction``, ``answerCallbackQuery``. Responses are
``{"ok": true, "result": ...}`` or ``{"ok": false, "error_code": N, "description": ...}``; a text
over 4096 UTF-16 units is refused as the real API does.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakes.messaging import Driver, Posted

TOKEN = "123456:AAF-test-token-do-not-log-x9"
BOT_ID = 999
GROUP = "-100500"


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _answer(self, status: int, payload: Any) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        fake = self.server.fake
        data = fake.files.get(self.path.removeprefix(f"/file/bot{fake.token}/"))
        if not self.path.startswith(f"/file/bot{fake.token}/") or data is None:
            self._answer(404, {"ok": False, "error_code": 404, "description": "Not Found"})
            return
        fake.downloads.append(self.path.rsplit("/", 1)[-1])
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        prefix, _, method = self.path.lstrip("/").partition("/")
        if prefix != f"bot{fake.token}":
            self._answer(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
            return
        if fake.fail_next:
            fake.fail_next = False
            self._answer(502, {"ok": False, "error_code": 502, "description": "Bad Gateway"})
            return
        ctype = self.headers.get("Content-Type", "")
        params = _multipart(ctype, raw) if ctype.startswith("multipart/form-data") else json.loads(raw or b"{}")
        status, payload = fake.handle(method, params, self)
        if status:
            self._answer(status, payload)


def _multipart(ctype: str, raw: bytes) -> dict[str, Any]:
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {ctype}\r\n\r\n".encode() + raw)
    out: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        filename = part.get_filename()
        data = part.get_payload(decode=True)
        out[str(name)] = (filename, data) if filename else data.decode()
    return out


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: TelegramDriver

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None  # a client that went away mid-answer (the bot reconnecting) is expected


class TelegramDriver(Driver):
    name = "telegram"
    group = GROUP
    supports_threads = True
    secrets = (TOKEN,)

    def __init__(self, token: str = TOKEN) -> None:
        super().__init__()
        self.token = token
        self.updates: list[dict[str, Any]] = []
        self.update_ids = itertools.count(1)
        self.message_ids = itertools.count(100)
        self.users: dict[str, int] = {}
        self.refuse_buttons = False
        self.fail_next = False
        self.drop_polls = False
        self.callbacks_answered: list[str] = []
        self.voice_dir: Any = None
        #: file_path → bytes, for getFile and the file download URL
        self.files: dict[str, bytes] = {}
        #: the file names the bot downloaded, in order
        self.downloads: list[str] = []
        self.lock = threading.Condition()
        self.http = _Server(("127.0.0.1", 0), _Handler)
        self.http.fake = self
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()

    # -- the API --------------------------------------------------------------------------------------

    def handle(self, method: str, p: dict[str, Any], handler: _Handler) -> tuple[int, Any]:
        ok = lambda result: (200, {"ok": True, "result": result})  # noqa: E731
        bad = lambda text: (400, {"ok": False, "error_code": 400, "description": f"Bad Request: {text}"})  # noqa: E731
        if method == "getMe":
            return ok({"id": BOT_ID, "is_bot": True, "first_name": "Hermes", "username": "hermes_bot"})
        if method == "getUpdates":
            return self._get_updates(p, handler)
        chat = str(p.get("chat_id", ""))
        thread = str(p.get("message_thread_id") or "")
        if method == "sendMessage":
            text = str(p.get("text", ""))
            if not text.strip():
                return bad("message text is empty")
            if len(text.encode("utf-16-le")) // 2 > 4096:
                return bad("message is too long")
            markup = p.get("reply_markup")
            if markup and self.refuse_buttons:
                return bad("BUTTON_DATA_INVALID")
            mid = next(self.message_ids)
            kind = "buttons" if markup else "text"
            self.record(Posted(kind, chat, text, thread, str(mid), markup))
            return ok({"message_id": mid, "date": int(time.time()), "chat": {"id": int(chat)}, "text": text})
        if method == "editMessageText":
            self.record(Posted("edit", chat, str(p.get("text", "")), thread, str(p.get("message_id"))))
            return ok({"message_id": p.get("message_id"), "chat": {"id": int(chat)}, "text": p.get("text")})
        if method == "sendDocument":
            filename, data = p["document"]
            mid = next(self.message_ids)
            self.record(Posted("file", chat, filename, str(p.get("message_thread_id") or ""), str(mid), data))
            return ok({"message_id": mid, "chat": {"id": int(chat)}, "document": {"file_name": filename}})
        if method == "getFile":
            file_id = str(p.get("file_id"))
            return ok({"file_id": file_id, "file_path": f"voice/{file_id}.oga"})
        if method == "sendChatAction":
            return ok(True)
        if method == "answerCallbackQuery":
            self.callbacks_answered.append(str(p.get("callback_query_id")))
            return ok(True)
        return (404, {"ok": False, "error_code": 404, "description": "Not Found: method not found"})

    def _get_updates(self, p: dict[str, Any], handler: _Handler) -> tuple[int, Any]:
        offset = int(p.get("offset") or 0)
        deadline = time.monotonic() + min(float(p.get("timeout") or 0), 5.0)
        with self.lock:
            while True:
                if self.drop_polls:
                    self.drop_polls = False
                    handler.close_connection = True
                    handler.connection.shutdown(2)  # the platform drops the connection mid-poll
                    return (0, None)
                ready = [u for u in self.updates if u["update_id"] >= offset]
                left = deadline - time.monotonic()
                if ready or left <= 0:
                    return (200, {"ok": True, "result": ready})
                self.lock.wait(min(left, 0.2))

    def _push(self, update: dict[str, Any]) -> None:
        with self.lock:
            update["update_id"] = next(self.update_ids)
            self.updates.append(update)
            self.lock.notify_all()

    # -- the people -------------------------------------------------------------------------------------

    def _user(self, name: str) -> dict[str, Any]:
        uid = self.users.setdefault(name, 1000 + len(self.users))
        return {"id": uid, "is_bot": False, "first_name": name.title(), "username": name}

    def adapter(self) -> Any:
        from hermes.surfaces.messaging.platforms.telegram import TelegramAdapter

        return TelegramAdapter(self.token, base_url=self.url, poll_timeout=2, voice_dir=self.voice_dir)

    def dm_chat(self, user: str) -> str:
        return str(self._user(user)["id"])

    def allowed(self, users: list[str]) -> list[str]:
        return [self.dm_chat(u) for u in users]

    def say(self, user: str, text: str, *, direct: bool = False, mention: bool = True, thread: str = "") -> None:
        sender = self._user(user)
        chat = {"id": sender["id"], "type": "private"} if direct else {"id": int(GROUP), "type": "supergroup"}
        body = text if direct or not mention else f"@hermes_bot {text}"
        message: dict[str, Any] = {"message_id": next(self.message_ids), "from": sender, "chat": chat,
                                   "date": int(time.time()), "text": body}
        if thread:
            message["message_thread_id"] = int(thread)
            message["is_topic_message"] = True
        self._push({"message": message})

    def say_voice(self, user: str, audio: bytes) -> None:
        """A voice note in a direct chat."""
        sender = self._user(user)
        file_id = f"voice{len(self.files) + 1}"
        self.files[f"voice/{file_id}.oga"] = audio
        self._push({"message": {"message_id": next(self.message_ids), "from": sender, "date": int(time.time()),
                                "chat": {"id": sender["id"], "type": "private"},
                                "voice": {"file_id": file_id, "duration": 2, "mime_type": "audio/ogg"}}})

    def press(self, user: str, post: Posted, choice: str) -> None:
        rows = post.extra["inline_keyboard"]
        button = next(b for row in rows for b in row if b["text"] == choice)
        message = {"message_id": int(post.message_id), "chat": {"id": int(post.chat), "type": "private"},
                   "date": int(time.time()), "text": post.text}
        self._push({"callback_query": {"id": f"cb{len(self.callbacks_answered)}", "from": self._user(user),
                                       "message": message, "data": button["callback_data"],
                                       "chat_instance": "1"}})

    def drop(self) -> None:
        with self.lock:
            self.drop_polls = True
            self.fail_next = True  # and the next call gets a 502, as a proxy in front of the API would send
            self.lock.notify_all()

    def malformed(self) -> None:
        self._push({"message": "this is not a message object"})
        self._push({"edited_channel_post": {"chat": None}})
