"""The messaging engine of ``clarify``: one question at a time in a chat (requirement T-CLAR, messaging).

Platform adapters implement :class:`ChatTransport` — send a question card, send plain text, hand over
the next reply — and call :func:`run_messaging_clarify` with the questions of a clarify request::

    from hermes.tools.clarify.core import request_questions, request_timeout

    result = run_messaging_clarify(request_questions(req), transport, request_timeout(req))

What happens, question by question, in order:

1. the question goes out as a card (:meth:`ChatTransport.send_card`, e.g. buttons); when the platform
   rejects the card, it is sent again as a numbered plain-text message (:func:`format_plain`); only if
   that fails too does the engine stop with ``outcome: "undelivered"`` and the notice
   ``[clarify prompt could not be delivered]`` — an undelivered question is never reported as no reply;
2. the engine waits up to ``timeout`` seconds for a reply: ``skip`` (or an empty reply) skips the
   question; a number or a choice's text picks that choice; anything else is the person's own answer
   (multi-select: comma-separated picks);
3. when no reply comes, the remaining questions are not sent: the confirmed answers are kept, the rest
   are ``unanswered``, ``outcome: "timed_out"`` with the notice ``[user did not respond within Nm]``.

The wait is per question: each reply gives the person ``timeout`` seconds for the next one. A
transport whose chat cancels pending prompts (``/new``, an interrupt, shutdown) raises
:class:`ClarifyCancelled` from :meth:`ChatTransport.next_reply`; the outcome is then ``cancelled``.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from hermes.tools.clarify.core import (
    NOT_DELIVERED,
    SKIP_WORDS,
    ClarifySession,
    Question,
    no_reply_notice,
)

logger = logging.getLogger(__name__)


class ClarifyCancelled(Exception):
    """Raised by :meth:`ChatTransport.next_reply` when the chat cancelled the pending questions."""


class ChatTransport(Protocol):
    """What the engine needs from a chat platform adapter."""

    def send_card(self, question: str, choices: Sequence[str], index: int, total: int) -> bool:
        """Show question ``index`` (0-based) of ``total`` as the platform's card; False when rejected."""
        ...

    def send_text(self, text: str) -> bool:
        """Send a plain-text message; False when it could not be delivered."""
        ...

    def next_reply(self, timeout: float) -> str | None:
        """The person's next reply, or None when none came within ``timeout`` seconds."""
        ...


class ReplyQueue:
    """A ready-made :meth:`ChatTransport.next_reply`: the adapter ``put``s incoming replies, thread-safely."""

    def __init__(self) -> None:
        self.replies: queue.Queue[str | None] = queue.Queue()

    def put(self, text: str) -> None:
        self.replies.put(text)

    def cancel(self) -> None:
        """Cancel the question being waited for (``/new``, an interrupt, shutdown)."""
        self.replies.put(None)

    def next_reply(self, timeout: float) -> str | None:
        try:
            reply = self.replies.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None
        if reply is None:
            raise ClarifyCancelled("the chat cancelled the pending questions")
        return reply


def format_plain(question: str, choices: Sequence[str], index: int, total: int) -> str:
    """The numbered plain-text version of a question card."""
    head = f"❓ ({index + 1}/{total}) {question}" if total > 1 else f"❓ {question}"
    lines = [head, *(f"{n}. {choice}" for n, choice in enumerate(choices, 1))]
    if choices:
        lines.append("Reply with the number, the option text, or your own answer — or `skip`.")
    else:
        lines.append("Reply with your answer — or `skip`.")
    return "\n".join(lines)


def _deliver(transport: ChatTransport, q: Question, index: int, total: int) -> bool:
    """Send the card; on rejection retry once as plain text. True when one of them got through."""
    try:
        if transport.send_card(q.text, q.choices, index, total):
            return True
    except Exception as exc:
        logger.warning("clarify card rejected: %s: %s", type(exc).__name__, exc)
    try:
        return bool(transport.send_text(format_plain(q.text, q.choices, index, total)))
    except Exception as exc:
        logger.warning("clarify plain-text retry failed: %s: %s", type(exc).__name__, exc)
        return False


def _questions(raw: Sequence[Question | Mapping[str, Any]]) -> list[Question]:
    return [q if isinstance(q, Question) else Question.from_payload(q) for q in raw]


def run_messaging_clarify(
    questions: Sequence[Question | Mapping[str, Any]], transport: ChatTransport, timeout: float
) -> dict[str, Any]:
    """Ask the questions one by one over ``transport``; returns the clarify result dict."""
    state = ClarifySession(_questions(questions))
    total = len(state.questions)
    for i, q in enumerate(state.questions):
        state.current = i
        if not _deliver(transport, q, i, total):
            state.undeliverable(NOT_DELIVERED)
            break
        try:
            reply = transport.next_reply(timeout)
        except ClarifyCancelled:
            state.cancel()
            break
        if reply is None:
            state.time_out(no_reply_notice(timeout))
            break
        if reply.strip().casefold() in SKIP_WORDS:
            state.skip(i)
            continue
        value = q.interpret(reply)
        if value is None:
            state.skip(i)
        else:
            state.answer(i, value)
    if not state.done:  # every question answered or skipped (answer/skip already submitted)
        state.submit()
    return state.result()
