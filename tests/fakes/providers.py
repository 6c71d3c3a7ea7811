"""In-process chat providers (hermes.agent.provider.ChatProvider) for agent tests that need no HTTP."""

from __future__ import annotations

import copy
from typing import Any

from hermes.agent.provider import CallOptions, Completion


class Scripted:
    """A ChatProvider that plays back completions and keeps a copy of every request."""

    name = "scripted"
    model = "scripted-model"

    def __init__(self, replies: list[Completion]) -> None:
        self.replies = list(replies)
        self.requests: list[list[dict[str, Any]]] = []

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 options: CallOptions) -> Completion:
        self.requests.append(copy.deepcopy(messages))
        return self.replies.pop(0)
