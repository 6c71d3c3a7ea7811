"""The app server's methods and its notifications (the API itself is described in docs/app-server.md).

:class:`AppApi` owns the :class:`~hermes.surfaces.host.SessionHost` and knows which client follows which
session. Methods are plain functions of ``(client, params)`` returning a JSON-able result or raising
:class:`RpcError` / :class:`~hermes.errors.HermesError`. Host events reach every client following the
session as ``event`` notifications; a clarify question or an approval becomes a ``request``
notification, answered with ``clarify.answer`` / ``approval.answer``.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from hermes.agent.events import Event, Request
from hermes.errors import SessionNotFound
from hermes.surfaces.host import LiveSession, RoundTripCancelled, SessionHost
from hermes.tools.toolsets import Surface

if TYPE_CHECKING:
    from hermes.agent.loop import Agent
    from hermes.agent.provider import ChatProvider
    from hermes.config.settings import Settings

logger = logging.getLogger(__name__)

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
APP_ERROR = -32000
APPROVAL_TIMEOUT = 300.0
#: the surfaces a client of the app server starts sessions on: the desktop app and the TUI
CLIENT_SURFACES = (Surface.DESKTOP.value, Surface.TUI.value)
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Client(Protocol):
    """A connected client: notifications are handed to it from any thread, in order."""

    def notify(self, method: str, params: dict[str, Any]) -> None: ...


def event_params(event: Event) -> dict[str, Any]:
    """An agent event as notification params: ``type`` (``text_delta``, ``tool_started``...) and its fields."""
    fields = dataclasses.asdict(event)
    fields["type"] = _CAMEL.sub("_", type(event).__name__).lower()
    return fields


def _text(params: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = params.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise RpcError(INVALID_PARAMS, f"'{name}' must be a non-empty string")
    return value


def _clarify_reply(params: dict[str, Any]) -> dict[str, Any]:
    """``clarify.answer`` params as the clarify tool's result dict (one answer per question, in order)."""
    if params.get("cancel") is True:
        return {"responses": [], "outcome": "cancelled"}
    answers = params.get("answers")
    if not isinstance(answers, list):
        raise RpcError(INVALID_PARAMS, "'answers' must be a list (one per question: text, a list of choices "
                                       "or null to skip), or pass cancel: true")
    responses = []
    for item in answers:
        blank = item is None or (isinstance(item, str | list) and not item)
        if not blank and not isinstance(item, str | list):
            raise RpcError(INVALID_PARAMS, "each answer must be text, a list of choices or null")
        responses.append({"status": "skipped"} if blank else {"status": "answered", "user_response": item})
    return {"responses": responses, "outcome": "submitted"}


class Conversation:
    """The host listener of one API session: fans its events out to the clients following it."""

    def __init__(self, api: AppApi, key: str) -> None:
        self.api, self.key = api, key
        self.pending: tuple[str, str] | None = None  # (request id, kind) of the waiting round trip
        self.waiting: dict[str, Any] | None = None  # its ``request`` notification's params
        #: what a new stored session of this conversation gets (sessions.create)
        self.toolsets: list[str] | None = None
        self.disabled: tuple[str, ...] = ()  # toolsets.disable with this session
        self.surface = Surface.DESKTOP  # sessions.create's surface (desktop or tui)
        self.title: str | None = None
        self.project: str | None = None  # projects.open: laid over its agent whenever that opens

    def agent_opened(self, session: LiveSession, agent: Agent) -> None:
        from hermes.surfaces.appserver.projects import agent_opened

        agent_opened(self, session, agent)

    def on_event(self, session: LiveSession, event: Event) -> None:
        self.api.broadcast(self.key, "event", {"session": self.key, "session_id": session.session_id,
                                                **event_params(event)})

    def on_request(self, session: LiveSession, request: Request) -> Any | None:
        if request.kind == "ui":  # a desktop_ui tool: the desktop page answers (appserver/ui_bridge.py)
            return self.api.ui.call(self.key, request.payload)
        if request.kind not in ("clarify", "approval"):
            return None
        if not self.api.followers(self.key):
            return None  # nobody is connected to answer
        from hermes.tools.clarify.core import no_reply_notice, request_timeout

        request_id = uuid.uuid4().hex[:12]
        timeout = request_timeout(request) if request.kind == "clarify" else APPROVAL_TIMEOUT
        self.pending = (request_id, request.kind)
        self.waiting = {"session": self.key, "session_id": session.session_id, "request_id": request_id,
                        "kind": request.kind, **request.payload}
        self.api.broadcast(self.key, "request", self.waiting)
        try:
            reply = session.next_reply(timeout)
        except RoundTripCancelled:
            reply = {"responses": [], "outcome": "cancelled"} if request.kind == "clarify" else "deny"
        finally:
            self.pending, self.waiting = None, None
        if reply is None and request.kind == "clarify":
            return {"responses": [], "outcome": "timed_out", "notice": no_reply_notice(timeout)}
        return reply


#: methods that load a file the app shares (config.yaml, .env, the projects file), change it and write it
#: back: the app server answers requests concurrently, so two of them at once (two quick toggles) would
#: each write back what it loaded, and the first change would be lost
_FILE_WRITES = frozenset({"ui.prefs.set", "settings.set", "settings.unset", "settings.set_env", "settings.unset_env",
                          "models.select", "toolsets.enable", "toolsets.disable", "projects.create",
                          "projects.change", "projects.delete"})


class AppApi:
    """The API's state: the session host, the sessions opened through it, who follows each."""

    def __init__(self, settings: Settings, *, provider: ChatProvider | None = None,
                 max_concurrent_turns: int = 16, clock: Callable[[], float] | None = None) -> None:
        from hermes.surfaces.appserver.terminals import Terminals
        from hermes.surfaces.appserver.ui_bridge import UiBridge

        self.settings = settings
        self.host = SessionHost(settings, surface=Surface.DESKTOP, provider=provider,
                                max_concurrent_turns=max_concurrent_turns, reload_settings=True)
        self._conversations: dict[str, Conversation] = {}
        self._followers: dict[str, list[Client]] = {}
        self._lock = threading.Lock()
        self._writing = threading.Lock()
        self.methods: dict[str, Callable[[Client, dict[str, Any]], Any]] = {
            "sessions.list": self.sessions_list, "sessions.create": self.sessions_create,
            "sessions.resume": self.sessions_resume, "message.send": self.message_send,
            "turn.interrupt": self.turn_interrupt, "clarify.answer": self.clarify_answer,
            "approval.answer": self.approval_answer,
        }
        # the desktop app's page (desktop_ui tools, prefs, tips) and its terminals
        self.ui = UiBridge(self, clock=clock)
        self.terminals = Terminals(self)
        self.methods.update(self.ui.methods())
        self.methods.update(self.terminals.methods())
        from hermes.surfaces.appserver.projects import ProjectMethods
        from hermes.surfaces.appserver.session_admin import SessionAdmin
        from hermes.surfaces.appserver.settings import SettingsMethods
        from hermes.surfaces.appserver.toolsets import ToolsetMethods

        self.methods.update(SessionAdmin(self).methods())
        self.methods.update(ProjectMethods(self).methods())
        self.methods.update(SettingsMethods(self).methods())
        self.methods.update(ToolsetMethods(self).methods())

    # -- clients ------------------------------------------------------------------------------------------

    def call(self, client: Client, method: str, params: dict[str, Any]) -> Any:
        handler = self.methods.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"unknown method {method!r}; known: {', '.join(sorted(self.methods))}")
        if method in _FILE_WRITES:  # read, change, write back: one at a time, or one change overwrites another
            with self._writing:
                return handler(client, params)
        return handler(client, params)

    def broadcast(self, key: str, method: str, params: dict[str, Any]) -> None:
        for client in self.followers(key):
            try:
                client.notify(method, params)
            except Exception:  # one client gone must not stop the others
                logger.debug("app server: a client failed to take a notification", exc_info=True)

    def followers(self, key: str) -> list[Client]:
        with self._lock:
            return list(self._followers.get(key, ()))

    def follow(self, client: Client, key: str) -> None:
        with self._lock:
            clients = self._followers.setdefault(key, [])
            if client not in clients:
                clients.append(client)

    def forget(self, client: Client) -> None:
        """A client disconnected: it follows nothing any more (its sessions keep running)."""
        with self._lock:
            for clients in self._followers.values():
                if client in clients:
                    clients.remove(client)

    def close(self) -> None:
        self.terminals.close()
        self.host.close()

    def conversation(self, params: dict[str, Any]) -> Conversation:
        """The conversation ``params['session']`` names (an RpcError when this server has none)."""
        key = _text(params, "session")
        with self._lock:
            conversation = self._conversations.get(str(key))
        if conversation is None:
            raise RpcError(INVALID_PARAMS, f"no session {key!r} here; open one with sessions.create or sessions.resume")
        return conversation

    def key_of(self, session_id: str) -> str | None:
        """The handle of the open conversation continuing stored session ``session_id``, or None."""
        with self._lock:
            keys = list(self._conversations)
        return next((k for k in keys if self.host.session_id(k) == session_id), None)

    def drop(self, key: str) -> None:
        """Close conversation ``key`` here: its agent ends, nobody follows it, its handle is unknown."""
        self.host.reset(key)
        with self._lock:
            self._conversations.pop(key, None)
            self._followers.pop(key, None)

    def _open(self, client: Client, key: str) -> Conversation:
        with self._lock:
            conversation = self._conversations.setdefault(key, Conversation(self, key))
        self.follow(client, key)
        return conversation

    # -- methods ---------------------------------------------------------------------------------------------

    def sessions_list(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        limit = params.get("limit", 50)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
            raise RpcError(INVALID_PARAMS, "'limit' must be a whole number from 1 to 1000")
        stored = self.host.store.list_sessions(limit=limit)
        previews = self.host.store.previews([s.id for s in stored])
        with self._lock:
            keys = list(self._conversations)
        live = []
        for key in keys:
            running = self.host.get(key)
            live.append({"session": key, "session_id": self.host.session_id(key),
                         "running": bool(running and running.running)})
        return {
            "sessions": [{"session_id": s.id, "title": s.title, "surface": s.surface, "model": s.model,
                          "created_at": s.created_at, "updated_at": s.updated_at,
                          "message_count": s.message_count, "preview": previews.get(s.id, "")} for s in stored],
            "open": live,
        }

    def sessions_create(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        toolsets = params.get("toolsets")
        if toolsets is not None and not (isinstance(toolsets, list) and all(isinstance(t, str) for t in toolsets)):
            raise RpcError(INVALID_PARAMS, "'toolsets' must be a list of toolset names")
        surface = params.get("surface", Surface.DESKTOP.value)
        if surface not in CLIENT_SURFACES:
            raise RpcError(INVALID_PARAMS, f"'surface' must be one of {', '.join(CLIENT_SURFACES)} (the app's "
                                           "clients); other surfaces have their own commands")
        if toolsets is not None:
            from hermes.tools.toolsets import resolve_toolsets

            resolve_toolsets(Surface(surface), toolsets)  # an unknown name is refused now, not at the first turn
        title = _text(params, "title", required=False)
        key = f"app:{uuid.uuid4().hex}"
        conversation = self._open(client, key)
        conversation.toolsets, conversation.title = toolsets, title
        conversation.surface = Surface(surface)
        return {"session": key, "session_id": None}

    def sessions_resume(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        session_id = str(_text(params, "session_id"))
        try:
            info = self.host.store.get_session(session_id)
        except SessionNotFound:
            raise RpcError(INVALID_PARAMS, f"no stored session {session_id!r}") from None
        key = self.key_of(session_id) or f"app:{session_id}"
        if self.host.session_id(key) is None:
            self.host.conversations.bind(key, session_id)
        conversation = self._open(client, key)
        messages = [{"role": m.get("role"), "content": m.get("content")}
                    for m in self.host.store.messages(session_id) if m.get("role") in ("user", "assistant")]
        return {"session": key, "session_id": session_id, "title": info.title, "messages": messages[-200:],
                "waiting": conversation.waiting}

    def message_send(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        conversation = self.conversation(params)
        text = str(_text(params, "text"))
        if conversation.pending is not None:
            raise RpcError(APP_ERROR, f"the session waits for an answer to its {conversation.pending[1]} request "
                                      f"{conversation.pending[0]}; answer it with {conversation.pending[1]}.answer")
        self.follow(client, conversation.key)
        status = self.host.submit(conversation.key, text, conversation,
                                  toolsets=conversation.toolsets, title=conversation.title,
                                  disabled=conversation.disabled, surface=conversation.surface)
        return {"status": status}

    def turn_interrupt(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        conversation = self.conversation(params)
        return {"interrupted": self.host.interrupt(conversation.key)}

    def _answer(self, params: dict[str, Any], kind: str, value: Any) -> dict[str, Any]:
        conversation = self.conversation(params)
        pending = conversation.pending
        if pending is None or pending[1] != kind:
            raise RpcError(APP_ERROR, f"no {kind} request waits in session {conversation.key}")
        wanted = params.get("request_id")
        if wanted is not None and wanted != pending[0]:
            raise RpcError(APP_ERROR, f"request {wanted!r} is not the one waiting ({pending[0]})")
        return {"accepted": self.host.answer(conversation.key, value)}

    def clarify_answer(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        return self._answer(params, "clarify", _clarify_reply(params))

    def approval_answer(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.tools.requests import APPROVAL_CHOICES

        choice = params.get("choice")
        if choice not in APPROVAL_CHOICES:
            raise RpcError(INVALID_PARAMS, f"'choice' must be one of {', '.join(APPROVAL_CHOICES)}")
        return self._answer(params, "approval", choice)
