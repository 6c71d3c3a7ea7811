"""A messaging platform in memory: the chat transport the messaging surfaces talk to (cards, text, replies)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class FakeChat:
    """An in-memory chat: what was sent, scripted replies (None = the person stays silent)."""

    replies: list[str | None] = field(default_factory=list)
    #: per card: accepted? (missing entries: accepted)
    cards_ok: list[bool] = field(default_factory=list)
    text_ok: bool = True
    sent: list[tuple[str, Any]] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)

    def send_card(self, question: str, choices: Any, index: int, total: int) -> bool:
        n = sum(1 for kind, _ in self.sent if kind in ("card", "card-rejected"))
        ok = self.cards_ok[n] if n < len(self.cards_ok) else True
        self.sent.append(("card" if ok else "card-rejected", (question, list(choices), index, total)))
        return ok

    def send_text(self, text: str) -> bool:
        self.sent.append(("text" if self.text_ok else "text-rejected", text))
        return self.text_ok

    def next_reply(self, timeout: float) -> str | None:
        self.waits.append(timeout)
        return self.replies.pop(0) if self.replies else None

    def delivered(self) -> list[Any]:
        return [payload for kind, payload in self.sent if kind in ("card", "text")]
