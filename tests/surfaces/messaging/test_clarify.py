"""requirement T-CLAR, messaging: the surface-independent engine against a fake chat surface."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from fakes.chat import FakeChat
from hermes.surfaces.messaging.clarify import (
    ChatTransport,
    ReplyQueue,
    format_plain,
    run_messaging_clarify,
)
from hermes.tools.clarify.core import NOT_DELIVERED, request_questions, request_timeout
from hermes.tools.registry import registry
from hermes.tools.requests import Request
from hermes.tools.toolsets import Surface

QUESTIONS: list[dict[str, Any]] = [
    {"question": "Which database?", "choices": ["PostgreSQL", "SQLite"]},
    {"question": "Project name?"},
    {"question": "Features?", "choices": ["auth", "billing", "search"], "multi_select": True},
]


def statuses(result: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(r["status"], r["user_response"]) for r in result["responses"]]


def test_fake_chat_is_a_transport() -> None:
    chat: ChatTransport = FakeChat()
    assert chat.next_reply(1) is None


def test_one_card_per_question_in_order() -> None:
    chat = FakeChat(replies=["2", "hermes", "1, search"])
    out = run_messaging_clarify(QUESTIONS, chat, 300)
    assert out["outcome"] == "submitted" and "notice" not in out
    assert statuses(out) == [("answered", "SQLite"), ("answered", "hermes"), ("answered", ["auth", "search"])]
    assert chat.delivered() == [("Which database?", ["PostgreSQL", "SQLite"], 0, 3), ("Project name?", [], 1, 3),
                                ("Features?", ["auth", "billing", "search"], 2, 3)]
    assert chat.waits == [300, 300, 300]  # the wait is per question


def test_replies_match_numbers_text_or_own_words() -> None:
    out = run_messaging_clarify(QUESTIONS, FakeChat(replies=["postgresql", "7", "Billing, wiki"]), 60)
    assert statuses(out) == [("answered", "PostgreSQL"), ("answered", "7"), ("answered", ["billing", "wiki"])]
    out = run_messaging_clarify(QUESTIONS[:1], FakeChat(replies=["MariaDB please"]), 60)
    assert statuses(out) == [("answered", "MariaDB please")]


def test_skip_skips_one_question() -> None:
    out = run_messaging_clarify(QUESTIONS, FakeChat(replies=["skip", " SKIP ", "3"]), 60)
    assert out["outcome"] == "submitted"
    assert statuses(out) == [("skipped", None), ("skipped", None), ("answered", ["search"])]


def test_when_replies_stop_the_rest_is_not_sent() -> None:
    chat = FakeChat(replies=["1", None, "never read"])
    out = run_messaging_clarify(QUESTIONS, chat, 300)
    assert out["outcome"] == "timed_out"
    assert out["notice"] == "[user did not respond within 5m]"
    assert statuses(out) == [("answered", "PostgreSQL"), ("unanswered", None), ("unanswered", None)]
    assert [q[0] for q in chat.delivered()] == ["Which database?", "Project name?"]  # question 3 never sent


def test_timeout_notice_minutes() -> None:
    out = run_messaging_clarify(QUESTIONS[:1], FakeChat(), 3600)
    assert out["notice"] == "[user did not respond within 60m]"
    assert statuses(out) == [("unanswered", None)]


def test_rejected_card_is_retried_as_numbered_plain_text() -> None:
    chat = FakeChat(replies=["2", "x", "skip"], cards_ok=[False, True, False])
    out = run_messaging_clarify(QUESTIONS, chat, 60)
    assert out["outcome"] == "submitted" and "notice" not in out
    assert statuses(out) == [("answered", "SQLite"), ("answered", "x"), ("skipped", None)]
    kinds = [kind for kind, _ in chat.sent]
    assert kinds == ["card-rejected", "text", "card", "card-rejected", "text"]
    plain = chat.sent[1][1]
    assert plain.splitlines()[:3] == ["❓ (1/3) Which database?", "1. PostgreSQL", "2. SQLite"]
    assert "skip" in plain


def test_both_failing_is_undelivered_never_no_reply() -> None:
    chat = FakeChat(replies=["1", "unused"], cards_ok=[True, False], text_ok=False)
    out = run_messaging_clarify(QUESTIONS, chat, 60)
    assert out["outcome"] == "undelivered"
    assert out["notice"] == NOT_DELIVERED == "[clarify prompt could not be delivered]"
    assert "did not respond" not in json.dumps(out)
    assert statuses(out) == [("answered", "PostgreSQL"), ("unanswered", None), ("unanswered", None)]
    assert len(chat.waits) == 1  # nobody waited for a reply to a question that never arrived
    assert [kind for kind, _ in chat.sent] == ["card", "card-rejected", "text-rejected"]


def test_transport_exceptions_count_as_rejections() -> None:
    class Flaky(FakeChat):
        def send_card(self, question: str, choices: Any, index: int, total: int) -> bool:
            raise TimeoutError("platform API timed out")

    out = run_messaging_clarify(QUESTIONS[:1], Flaky(replies=["1"]), 60)
    assert statuses(out) == [("answered", "PostgreSQL")]

    class Dead(Flaky):
        def send_text(self, text: str) -> bool:
            raise ConnectionError("gone")

    assert run_messaging_clarify(QUESTIONS[:1], Dead(), 60)["outcome"] == "undelivered"


def test_format_plain_open_question() -> None:
    assert format_plain("Name?", [], 0, 1) == "❓ Name?\nReply with your answer — or `skip`."


# -- ReplyQueue: real waiting, real threads ----------------------------------------------------------
class QueueChat(ReplyQueue):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def send_card(self, question: str, choices: Any, index: int, total: int) -> bool:
        self.sent.append(question)
        return True

    def send_text(self, text: str) -> bool:
        return True


def test_reply_queue_times_out_for_real() -> None:
    chat = QueueChat()
    started = time.monotonic()
    out = run_messaging_clarify(QUESTIONS, chat, 0.1)
    assert time.monotonic() - started < 2
    assert out["outcome"] == "timed_out" and chat.sent == ["Which database?"]


def test_reply_queue_with_replies_from_another_thread() -> None:
    chat = QueueChat()

    def person() -> None:
        for reply in ("1", "me", "2"):
            deadline = time.monotonic() + 5
            while len(chat.sent) < ("1", "me", "2").index(reply) + 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            chat.put(reply)

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    out = run_messaging_clarify(QUESTIONS, chat, 5)
    thread.join(timeout=5)
    assert statuses(out) == [("answered", "PostgreSQL"), ("answered", "me"), ("answered", ["billing"])]


def test_cancelled_chat() -> None:
    chat = QueueChat()
    chat.put("1")
    chat.cancel()
    out = run_messaging_clarify(QUESTIONS, chat, 5)
    assert out["outcome"] == "cancelled" and statuses(out) == [("skipped", None)] * 3


# -- plugged into the tool through a messaging session's sink ------------------------------------------
@dataclass
class MessagingSession:
    chat: FakeChat
    surface: Surface = Surface.MESSAGING
    state: dict[str, Any] = field(default_factory=dict)
    settings: Any = None
    task_id: str = "chat-1"

    @property
    def sink(self) -> Any:
        chat = self.chat

        class Sink:
            def emit(self, event: Any) -> None:
                return None

            def ask(self, request: Request) -> Any:
                assert request.kind == "clarify"
                return run_messaging_clarify(request_questions(request), chat, request_timeout(request))

        return Sink()


@pytest.mark.parametrize(("chat", "outcome", "notice"), [
    (FakeChat(replies=["1", "x", "skip"]), "submitted", None),
    (FakeChat(replies=["1"]), "timed_out", "[user did not respond within 5m]"),
    (FakeChat(cards_ok=[False], text_ok=False), "undelivered", "[clarify prompt could not be delivered]"),
])
def test_through_the_tool(chat: FakeChat, outcome: str, notice: str | None) -> None:
    import hermes.tools.clarify.tool  # noqa: F401  (registers the tool)

    out = json.loads(registry.dispatch("clarify", {"questions": QUESTIONS}, session=MessagingSession(chat)))
    assert out["outcome"] == outcome
    assert out.get("notice") == notice
