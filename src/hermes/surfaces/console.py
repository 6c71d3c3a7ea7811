"""An event sink that writes to a terminal: streamed text, compact tool activity, notices.

Used by the interactive chat (text streamed to stdout) and by one-shot runs (nothing but the final
answer on stdout; activity on stderr). Thread-safe: tool events arrive from worker threads.

An *interactive* sink (the chat) answers requests through :mod:`hermes.surfaces.clarify_cli`:
``clarify`` with the question prompt, ``approval`` with ``Allow? [o]nce / [s]ession / [a]lways /
[d]eny`` (answering ``"once"``, ``"session"``, ``"always"`` or ``"deny"``). On a terminal these are
prompt_toolkit prompts; when stdin is not a terminal they read plain lines from it. One request is
asked at a time; events arriving meanwhile are held and shown afterwards. A non-interactive sink
(one-shot) answers every request with ``None``.
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
    ToolProgress,
    ToolStarted,
    TurnFinished,
)

MAX_ARG_PREVIEW = 80
#: how long an approval prompt waits when the request does not say (then: nobody answered)
APPROVAL_TIMEOUT = 300.0


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
        interactive: bool = False,
        stdin: TextIO | None = None,
    ) -> None:
        self.out = out or sys.stdout
        self.activity = activity or sys.stdout
        self.stream_text = stream_text
        self.color = self.activity.isatty() if color is None else color
        #: whether a person at this terminal answers requests (clarify, approvals)
        self.interactive = interactive
        self._stdin = stdin
        self._lock = threading.Lock()
        self._ask_lock = threading.Lock()
        self._held: list[Event] | None = None
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
            if self._held is not None:  # a prompt owns the terminal; show this afterwards
                self._held.append(event)
            else:
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
        elif isinstance(event, ToolProgress):
            share = f" {event.percent}%" if event.percent is not None else ""
            self._line(self._c("2", f"  … {event.name}: {event.message}{share}"))
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

    # -- requests ---------------------------------------------------------------------------------
    def ask(self, request: Request) -> Any | None:
        """Ask the person (interactive sinks only); ``None`` when nobody can answer this request."""
        if not self.interactive or request.kind not in ("clarify", "approval"):
            return None
        with self._ask_lock:
            with self._lock:
                if self._mid_line:
                    self.out.write("\n")
                    self.out.flush()
                    self._mid_line = False
                self._held = []
            try:
                return self._clarify(request) if request.kind == "clarify" else self._approve(request)
            finally:
                with self._lock:
                    held, self._held = self._held or [], None
                    for event in held:
                        self._emit(event)

    def _terminal(self) -> bool:
        stdin = self._stdin or sys.stdin
        return self._stdin is None and stdin.isatty() and self.out.isatty()

    def _clarify(self, request: Request) -> Any | None:
        from hermes.surfaces import clarify_cli
        from hermes.tools.clarify.core import ClarifySession, request_questions, request_timeout

        questions = request_questions(request)
        if not questions:
            return None
        state = ClarifySession(questions)
        if self._terminal():
            return clarify_cli.run_clarify_prompt(state, request_timeout(request)).result()
        stdin = self._stdin or sys.stdin
        return clarify_cli.line_clarify(state, stdin.readline, self._write_prompt).result()

    def _approve(self, request: Request) -> str | None:
        from hermes.surfaces import clarify_cli
        from hermes.tools.clarify.core import request_timeout

        command = str(request.payload.get("command", ""))
        reason = str(request.payload.get("reason", ""))
        if self._terminal():
            wait = request_timeout(request, APPROVAL_TIMEOUT)
            return clarify_cli.run_approval_prompt(command, reason, wait)
        return clarify_cli.line_approval(command, reason, self._stdin or sys.stdin, self._write_prompt)

    def _write_prompt(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
