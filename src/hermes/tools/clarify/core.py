"""The engine-independent core of ``clarify``: questions, answers and the result every surface returns.

A :class:`ClarifySession` holds the questions of one ``clarify`` call and, for each, a status
(``answered`` / ``skipped`` / ``unanswered``) and the answer. The terminal, messaging and (later)
desktop engines only render questions and feed the person's actions into it; the session decides what
the result means, so every surface reports the same ``{responses, outcome}`` shape (requirement T-CLAR):

* :meth:`ClarifySession.answer` / :meth:`ClarifySession.skip` confirm one question; once every question
  is answered or skipped the outcome is ``submitted``;
* :meth:`ClarifySession.submit` sends what is there, blank questions counting as skipped (the desktop
  card's "Confirm and continue");
* :meth:`ClarifySession.cancel` cancels everything: no answer is kept, every question is ``skipped``
  (the person declined on purpose), outcome ``cancelled``;
* :meth:`ClarifySession.time_out` keeps the confirmed answers and skips; questions still open stay
  ``unanswered``, outcome ``timed_out``;
* :meth:`ClarifySession.undeliverable` — nobody could be asked: every question ``unanswered``, outcome
  ``undelivered``, with a notice saying why.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from hermes.tools.clarify import MAX_CHOICES
from hermes.tools.requests import Request

Status = Literal["answered", "skipped", "unanswered"]
Outcome = Literal["submitted", "cancelled", "timed_out", "undelivered"]
Answer = str | list[str]

STATUSES: tuple[Status, ...] = ("answered", "skipped", "unanswered")
OUTCOMES: tuple[Outcome, ...] = ("submitted", "cancelled", "timed_out", "undelivered")


NO_CHAT_SURFACE = "[clarify prompt could not be delivered: no chat surface]"
NOT_DELIVERED = "[clarify prompt could not be delivered]"
SKIP_WORDS = frozenset({"skip"})


def no_reply_notice(timeout_seconds: float) -> str:
    """``[user did not respond within Nm]`` for a wait of ``timeout_seconds`` (N at least 1)."""
    minutes = max(1, round(timeout_seconds / 60))
    return f"[user did not respond within {minutes}m]"


@dataclass(frozen=True)
class Question:
    """One question as the model asked it (already cleaned: stripped, choices de-duplicated)."""

    text: str
    choices: tuple[str, ...] = ()
    multi_select: bool = False

    @classmethod
    def from_payload(cls, raw: Mapping[str, Any]) -> Question:
        """Build from ``{question, choices?, multi_select?}``; blank and repeated choices are dropped.

        ``multi_select`` only means something with choices; an open question takes one free answer.
        """
        text = str(raw.get("question") or "").strip()
        choices: list[str] = []
        for choice in raw.get("choices") or ():
            label = str(choice).strip()
            if label and label not in choices:
                choices.append(label)
        return cls(text, tuple(choices[:MAX_CHOICES]), bool(raw.get("multi_select")) and bool(choices))

    def as_payload(self) -> dict[str, Any]:
        return {"question": self.text, "choices": list(self.choices), "multi_select": self.multi_select}

    def choice_for(self, token: str) -> str | None:
        """The choice a reply token names: its number (1-based) or its text, case-insensitively."""
        token = token.strip()
        if token.isdigit():
            n = int(token)
            return self.choices[n - 1] if 1 <= n <= len(self.choices) else None
        folded = token.casefold()
        return next((c for c in self.choices if c.casefold() == folded), None)

    def interpret(self, text: str) -> Answer | None:
        """Turn typed text into an answer; ``None`` for blank text (which means "skip").

        A number or a choice's text picks that choice; anything else is the person's own answer. For
        multi-select questions the text is split on commas and each part read that way.
        """
        text = text.strip()
        if not text:
            return None
        if not self.multi_select:
            return self.choice_for(text) or text
        picked: list[str] = []
        for part in re.split(r"\s*,\s*", text):
            if part:
                value = self.choice_for(part) or part
                if value not in picked:
                    picked.append(value)
        return picked or None


def parse_questions(raw: Iterable[Mapping[str, Any]]) -> list[Question]:
    """Questions from request payload dicts (engines receive them this way)."""
    return [Question.from_payload(q) for q in raw]


class ClarifySession:
    """The state of one ``clarify`` call; not thread-safe (one engine drives it)."""

    def __init__(self, questions: Sequence[Question]) -> None:
        if not questions:
            raise ValueError("a clarify session needs at least one question")
        self.questions = list(questions)
        self.statuses: list[Status] = ["unanswered"] * len(self.questions)
        self.answers: list[Answer | None] = [None] * len(self.questions)
        #: the question being answered (engines that show one at a time)
        self.current = 0
        self.outcome: Outcome | None = None
        self.notice: str | None = None

    # -- state ------------------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.outcome is not None

    def pending(self) -> list[int]:
        """Indexes of questions neither answered nor skipped."""
        return [i for i, s in enumerate(self.statuses) if s == "unanswered"]

    def next_pending(self, after: int | None = None) -> int | None:
        """The first unanswered question after ``after`` (wrapping around), else None."""
        start = self.current if after is None else after
        n = len(self.questions)
        for step in range(1, n + 1):
            i = (start + step) % n
            if self.statuses[i] == "unanswered":
                return i
        return None

    def move(self, step: int) -> int:
        """Make the question ``step`` places away current (any status; wraps around)."""
        self.current = (self.current + step) % len(self.questions)
        return self.current

    # -- actions ----------------------------------------------------------------------------------
    def answer(self, index: int, value: Answer) -> None:
        """Confirm an answer (a blank one counts as a skip); then go on to the next open question."""
        self._check_open(index)
        if isinstance(value, list):
            cleaned: Answer | None = [str(v) for v in value if str(v).strip()] or None
            if cleaned is not None and not self.questions[index].multi_select:
                cleaned = ", ".join(cleaned)
        else:
            cleaned = str(value).strip() or None
            if cleaned is not None and self.questions[index].multi_select:
                cleaned = [cleaned]
        if cleaned is None:
            self.skip(index)
            return
        self.statuses[index] = "answered"
        self.answers[index] = cleaned
        self._advance(index)

    def skip(self, index: int) -> None:
        """Skip one question on purpose (an empty submit, or ``skip`` on messaging)."""
        self._check_open(index)
        self.statuses[index] = "skipped"
        self.answers[index] = None
        self._advance(index)

    def submit(self) -> None:
        """Send what is there; questions left blank are skipped."""
        if self.done:
            return
        for i in self.pending():
            self.statuses[i] = "skipped"
        self.outcome = "submitted"

    def cancel(self) -> None:
        """The person cancelled the whole set: nothing is kept."""
        if self.done:
            return
        self.statuses = ["skipped"] * len(self.questions)
        self.answers = [None] * len(self.questions)
        self.outcome = "cancelled"

    def time_out(self, notice: str | None = None) -> None:
        """Nobody answered in time: confirmed answers stay, open questions are ``unanswered``."""
        if self.done:
            return
        self.outcome = "timed_out"
        self.notice = notice

    def undeliverable(self, notice: str) -> None:
        """The questions could not be put to anyone; answers confirmed before that are kept."""
        if self.done:
            return
        self.outcome = "undelivered"
        self.notice = notice

    def _check_open(self, index: int) -> None:
        if self.done:
            raise RuntimeError(f"the clarify session is already {self.outcome}")
        if not 0 <= index < len(self.questions):
            raise IndexError(f"no question {index}")

    def _advance(self, index: int) -> None:
        nxt = self.next_pending(index)
        if nxt is None:
            self.outcome = "submitted"
        else:
            self.current = nxt

    # -- result -----------------------------------------------------------------------------------
    def result(self) -> dict[str, Any]:
        """The tool result: ``{"responses": [...], "outcome": ..., "notice"?: ...}`` in question order."""
        responses = []
        for q, status, ans in zip(self.questions, self.statuses, self.answers, strict=True):
            responses.append({
                "question": q.text,
                "choices_offered": list(q.choices),
                "status": status,
                "user_response": (list(ans) if isinstance(ans, list) else ans) if status == "answered" else None,
            })
        out: dict[str, Any] = {"responses": responses, "outcome": self.outcome or "timed_out"}
        if self.notice:
            out["notice"] = self.notice
        return out

    @classmethod
    def from_result(cls, questions: Sequence[Question], reply: Mapping[str, Any]) -> ClarifySession:
        """Rebuild a session from a result dict a surface returned, trusting only well-formed parts.

        Each response is matched to its question by position; a malformed or missing one counts as
        ``unanswered``. An unknown outcome becomes ``timed_out`` (nobody gave a usable answer).
        """
        session = cls(questions)
        raw = reply.get("responses")
        items: list[Any] = list(raw) if isinstance(raw, list | tuple) else []
        for i, q in enumerate(session.questions):
            item = items[i] if i < len(items) and isinstance(items[i], Mapping) else {}
            status = item.get("status")
            value = item.get("user_response")
            if status == "answered" and isinstance(value, str) and value.strip():
                session.statuses[i] = "answered"
                session.answers[i] = [value.strip()] if q.multi_select else value.strip()
            elif status == "answered" and isinstance(value, list) and value:
                picked = [str(v) for v in value if isinstance(v, str | int | float) and str(v).strip()]
                if picked:
                    session.statuses[i] = "answered"
                    session.answers[i] = picked if q.multi_select else ", ".join(picked)
            elif status == "skipped":
                session.statuses[i] = "skipped"
        outcome = reply.get("outcome")
        session.outcome = cast(Outcome, outcome) if outcome in OUTCOMES else "timed_out"
        if session.outcome == "submitted":
            for i in session.pending():
                session.statuses[i] = "skipped"
        elif session.outcome == "cancelled":
            session.statuses = ["skipped"] * len(questions)
            session.answers = [None] * len(questions)
        notice = reply.get("notice")
        session.notice = notice if isinstance(notice, str) and notice else None
        return session


@dataclass(frozen=True)
class ClarifyRequest(Request):
    """What the ``clarify`` tool sends through ``sink.ask``: ``kind="clarify"``.

    ``payload`` is plain data — ``{"questions": [{question, choices, multi_select}, ...],
    "timeout_seconds": N}`` — so any surface can render it. The surface answers with a result dict
    (see :meth:`ClarifySession.result`) or the :class:`ClarifySession` it drove, or ``None`` when
    nobody can be asked.
    """

    kind: str = "clarify"

    @classmethod
    def build(cls, questions: Sequence[Question], timeout_seconds: float) -> ClarifyRequest:
        return cls(payload={"questions": [q.as_payload() for q in questions], "timeout_seconds": timeout_seconds})


def request_questions(request: Request) -> list[Question]:
    """The questions of a clarify request (robust to a hand-built payload)."""
    raw = request.payload.get("questions")
    items = [q for q in raw if isinstance(q, Mapping)] if isinstance(raw, list | tuple) else []
    return [q for q in parse_questions(items) if q.text]


def request_timeout(request: Request, default: float = 300.0) -> float:
    """The request's ``timeout_seconds`` when it is a positive number, else ``default``."""
    value = request.payload.get("timeout_seconds")
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return default
