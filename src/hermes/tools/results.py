"""Shaping tool results before they reach the model.

Results are JSON strings. A result longer than the budget (``agent.tool_result_budget``, 50,000
characters by default; a tool may declare its own ``max_result_chars``) is never cut silently: the
full text is written to a file under ``HERMES_HOME/cache/tool_results/`` and the model receives the
head and tail of it with a marker naming how much was left out and where the whole result is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRUNCATION_MARKER = "[hermes: tool result truncated"


class ToolResult:
    """One call's outcome: the JSON text the model sees, whether it is an error, and notes for surfaces.

    A handler may return one itself to pass notes on; ``metadata["notices"]`` (a list of sentences) is
    shown to the person on every surface as a notice, beside the result the model gets.

    A plain class, not a dataclass: this module is imported at start-up, where building a dataclass costs
    about a millisecond."""

    __slots__ = ("is_error", "metadata", "text")

    def __init__(self, text: str, is_error: bool = False, metadata: dict[str, Any] | None = None) -> None:
        self.text = text
        self.is_error = is_error
        self.metadata: dict[str, Any] = metadata if metadata is not None else {}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolResult):
            return NotImplemented
        return (self.text, self.is_error, self.metadata) == (other.text, other.is_error, other.metadata)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ToolResult(text={self.text!r}, is_error={self.is_error!r}, metadata={self.metadata!r})"


class ErrorText(str):
    """A JSON ``{"error": ...}`` text, marked so dispatch knows it is an error without parsing it."""

    __slots__ = ()


def error_json(message: str, **extra: Any) -> str:
    payload: dict[str, Any] = {"error": message}
    payload.update(extra)
    return ErrorText(json.dumps(payload, ensure_ascii=False))


def error_from(exc: Exception) -> str:
    """The error result for a refusal raised by a tool (a :class:`~hermes.errors.HermesError`); an
    ``extra`` mapping on the exception adds fields beside ``error``."""
    extra = getattr(exc, "extra", None)
    return error_json(str(exc), **(extra if isinstance(extra, dict) else {}))


def is_error_text(text: str) -> bool:
    """Whether a handler's JSON text is an error result: built by :func:`error_json`, or an object whose
    first key is ``error`` (handlers that wrote ``json.dumps({"error": ...})`` themselves)."""
    return isinstance(text, ErrorText) or text.startswith('{"error"')


def to_json_text(value: Any) -> str:
    """Handlers should return JSON strings; anything else is serialised here."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return json.dumps(value, ensure_ascii=False, default=str)


def fit_result(text: str, budget: int, *, tool: str, spill_dir: Path | None = None) -> str:
    """Return ``text`` unchanged when it fits, else a head+tail preview with an explicit marker."""
    if len(text) <= budget:
        return text
    where = ""
    if spill_dir is not None:
        import hashlib

        from hermes.config.atomic import atomic_write

        digest = hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:16]
        path = spill_dir / f"{tool}-{digest}.txt"
        try:
            atomic_write(path, text.encode("utf-8", errors="replace"), mode=0o600)
            where = f"; the full result is saved at {path} (read it in pages with read_file)"
        except (OSError, UnicodeError):
            where = ""
    keep = max(budget - 400, 200)
    head = keep * 3 // 4
    tail = keep - head
    omitted = len(text) - head - tail
    marker = (
        f"\n\n{TRUNCATION_MARKER}: {omitted} of {len(text)} characters omitted from the middle{where}]\n\n"
    )
    return text[:head] + marker + text[-tail:]
