"""The session host: many live conversations in one process (see :mod:`hermes.surfaces.host`)."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

from hermes.agent.events import Notice, TurnFinished
from hermes.errors import HermesError, SessionNotFound
from hermes.surfaces.host.live import HostListener, LiveSession, SessionSink
from hermes.tools.toolsets import Surface

if TYPE_CHECKING:
    from hermes.agent.loop import Agent
    from hermes.agent.provider import ChatProvider
    from hermes.config.settings import Settings
    from hermes.store.conversations import ConversationStore
    from hermes.store.sessions import SessionStore

logger = logging.getLogger(__name__)

BusyMode = Literal["queue", "interrupt"]
BUSY_MODES: tuple[BusyMode, ...] = ("queue", "interrupt")
#: what :meth:`SessionHost.submit` did with a message
Submitted = Literal["started", "queued", "interrupting", "reply"]


class SessionHost:
    """Hosts live conversations, one per key, each with its own turn queue (see the package docstring).

    ``busy_mode`` says what a message arriving during a turn does: ``queue`` (default) runs it after
    the turn; ``interrupt`` stops the running turn (the session keeps what was said) and runs it next.
    At most ``max_concurrent_turns`` turns run at once; further conversations wait for a free worker.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        surface: Surface = Surface.MESSAGING,
        busy_mode: BusyMode = "queue",
        max_concurrent_turns: int = 16,
        provider: ChatProvider | None = None,
        reload_settings: bool = False,
    ) -> None:
        if busy_mode not in BUSY_MODES:
            raise ValueError(f"busy_mode must be one of {', '.join(BUSY_MODES)}, not {busy_mode!r}")
        self.settings = settings
        self.surface = surface
        self.busy_mode = busy_mode
        #: read config.yaml again for each new session (TS-9: a change applies from the next session)
        self.reload_settings = reload_settings
        self._provider = provider
        self._own_provider = provider is None
        self._sessions: dict[str, LiveSession] = {}
        self._lock = threading.RLock()
        self._pool = ThreadPoolExecutor(max_workers=max(1, max_concurrent_turns), thread_name_prefix="hermes-turn")
        self._store: SessionStore | None = None
        self._conversations: ConversationStore | None = None
        self._closed = False

    # -- public API -----------------------------------------------------------------------------------

    def submit(self, key: str, text: str, listener: HostListener, *, toolsets: list[str] | None = None,
               title: str | None = None, disabled: tuple[str, ...] = (), surface: Surface | None = None) -> Submitted:
        """Hand the host a message of conversation ``key``.

        While a round trip of that conversation waits for the person (clarify, approval), the message
        is its reply (``"reply"``). Otherwise it starts a turn (``"started"``), or, during a turn, waits
        for it (``"queued"``) or interrupts it (``"interrupting"``, with ``busy_mode="interrupt"``).
        ``listener`` receives this conversation's events from now on; ``toolsets``, ``disabled`` (toolsets
        turned off), ``title`` and ``surface`` (None: the host's) are used when the conversation starts a new
        stored session.
        """
        with self._lock:
            if self._closed:
                raise HermesError("the session host is closed")
            live = self._sessions.get(key)
            if live is None:
                live = self._sessions[key] = LiveSession(key, listener, toolsets=toolsets, title=title,
                                                         disabled=disabled, surface=surface)
        with live.lock:
            live.listener = listener
            live.last_active = time.monotonic()
            if live.awaiting_reply:
                live.put_reply(text)
                return "reply"
            live.inbox.append(text)
            if not live.running:
                live.running = True
                live.idle.clear()
                self._pool.submit(self._drain, live)
                return "started"
            if self.busy_mode == "interrupt" and live.agent is not None:
                live.agent.interrupt()
                return "interrupting"
            return "queued"

    def answer(self, key: str, value: Any) -> bool:
        """Answer the round trip conversation ``key`` waits on (any value its listener understands)."""
        live = self.get(key)
        if live is None or not live.awaiting_reply:
            return False
        live.put_reply(value)
        return True

    def interrupt(self, key: str) -> bool:
        """Stop the running turn of ``key`` and drop its queued messages; False when nothing ran."""
        live = self.get(key)
        if live is None:
            return False
        with live.lock:
            live.inbox.clear()
            if not live.running or live.agent is None:
                return False
            live.agent.interrupt()
            live.cancel_round_trip()
            return True

    def reset(self, key: str) -> None:
        """Forget conversation ``key``: its running turn stops, its next message starts a new session
        (the old one stays in the store)."""
        self.interrupt(key)
        with self._lock:
            live = self._sessions.pop(key, None)
        if live is not None:
            live.idle.wait(30)
            if live.agent is not None:
                live.agent.close()
        self.conversations.unbind(key)

    def get(self, key: str) -> LiveSession | None:
        with self._lock:
            return self._sessions.get(key)

    def session_id(self, key: str) -> str | None:
        """The stored session conversation ``key`` continues (live or not), or None."""
        live = self.get(key)
        if live is not None and live.session_id is not None:
            return live.session_id
        return self.conversations.session_for(key)

    def wait_idle(self, key: str, timeout: float) -> bool:
        """Wait until conversation ``key`` has no turn running or queued; False on timeout."""
        live = self.get(key)
        return True if live is None else live.idle.wait(timeout)

    def evict_idle(self, idle_seconds: float) -> int:
        """Let go of conversations idle for ``idle_seconds`` (memory); they resume from the store later."""
        now = time.monotonic()
        with self._lock:
            stale = [k for k, s in self._sessions.items()
                     if not s.running and not s.awaiting_reply and now - s.last_active >= idle_seconds]
            gone = [self._sessions.pop(k) for k in stale]
        for live in gone:
            if live.agent is not None:
                live.agent.close()
        return len(gone)

    @property
    def live_count(self) -> int:
        with self._lock:
            return len(self._sessions)

    @property
    def busy_count(self) -> int:
        with self._lock:
            return sum(1 for s in self._sessions.values() if s.running)

    def close(self, timeout: float = 10.0) -> None:
        """Stop every turn, end every session (their tools' cleanup runs) and release the store."""
        with self._lock:
            self._closed = True
            keys = list(self._sessions)
        for key in keys:
            self.interrupt(key)
        self._pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for live in sessions:
            if live.agent is not None:
                live.agent.close()
        for store in (self._store, self._conversations):
            if store is not None:
                store.close()

    # -- stores and agents ------------------------------------------------------------------------------

    @property
    def store(self) -> SessionStore:
        with self._lock:
            if self._store is None:
                from hermes.store.sessions import SessionStore

                self._store = SessionStore(self.settings.paths.database)
            return self._store

    @property
    def conversations(self) -> ConversationStore:
        with self._lock:
            if self._conversations is None:
                from hermes.store.conversations import ConversationStore

                self._conversations = ConversationStore(self.settings.paths.database)
            return self._conversations

    def provider(self) -> ChatProvider:
        """The one model client every hosted session shares."""
        with self._lock:
            if self._provider is None:
                from hermes.agent.session import make_provider

                self._provider = make_provider(self.settings, self.settings.model())
            return self._provider

    def forget_provider(self) -> None:
        """The model settings changed: build the shared model client anew for the next session (running
        sessions keep theirs; a provider handed to the host is kept)."""
        with self._lock:
            if self._own_provider:
                self._provider = None

    def _settings_now(self) -> Settings:
        if not self.reload_settings:
            return self.settings
        from hermes.config.settings import Settings

        return Settings.load(self.settings.paths, self.settings.overrides)

    def _open(self, live: LiveSession) -> Agent:
        from hermes.agent.session import SessionRequest, new_agent, open_agent

        sink = SessionSink(live)
        settings = self._settings_now()
        stored = self.conversations.session_for(live.key)
        if stored is not None:
            try:
                return open_agent(settings, SessionRequest(live.surface or self.surface, resume=stored), sink,
                                  provider=self.provider(), store=self.store)
            except SessionNotFound:
                logger.info("conversation %s: its session %s is gone; starting a new one", live.key, stored)
        agent = new_agent(settings, live.surface or self.surface, sink, requested=live.toolsets,
                          provider=self.provider(), store=self.store, title=live.title, disabled=live.disabled)
        if agent.session_id is not None:
            self.conversations.bind(live.key, agent.session_id)
        return agent

    # -- the turn queue ----------------------------------------------------------------------------------

    def _drain(self, live: LiveSession) -> None:
        """Run the conversation's queued messages one turn at a time (on a worker thread)."""
        while True:
            with live.lock:
                if not live.inbox or self._closed:
                    live.inbox.clear()
                    live.running = False
                    live.last_active = time.monotonic()
                    live.idle.set()
                    return
                text = live.inbox.popleft()
            self._turn(live, text)

    def _turn(self, live: LiveSession, text: str) -> None:
        try:
            if live.agent is None:
                live.agent = self._open(live)
                opened = getattr(live.listener, "agent_opened", None)
                if callable(opened):
                    opened(live, live.agent)
            live.turns += 1
            live.agent.run_turn(text)
        except HermesError as exc:
            live.emit(Notice("error", f"✗ {exc}"))
            live.emit(TurnFinished("", 0, "error"))
        except Exception as exc:  # a bug in a turn ends that turn, never the host
            logger.exception("conversation %s: the turn failed", live.key)
            live.emit(Notice("error", f"✗ the turn failed: {type(exc).__name__}"))
            live.emit(TurnFinished("", 0, "error"))
