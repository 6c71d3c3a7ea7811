"""An event sink that writes to a terminal: streamed text, compact tool activity, notices.

Used by the interactive chat (text streamed to stdout) and by one-shot runs (nothing but the final
answer on stdout; activity on stderr). Thread-safe: tool events arrive from worker threads.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, TextIO

from hermes.agent.events import (
    Event,
    Notice,
    Request,
    Retrying,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)

MAX_ARG_PREVIEW = 80


def preview_arguments(raw: str, limit: int = MAX_ARG_PREVIEW) -> str:
    """``key=value, ...`` from a JSON argument string, shortened for one line."""
    try:
        args = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        text = raw
    else:
        if isinstance(args, dict):
            text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
        else:
            text = json.dumps(args, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def preview_error(result: str) -> str:
    try:
        value = json.loads(result)
    except json.JSONDecodeError:
        return result[:120]
    if isinstance(value, dict) and "error" in value:
        return str(value["error"])[:160]
    return result[:120]


class ConsoleSink:
    def __init__(
        self,
        *,
        out: TextIO | None = None,
        activity: TextIO | None = None,
        stream_text: bool = True,
        color: bool | None = None,
    ) -> None:
        self.out = out or sys.stdout
        self.activity = activity or sys.stdout
        self.stream_text = stream_text
        self.color = self.activity.isatty() if color is None else color
        self._lock = threading.Lock()
        self._mid_line = False

    def _c(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def _line(self, text: str) -> None:
        if self._mid_line and self.activity is self.out:
            self.out.write("\n")
            self._mid_line = False
        self.activity.write(text + "\n")
        self.activity.flush()

    def emit(self, event: Event) -> None:
        with self._lock:
            self._emit(event)

    def _emit(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            if self.stream_text:
                self.out.write(event.text)
                self.out.flush()
                self._mid_line = not event.text.endswith("\n")
        elif isinstance(event, ToolStarted):
            self._line(self._c("2", f"  ⚙ {event.name}({preview_arguments(event.arguments)})"))
        elif isinstance(event, ToolFinished):
            if event.is_error:
                self._line(self._c("33", f"  ✗ {event.name}: {preview_error(event.result)}"))
            else:
                self._line(self._c("2", f"  ✓ {event.name} ({event.seconds:.1f}s, {len(event.result)} chars)"))
        elif isinstance(event, Retrying):
            self._line(self._c("33", f"  ↻ model endpoint: {event.reason}; retry {event.attempt} in "
                                     f"{event.delay:.1f}s"))
        elif isinstance(event, Notice):
            color = {"info": "2", "warning": "33", "error": "31"}[event.level]
            self._line(self._c(color, f"  {event.message}"))
        elif isinstance(event, TurnFinished):
            if self.stream_text and self._mid_line:
                self.out.write("\n")
                self.out.flush()
                self._mid_line = False
            if event.reason == "budget_exhausted":
                self._line(self._c("33", f"  (tool budget of {event.iterations} iterations used up)"))

    def ask(self, request: Request) -> Any | None:
        return None
