"""The ``clarify`` tool: ask the person up to five questions at once (SPEC T-CLAR).

:mod:`.core` holds the engine-independent state every surface drives (:class:`ClarifySession`) and the
request tools send (:class:`ClarifyRequest`); :mod:`.tool` registers the tool. The terminal engine is
:mod:`hermes.surfaces.clarify_cli`, the chat-platform engine :mod:`hermes.surfaces.messaging.clarify`.
"""

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

__all__ = [
    "NOT_DELIVERED",
    "NO_CHAT_SURFACE",
    "ClarifyRequest",
    "ClarifySession",
    "Question",
    "no_reply_notice",
    "request_questions",
    "request_timeout",
]
