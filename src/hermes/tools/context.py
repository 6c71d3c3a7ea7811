"""What a tool handler can know about the session that called it.

``dispatch`` passes ``task_id`` (the session id) and ``agent`` — the running session — through the
handler's ``**kw``. ``agent`` satisfies :class:`ToolSession`; tools depend on this protocol, never on
the agent package. Handlers must work without it too (``dispatch`` called directly, e.g. from
execute_code or tests): :func:`session_of` returns None then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from hermes.agent.events import Event, Request
    from hermes.config.settings import Settings
    from hermes.tools.toolsets import Surface


class Sink(Protocol):
    def emit(self, event: Event) -> None: ...

    def ask(self, request: Request) -> Any | None: ...


@runtime_checkable
class ToolSession(Protocol):
    """The running session as tools see it."""

    @property
    def task_id(self) -> str: ...

    surface: Surface
    sink: Sink
    #: per-session state of tools, keyed by a name each tool family chooses
    state: dict[str, Any]
    settings: Settings | None


SESSION_END_KEY = "session_end"


def on_session_end(kw: dict[str, Any], key: str, callback: Callable[[], object]) -> None:
    """Run ``callback`` when the calling session ends (``Agent.close``); one callback per ``key``.

    Without a session (``dispatch`` called directly) nothing is registered: such callers own their cleanup.
    """
    session = session_of(kw)
    if session is not None:
        session.state.setdefault(SESSION_END_KEY, {}).setdefault(key, callback)


def session_of(kw: dict[str, Any]) -> ToolSession | None:
    session = kw.get("agent")
    return session if isinstance(session, ToolSession) else None
