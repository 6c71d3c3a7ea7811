"""Requests a tool sends to the person through the session's sink (``sink.ask(request)``).

:class:`Request` lives here, in the tools package, so tools can build requests without importing the
agent package; :mod:`hermes.agent.events` re-exports it. ``kind`` says what is asked (``"clarify"``,
``"approval"``, ...) and ``payload`` carries the details as plain JSON-like data, so any surface (a
terminal, a chat platform, the desktop app over JSON-RPC) can render it. A surface with nobody to
answer returns ``None`` from ``ask``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Request:
    """Something only a person can answer (an approval, clarifying questions). Subclassed by tools."""

    kind: str
    payload: dict[str, Any] = field(default_factory=dict)


#: the answers to an approval request; no answer (None) is a denial
APPROVAL_CHOICES = ("once", "session", "always", "deny")


def normalise_answer(answer: Any) -> str | None:
    """An answer from the surface as one of :data:`APPROVAL_CHOICES` (None: nobody answered)."""
    if answer is None:
        return None
    if answer is True:
        return "once"
    if answer is False:
        return "deny"
    if isinstance(answer, dict):
        answer = answer.get("choice", answer.get("answer"))
    text = str(answer).strip().lower()
    aliases = {"yes": "once", "y": "once", "approve": "once", "allow": "once", "no": "deny", "n": "deny"}
    text = aliases.get(text, text)
    return text if text in APPROVAL_CHOICES else "deny"
