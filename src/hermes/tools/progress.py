"""Progress of a long tool call, as an event the session's sink shows (a video render in the queue).

A tool calls :func:`report_progress` with its handler's ``**kw``; the calling session's sink receives a
:class:`ToolProgress` event (re-exported by :mod:`hermes.agent.events`, shown by the console sink).
Without a session, or with a sink that takes no events, nothing happens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes.tools.context import session_of


@dataclass(frozen=True)
class ToolProgress:
    """``name`` is the tool; ``message`` what it is doing now; ``percent`` when the vendor says."""

    name: str
    message: str
    percent: int | None = None


def report_progress(kw: dict[str, Any], name: str, message: str, percent: int | None = None) -> None:
    """Emit a :class:`ToolProgress` to the calling session's sink (see the module docstring)."""
    session = session_of(kw)
    emit = getattr(session.sink, "emit", None) if session is not None else None
    if callable(emit):
        emit(ToolProgress(name, message, percent))
