"""One live conversation in a :class:`~hermes.surfaces.host.SessionHost`: its agent, turn queue and round trips.

A :class:`LiveSession` is created by the host for a conversation key. Its agent is opened (or resumed)
lazily, on the first turn, by the host's worker thread. Events the agent emits go to the session's
:class:`HostListener`; a request the agent sends (clarify questions, an approval) goes to
:meth:`HostListener.on_request`, which may wait for the person's replies with :meth:`LiveSession.next_reply`
— replies are what the surface hands the host (:meth:`SessionHost.submit` while a round trip waits, or
:meth:`SessionHost.answer`).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

from hermes.agent.events import Event, Request

if TYPE_CHECKING:
    from hermes.agent.loop import Agent
    from hermes.tools.toolsets import Surface

logger = logging.getLogger(__name__)


class RoundTripCancelled(Exception):
    """Raised by :meth:`LiveSession.next_reply` when the conversation was interrupted, reset or closed."""


class HostListener(Protocol):
    """What a surface gives the host for a conversation: where its events and requests go.

    Both are called from the host's worker threads (never from the caller of ``submit``), one turn of
    a conversation at a time; they may block (sending to a platform, waiting for a reply). A listener may
    also have ``agent_opened(session, agent)``: called on that thread each time the conversation's agent
    is opened (new, resumed, or again after :meth:`SessionHost.evict_idle`), before its turn runs — the
    desktop app lays its chosen project over the session there.
    """

    def on_event(self, session: LiveSession, event: Event) -> None:
        """An event of the agent loop (text, tool activity, notices, the end of a turn)."""
        ...

    def on_request(self, session: LiveSession, request: Request) -> Any | None:
        """Ask the person (``request.kind``: ``clarify``, ``approval``, ...); ``None``: nobody can answer."""
        ...


_CANCELLED = object()
#: request kinds the surface answers without the person's reply (the desktop page's ``ui`` calls): they
#: neither wait on the reply queue nor turn the conversation's next message into a reply
DIRECT_KINDS = frozenset({"ui"})


class LiveSession:
    """A conversation hosted in this process (see the module docstring). Thread-safe."""

    def __init__(self, key: str, listener: HostListener, *, toolsets: list[str] | None = None,
                 title: str | None = None, disabled: tuple[str, ...] = (), surface: Surface | None = None) -> None:
        self.key = key
        #: the surface a new session of this conversation is started on (None: the host's)
        self.surface = surface
        self.listener = listener
        #: toolsets a new session of this conversation gets (None: the surface's configured ones)
        self.toolsets = toolsets
        #: toolsets a new session of this conversation does not get (on top of agent.disabled_toolsets)
        self.disabled = disabled
        self.title = title
        self.agent: Agent | None = None
        self.inbox: deque[str] = deque()
        self.running = False
        self.last_active = time.monotonic()
        self.turns = 0
        self._replies: queue.Queue[object] = queue.Queue()
        self._waiting = 0
        self.lock = threading.RLock()
        self.idle = threading.Event()
        self.idle.set()

    # -- what the surface sees ----------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self.agent.session_id if self.agent is not None else None

    @property
    def awaiting_reply(self) -> bool:
        """Whether a round trip (clarify, approval) is waiting for the person's reply now."""
        with self.lock:
            return self._waiting > 0

    def next_reply(self, timeout: float) -> Any | None:
        """The person's next reply during a round trip; None after ``timeout`` seconds without one.

        Raises :class:`RoundTripCancelled` when the conversation is interrupted, reset or closed.
        """
        try:
            reply = self._replies.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None
        if reply is _CANCELLED:
            raise RoundTripCancelled("the conversation cancelled the pending request")
        return reply

    # -- used by the host -----------------------------------------------------------------------------

    def put_reply(self, value: Any) -> None:
        self._replies.put(value)

    def cancel_round_trip(self) -> None:
        """Wake a waiting round trip with a cancellation (nothing happens when none waits)."""
        if self.awaiting_reply:
            self._replies.put(_CANCELLED)

    def ask(self, request: Request) -> Any | None:
        if request.kind in DIRECT_KINDS:  # answered by the surface itself: no reply from the person to wait for
            return self.listener.on_request(self, request)
        with self.lock:
            self._waiting += 1
            while not self._replies.empty():  # a reply left over from an earlier round trip is stale
                self._replies.get_nowait()
        try:
            return self.listener.on_request(self, request)
        finally:
            with self.lock:
                self._waiting -= 1

    def emit(self, event: Event) -> None:
        try:
            self.listener.on_event(self, event)
        except Exception:  # a surface failing to show an event must not break the turn
            logger.warning("conversation %s: the surface failed on %s", self.key, type(event).__name__,
                           exc_info=True)


class SessionSink:
    """The :class:`~hermes.agent.events.EventSink` of a live session's agent: everything goes to its listener."""

    def __init__(self, session: LiveSession) -> None:
        self.session = session

    def emit(self, event: Event) -> None:
        self.session.emit(event)

    def ask(self, request: Request) -> Any | None:
        return self.session.ask(request)
