"""The ``clarify`` tool: ask the person up to five questions at once (requirement T-CLAR).

:mod:`.core` holds the engine-independent state every surface drives (:class:`ClarifySession`) and the
request tools send (:class:`ClarifyRequest`); :mod:`.tool` registers the tool. The terminal engine is
:mod:`hermes.surfaces.clarify_cli`, the chat-platform engine :mod:`hermes.surfaces.messaging.clarify`.

The names of :mod:`.core` below are loaded on first access, so that discovery, which imports
:mod:`.tool` at every start-up, does not pay for the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.tools.clarify.core import (
        NO_CHAT_SURFACE,
        NOT_DELIVERED,
        ClarifyRequest,
        ClarifySession,
        Question,
        no_reply_notice,
        request_questions,
        request_timeout,
    )

#: the limits of one call, shared by the schema (:mod:`.tool`) and the engine (:mod:`.core`)
MAX_QUESTIONS = 5
MAX_CHOICES = 8

__all__ = [
    "MAX_CHOICES",
    "MAX_QUESTIONS",
    "NOT_DELIVERED",
    "NO_CHAT_SURFACE",
    "ClarifyRequest",
    "ClarifySession",
    "Question",
    "no_reply_notice",
    "request_questions",
    "request_timeout",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from hermes.tools.clarify import core

        return getattr(core, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
