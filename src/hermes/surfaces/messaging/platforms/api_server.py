"""The OpenAI-compatible API server platform: any OpenAI client can use a hermes agent as a model.

Endpoints (Starlette on uvicorn, inside the gateway's event loop):

* ``GET /v1/models`` — one model, ``model_name`` (default ``hermes-agent``);
* ``POST /v1/chat/completions`` — the last ``user`` message of the body is the next turn of the
  conversation named by the ``X-Hermes-Conversation`` header (or the body's ``conversation_id``, or
  its ``user`` field); the session keeps the history, so earlier messages of the body are not replayed.
  Without any id each request is a conversation of its own. ``stream: true`` answers with server-sent
  ``chat.completion.chunk`` events as the answer streams; tool activity comes as chunks with no
  ``choices`` and a ``hermes_event`` object (``{"type": "tool_started"|"tool_finished", "name", ...}``),
  which ordinary clients skip. Without streaming the completion carries the same list in ``hermes_events``.
  A conversation already running a turn answers 409.

Keys: the server never starts without ``keys`` (the comma-separated ``HERMES_API_KEYS``), even on
loopback: loopback is shared with every local user and with the agent's own sandboxed commands (a
network-allowed command could otherwise drive the agent that runs it). Every request needs
``Authorization: Bearer KEY``; each key's conversations are its own. A request from a browser page of
another site (an ``Origin`` header that is not loopback) is refused with 403, and a POST must say
``Content-Type: application/json`` (415), so a web page's form or no-cors ``fetch`` cannot run a turn.
Nobody can answer clarify questions or approvals through this API: they
get no reply (clarify: ``undelivered``; dangerous commands: denied).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from hermes.agent.events import Event, Notice, Request, TextDelta, ToolFinished, ToolStarted, TurnFinished
from hermes.net.local import origin_is_local
from hermes.surfaces.messaging.adapter import Deliver, PlatformAdapter, PlatformError
from hermes.surfaces.messaging.platforms.httpserve import AppServer

if TYPE_CHECKING:
    from starlette.requests import Request as HttpRequest
    from starlette.responses import Response

    from hermes.surfaces.host import LiveSession, SessionHost

logger = logging.getLogger(__name__)


def _error(status: int, message: str, kind: str = "invalid_request_error") -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


class _Listener:
    """A request's view of its conversation: the host's events as an asyncio queue."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.events: asyncio.Queue[Event] = asyncio.Queue()

    def on_event(self, session: LiveSession, event: Event) -> None:
        self.loop.call_soon_threadsafe(self.events.put_nowait, event)

    def on_request(self, session: LiveSession, request: Request) -> Any | None:
        return None  # nobody can answer through the API


def _activity(event: Event) -> dict[str, Any] | None:
    if isinstance(event, ToolStarted):
        return {"type": "tool_started", "id": event.call_id, "name": event.name, "arguments": event.arguments}
    if isinstance(event, ToolFinished):
        return {"type": "tool_finished", "id": event.call_id, "name": event.name, "is_error": event.is_error,
                "seconds": round(event.seconds, 3)}
    return None


class ApiServerAdapter(PlatformAdapter):
    name = "api_server"
    supports_edit = False
    supports_files = False

    def __init__(self, *, host: str = "127.0.0.1", port: int = 8642, keys: list[str] | None = None,
                 name: str = "api_server", model_name: str = "hermes-agent",
                 keys_env: str = "HERMES_API_KEYS") -> None:
        super().__init__()
        self.name = name
        self.bind_host, self.port = host, port
        self._keys = [k for k in (keys or []) if k]
        self.keys_env = keys_env
        self.model_name = model_name
        self.session_host: SessionHost | None = None
        self._serving = AppServer(name, host, port)

    def use_host(self, host: SessionHost) -> None:
        """The gateway hands over its session host (this platform talks to it directly)."""
        self.session_host = host

    @property
    def url(self) -> str:
        return f"http://{self.bind_host}:{self.port}/v1"

    # -- lifecycle ---------------------------------------------------------------------------------

    async def connect(self) -> None:
        if not self._keys:
            raise PlatformError(f"{self.name}: refusing to start without API keys: set {self.keys_env} "
                                "(comma-separated bearer keys; loopback is reachable by every local program, "
                                "the agent's own commands included)")
        if self.session_host is None:
            raise PlatformError(f"{self.name}: no session host")
        self._serving = AppServer(self.name, self.bind_host, self.port)
        self._serving.start(self._app())
        self.port = self._serving.port

    async def listen(self, deliver: Deliver) -> None:
        await self._serving.serve()

    async def close(self) -> None:
        await self._serving.stop()

    async def send_text(self, chat: str, text: str, thread: str = "") -> str:
        raise PlatformError(f"{self.name}: answers go back on the HTTP response, not as messages")

    # -- HTTP ---------------------------------------------------------------------------------------------

    def _app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.routing import Route

        return Starlette(routes=[
            Route("/v1/models", self._models, methods=["GET"]),
            Route("/v1/chat/completions", self._completions, methods=["POST"]),
            Route("/health", self._health, methods=["GET"]),
        ])

    def _foreign(self, request: HttpRequest) -> Response | None:
        """The refusal for a request a web page may have sent (see the module docstring), else None."""
        if not origin_is_local(request.headers.get("origin")):
            return _error(403, "requests from web pages of other sites are refused", "permission_error")
        if request.method == "POST":
            kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if kind != "application/json":
                return _error(415, "the body must be sent as Content-Type: application/json")
        return None

    def _caller(self, request: HttpRequest) -> str | None:
        """The caller's key id, or None when the request is not allowed."""
        header = request.headers.get("authorization", "")
        given = header[7:].strip() if header[:7].lower() == "bearer " else ""
        for key in self._keys:
            if given and hmac.compare_digest(given.encode(), key.encode()):
                return hashlib.sha256(key.encode()).hexdigest()[:12]
        return None

    async def _health(self, request: HttpRequest) -> Response:
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "ok"})

    async def _models(self, request: HttpRequest) -> Response:
        from starlette.responses import JSONResponse

        if (refused := self._foreign(request)) is not None:
            return refused
        if self._caller(request) is None:
            return _error(401, "a valid API key is required (Authorization: Bearer KEY)", "authentication_error")
        return JSONResponse({"object": "list", "data": [
            {"id": self.model_name, "object": "model", "created": 0, "owned_by": "hermes"}]})

    async def _completions(self, request: HttpRequest) -> Response:
        if (refused := self._foreign(request)) is not None:
            return refused
        caller = self._caller(request)
        if caller is None:
            return _error(401, "a valid API key is required (Authorization: Bearer KEY)", "authentication_error")
        try:
            body = json.loads(await request.body())
        except ValueError:
            return _error(400, "the body is not JSON")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "messages must be a list of chat messages")
        text = next((_text_of(m.get("content")) for m in reversed(body["messages"])
                     if isinstance(m, dict) and m.get("role") == "user"), "")
        if not text.strip():
            return _error(400, "messages holds no user message with text")
        conversation = str(request.headers.get("x-hermes-conversation") or body.get("conversation_id")
                           or body.get("user") or uuid.uuid4().hex).replace(":", "_")[:200]
        key = f"{self.name}:{caller}/{conversation}:"
        host = self.session_host
        assert host is not None
        live = host.get(key)
        if live is not None and live.running:
            return _error(409, "this conversation is still answering its previous message", "conflict_error")
        listener = _Listener(asyncio.get_running_loop())
        host.submit(key, text, listener, title=f"api {conversation[:40]}")
        created, completion_id = int(time.time()), f"chatcmpl-{uuid.uuid4().hex[:24]}"
        if body.get("stream"):
            from starlette.responses import StreamingResponse

            return StreamingResponse(self._stream(listener, key, created, completion_id),
                                     media_type="text/event-stream", headers={"x-hermes-conversation": conversation})
        return await self._whole(listener, created, completion_id, conversation)

    async def _whole(self, listener: _Listener, created: int, completion_id: str, conversation: str) -> Response:
        from starlette.responses import JSONResponse

        activity: list[dict[str, Any]] = []
        errors: list[str] = []
        while True:
            event = await listener.events.get()
            found = _activity(event)
            if found is not None:
                activity.append(found)
            elif isinstance(event, Notice) and event.level == "error":
                errors.append(event.message)
            elif isinstance(event, TurnFinished):
                break
        if event.reason == "error":
            return _error(502, errors[-1] if errors else "the turn failed", "api_error")
        return JSONResponse({
            "id": completion_id, "object": "chat.completion", "created": created, "model": self.model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": event.final},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            "hermes_events": activity, "conversation_id": conversation,
        }, headers={"x-hermes-conversation": conversation})

    async def _stream(self, listener: _Listener, key: str, created: int, completion_id: str) -> AsyncIterator[bytes]:
        def chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> bytes:
            data: dict[str, Any] = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                                    "model": self.model_name,
                                    "choices": [] if delta is None else
                                    [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
            return f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode()

        streamed = False
        errors: list[str] = []
        try:
            yield chunk({"role": "assistant", "content": ""})
            while True:
                event = await listener.events.get()
                found = _activity(event)
                if found is not None:
                    yield chunk(None, hermes_event=found)
                elif isinstance(event, TextDelta):
                    streamed = True
                    yield chunk({"content": event.text})
                elif isinstance(event, Notice) and event.level == "error":
                    errors.append(event.message)
                elif isinstance(event, TurnFinished):
                    if event.reason == "error":
                        error = {"message": errors[-1] if errors else "the turn failed", "type": "api_error"}
                        yield f"data: {json.dumps({'error': error})}\n\n".encode()
                        return
                    if not streamed and event.final:
                        yield chunk({"content": event.final})
                    yield chunk({}, "stop")
                    yield b"data: [DONE]\n\n"
                    return
        except asyncio.CancelledError:  # the client went away: stop the turn
            if self.session_host is not None:
                self.session_host.interrupt(key)
            raise
