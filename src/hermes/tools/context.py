"""What a tool handler can know about the session that called it.

Dispatch passes ``task_id`` and ``session`` — the calling :class:`hermes.tools.session.ToolSession` —
through the handler's ``**kw``. Tools depend on the :class:`SessionView` protocol, never on the agent
package. Handlers that do not declare ``needs_session=True`` must work without a session too (the
catalog's ``registry.dispatch`` called directly): :func:`session_of` returns None then.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.tools.requests import Request
    from hermes.tools.toolsets import Surface


class Sink(Protocol):
    """Where a tool asks the person (:mod:`hermes.tools.requests`); ``None``: nobody answered."""

    def ask(self, request: Request) -> Any | None: ...


@runtime_checkable
class SessionView(Protocol):
    """The running session as tools see it."""

    @property
    def task_id(self) -> str: ...

    @property
    def surface(self) -> Surface: ...

    @property
    def sink(self) -> Sink: ...

    #: per-session state of tools, keyed by a name each tool family chooses
    state: dict[str, Any]

    @property
    def settings(self) -> Settings | None: ...


SESSION_END_KEY = "session_end"
#: ``session.state`` key of a messaging session's chat: ``(platform table name, chat id)``, set by the gateway
CHAT_ORIGIN_KEY = "chat_origin"


def chat_origin(kw: dict[str, Any]) -> tuple[str, str] | None:
    """The platform and chat the calling session answers in (a messaging session), else None."""
    session = session_of(kw)
    origin = session.state.get(CHAT_ORIGIN_KEY) if session is not None else None
    if isinstance(origin, tuple) and len(origin) == 2 and all(isinstance(v, str) for v in origin):
        return origin[0], origin[1]
    return None


def on_session_end(kw: dict[str, Any], key: str, callback: Callable[[], object]) -> None:
    """Run ``callback`` when the calling session ends (``Agent.close``); one callback per ``key``.

    Without a session (the catalog's dispatch) nothing is registered: such callers own their cleanup.
    """
    session = session_of(kw)
    if session is not None:
        session.state.setdefault(SESSION_END_KEY, {}).setdefault(key, callback)


#: per-session callables the agent asks before each model step for notes to the model (``on_model_step``)
MODEL_NOTES_KEY = "model_notes"


def on_model_step(kw: dict[str, Any], key: str, notes: Callable[[], list[str]]) -> None:
    """Ask ``notes`` before each of the calling session's model steps; what it returns (lines of text,
    often none) is told to the model in one note. One callable per ``key``; nothing without a session."""
    session = session_of(kw)
    if session is not None:
        session.state.setdefault(MODEL_NOTES_KEY, {}).setdefault(key, notes)


def session_of(kw: dict[str, Any]) -> SessionView | None:
    """The calling session, or None outside one (the catalog's ``registry.dispatch`` passes none)."""
    session: SessionView | None = kw.get("session")
    if session is None:
        return None
    kind = type(session)
    if kind in _FITS:  # a runtime Protocol check costs ~10 µs: once per type that passed it
        return session
    if not isinstance(session, SessionView):
        return None
    if kind is not SimpleNamespace:  # instances of a class share its shape; namespaces do not
        _FITS.add(kind)
    return session


_FITS: set[type] = set()
