"""A tool session and an approval sink for calling the terminal tools directly (``dispatch(..., session=)``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from hermes.config.settings import Settings
from hermes.tools.requests import Request
from hermes.tools.toolsets import Surface


class ScriptedSink:
    """Records approval requests and answers them from a script (None once the script runs out)."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.asked: list[Request] = []
        self._lock = threading.Lock()

    def emit(self, event: Any) -> None:
        return None

    def ask(self, request: Request) -> Any | None:
        with self._lock:
            self.asked.append(request)
            return self.answers.pop(0) if self.answers else None


@dataclass
class FakeSession:
    """Satisfies hermes.tools.context.SessionView."""

    task_id: str
    surface: Surface
    sink: ScriptedSink
    settings: Settings | None
    state: dict[str, Any] = field(default_factory=dict)
