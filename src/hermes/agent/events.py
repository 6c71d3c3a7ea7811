"""The one channel between the agent loop and a surface: typed events into an :class:`EventSink`.

The loop never calls surface-specific callbacks. It emits events (text as it streams, tool activity,
retries, notices, the end of a turn) and, when it needs a person, sends a request through
:meth:`EventSink.ask`. A surface with nobody there answers requests with ``None``.

Sinks may be called from tool worker threads, so implementations must be thread-safe.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from hermes.tools.progress import ToolProgress as ToolProgress  # emitted by tools, re-exported here
from hermes.tools.requests import Request as Request  # defined with the tools, re-exported here


@dataclass(frozen=True)
class TextDelta:
    """A piece of the assistant's answer as it streams."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of the model's reasoning, for endpoints that stream it separately."""

    text: str


@dataclass(frozen=True)
class AssistantMessage:
    """One complete model reply (its text and the tool calls it asked for)."""

    content: str | None
    tool_calls: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolStarted:
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolFinished:
    call_id: str
    name: str
    result: str
    is_error: bool
    seconds: float


@dataclass(frozen=True)
class Retrying:
    """The model endpoint failed transiently; the loop waits and tries again."""

    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True)
class Notice:
    level: Literal["info", "warning", "error"]
    message: str


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int


StopReason = Literal["answered", "budget_exhausted", "interrupted", "error"]


@dataclass(frozen=True)
class TurnFinished:
    final: str
    iterations: int
    reason: StopReason


Event = (
    TextDelta | ReasoningDelta | AssistantMessage | ToolStarted | ToolFinished | Retrying | Notice | Usage
    | TurnFinished | ToolProgress
)


class EventSink(Protocol):
    def emit(self, event: Event) -> None: ...

    def ask(self, request: Request) -> Any | None:
        """Ask the person; ``None`` when nobody can answer on this surface."""
        ...


class NullSink:
    """Discards events; nobody is there to answer requests."""

    def emit(self, event: Event) -> None:
        return None

    def ask(self, request: Request) -> Any | None:
        return None


class RecordingSink:
    """Keeps every event (thread-safe); handy for batch runs and tests."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def emit(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def ask(self, request: Request) -> Any | None:
        return None

    def of_type(self, kind: type) -> list[Event]:
        with self._lock:
            return [e for e in self.events if isinstance(e, kind)]
