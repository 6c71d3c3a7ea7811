"""``clarify`` — ask the person one to five questions in one go and get every answer back (requirement T-CLAR).

The handler sends a :class:`~hermes.tools.clarify.core.ClarifyRequest` through the session's sink and
turns whatever the surface answers into the result ``{"responses": [...], "outcome": ...}``. Where
nobody can answer — no session (``dispatch`` called directly), a surface without a person (one-shot,
cron, kanban) or a sink that answers ``None`` — the outcome is ``undelivered`` with the notice
``[clarify prompt could not be delivered: no chat surface]`` and every question ``unanswered``. How
long the surface waits is ``clarify.timeout_seconds`` (default 300), passed in the request.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolArgumentError
from hermes.tools.clarify import MAX_CHOICES, MAX_QUESTIONS
from hermes.tools.context import SessionView, session_of
from hermes.tools.registry import registry

if TYPE_CHECKING:  # the engine is imported on the first call, not when discovery imports this module
    from hermes.tools.clarify.core import ClarifySession, Question

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 300.0
TIMEOUT_KEY = "clarify.timeout_seconds"

CLARIFY_SCHEMA: dict[str, Any] = {
    "name": "clarify",
    "description": (
        "Ask the user clarifying questions when you cannot proceed well without their input. Bundle "
        "everything you need to know into one call: 1-5 independent questions, each optionally with "
        "choices (the user may still answer in their own words) and multi_select for several picks. "
        "Returns {responses, outcome}: per question its status (answered | skipped | unanswered) and "
        "user_response (null unless answered; a list for multi_select). outcome is submitted, "
        "cancelled (the user declined — do not ask again), timed_out (answers given so far are kept) or "
        "undelivered (nobody could be asked — decide yourself and say what you assumed)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "description": "The questions, asked together; answers come back in the same order.",
                "minItems": 1,
                "maxItems": MAX_QUESTIONS,
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string", "minLength": 1, "description": "The question text"},
                        "choices": {
                            "type": "array",
                            "maxItems": MAX_CHOICES,
                            "items": {"type": "string"},
                            "description": "Suggested answers (optional; omit for an open question)",
                        },
                        "multi_select": {
                            "type": "boolean",
                            "default": False,
                            "description": "Allow picking several choices (default false)",
                        },
                    },
                    "required": ["question"],
                },
            },
        },
        "required": ["questions"],
    },
}


def parse_tool_questions(args: Mapping[str, Any]) -> list[Question]:
    """The validated questions of a call; errors name the offending field."""
    from hermes.tools.clarify.core import Question

    raw = args.get("questions")
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_QUESTIONS:
        raise ToolArgumentError(f"'questions' must be an array of 1 to {MAX_QUESTIONS} question objects")
    questions = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ToolArgumentError(f"'questions[{i}]' must be object")
        question = Question.from_payload(item)
        if not question.text:
            raise ToolArgumentError(f"'questions[{i}].question' must not be blank")
        questions.append(question)
    return questions


def timeout_of(session: SessionView | None) -> float:
    """``clarify.timeout_seconds`` from the session's settings; the default when unset or invalid."""
    settings = session.settings if session is not None else None
    if settings is None:
        return DEFAULT_TIMEOUT
    value = settings.get(TIMEOUT_KEY, None)
    if value is None:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(value, bool) or not math.isfinite(seconds) or seconds <= 0:
        logger.warning("%s must be a positive number of seconds, got %r; using %s", TIMEOUT_KEY, value,
                       DEFAULT_TIMEOUT)
        return DEFAULT_TIMEOUT
    return seconds


def _has_person(session: SessionView) -> bool:
    from hermes.tools.toolsets import Surface

    try:
        return Surface(session.surface).has_person
    except ValueError:
        return False


def _from_reply(questions: list[Question], reply: Any) -> ClarifySession:
    from hermes.tools.clarify.core import NOT_DELIVERED, ClarifySession

    if isinstance(reply, ClarifySession):
        reply = reply.result()
    if isinstance(reply, Mapping):
        return ClarifySession.from_result(questions, reply)
    logger.warning("clarify: the surface answered with %s, not a result", type(reply).__name__)
    state = ClarifySession(questions)
    state.undeliverable(NOT_DELIVERED)
    return state


def clarify(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """The tool handler (see the module docstring)."""
    from hermes.tools.clarify.core import NO_CHAT_SURFACE, NOT_DELIVERED, ClarifyRequest, ClarifySession

    questions = parse_tool_questions(args)
    session = session_of(kw)
    state = ClarifySession(questions)
    if session is None or not _has_person(session):
        state.undeliverable(NO_CHAT_SURFACE)
        return state.result()
    request = ClarifyRequest.build(questions, timeout_of(session))
    try:
        reply = session.sink.ask(request)
    except Exception as exc:  # a broken surface must not look like a silent user
        logger.warning("clarify: asking the person failed: %s: %s", type(exc).__name__, exc, exc_info=True)
        state.undeliverable(NOT_DELIVERED)
        return state.result()
    if reply is None:
        state.undeliverable(NO_CHAT_SURFACE)
        return state.result()
    return _from_reply(questions, reply).result()


registry.register(
    name="clarify",
    toolset="clarify",
    schema=CLARIFY_SCHEMA,
    handler=clarify,
    interactive=True,
)
