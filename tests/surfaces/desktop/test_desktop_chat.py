"""The desktop app's page in headless Chromium against the app server and the scripted model: streaming,
tool activity, the clarify card (T-CLAR desktop) and the approval card."""

from __future__ import annotations

import json

from .harness import Desktop, desktop

__all__ = ["desktop"]


def test_a_message_streams_into_the_page_piece_by_piece(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    page.evaluate("""() => { window.seen = new Set();
        new MutationObserver(() => {
            const m = document.querySelector('.conversation:not([hidden]) .message[data-role="assistant"]');
            if (m) window.seen.add(m.textContent); }).observe(document.getElementById('transcript'),
            {subtree: true, childList: true, characterData: true}); }""")
    sentence = "the quick brown fox jumps over the lazy dog " * 4
    answer = desktop.say(sentence.strip())
    assert answer == sentence.strip().upper()
    partial = page.evaluate("[...window.seen]")
    assert len(partial) >= 3 and all(answer.startswith(p) for p in partial)  # it grew: several shorter prefixes
    user = page.locator('.conversation:not([hidden]) .message[data-role="user"]').last
    assert user.text_content() == sentence.strip()
    desktop.shot("streamed-answer")


def test_a_tool_call_is_shown_collapsed_with_its_arguments_and_result(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    result = desktop.tool("todo_list", {"todos": [{"id": "1", "content": "paint the hall", "status": "pending"}]})
    assert "error" not in result
    shown = page.locator('.conversation:not([hidden]) [data-tour-item="tool-call"][data-name="todo_list"]').last
    assert shown.get_attribute("data-status") == "done"
    assert not shown.evaluate("d => d.open")  # collapsed until opened
    shown.locator("summary").click()
    assert shown.evaluate("d => d.open")
    assert "paint the hall" in shown.locator('[data-tour-item="tool-args"]').text_content()
    assert "paint the hall" in shown.locator('[data-tour-item="tool-result"]').text_content()
    desktop.shot("tool-call-open")


QUESTIONS = [
    {"question": "Which colour?", "choices": ["red", "blue", "green"]},
    {"question": "Which room?"},
    {"question": "Which extras?", "choices": ["primer", "tape"], "multi_select": True},
    {"question": "Any deadline?"},
]


def _clarify_result(desktop: Desktop) -> dict[str, object]:
    desktop.page.wait_for_function("(hermesApp.state.turns || 0) > window.turnsBefore")
    tool_message = next(m for m in reversed(desktop.model.requests[-1]["messages"]) if m["role"] == "tool")
    result = json.loads(tool_message["content"])
    assert isinstance(result, dict)
    return result


def test_the_clarify_card_collects_edits_and_confirms_all_answers(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    page.evaluate("window.turnsBefore = hermesApp.state.turns || 0")
    page.fill('[data-tour="composer-input"]', "call clarify " + json.dumps({"questions": QUESTIONS}))
    page.press('[data-tour="composer-input"]', "Enter")
    card = page.locator('[data-tour="clarify-card"]').last
    card.wait_for()
    assert card.locator('[data-tour-item="clarify-question"]').count() == 4  # all questions on one card
    confirm = card.locator('[data-tour="clarify-confirm"]')
    assert confirm.is_disabled()  # nothing answered yet
    q = card.locator('[data-tour-item="clarify-question"]')
    q.nth(0).get_by_role("button", name="red").click()
    assert confirm.is_enabled()  # one answer is enough
    q.nth(1).locator('[data-tour-item="clarify-answer"]').fill("the kitchen")
    q.nth(2).get_by_role("button", name="primer").click()
    q.nth(2).get_by_role("button", name="tape").click()
    # answers stay editable until confirmed: change the colour, retype the room, take one extra back
    q.nth(0).get_by_role("button", name="blue").click()
    q.nth(1).locator('[data-tour-item="clarify-answer"]').fill("the hall")
    q.nth(2).get_by_role("button", name="primer").click()
    assert q.nth(0).get_by_role("button", name="blue").get_attribute("aria-pressed") == "true"
    assert q.nth(0).get_by_role("button", name="red").get_attribute("aria-pressed") == "false"
    assert q.nth(3).get_attribute("data-state") == "unanswered"
    desktop.shot("clarify-card-answered")
    confirm.click()
    result = _clarify_result(desktop)
    assert result["outcome"] == "submitted"
    responses = result["responses"]
    assert isinstance(responses, list)
    assert [(r["status"], r["user_response"]) for r in responses] == [
        ("answered", "blue"), ("answered", "the hall"), ("answered", ["tape"]), ("skipped", None)]
    assert card.get_attribute("data-state") == "confirmed"
    assert card.locator('[data-tour="clarify-confirm"]').is_disabled()


def test_skip_on_the_clarify_card_cancels_every_question(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    page.evaluate("window.turnsBefore = hermesApp.state.turns || 0")
    page.fill('[data-tour="composer-input"]', "call clarify " + json.dumps({"questions": QUESTIONS[:2]}))
    page.press('[data-tour="composer-input"]', "Enter")
    card = page.locator('[data-tour="clarify-card"]').last
    card.wait_for()
    card.locator('[data-tour-item="clarify-answer"]').nth(1).fill("typed but not confirmed")
    card.locator('[data-tour="clarify-skip"]').click()
    result = _clarify_result(desktop)
    assert result["outcome"] == "cancelled"
    assert all(r["status"] != "answered" for r in result["responses"])  # type: ignore[union-attr]
    assert card.get_attribute("data-state") == "skipped"


def test_an_approval_card_answers_the_command_approval(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    page.evaluate("window.turnsBefore = hermesApp.state.turns || 0")
    page.fill('[data-tour="composer-input"]', "call terminal " + json.dumps({"command": "rm -rf ./build-output-dir"}))
    page.press('[data-tour="composer-input"]', "Enter")
    card = page.locator('[data-tour="approval-card"]').last
    card.wait_for()
    assert "rm -rf" in card.locator('[data-tour="approval-command"]').text_content()
    desktop.shot("approval-card")
    card.locator('[data-tour="approval-deny"]').click()
    page.wait_for_function("(hermesApp.state.turns || 0) > window.turnsBefore")
    tool_message = next(m for m in reversed(desktop.model.requests[-1]["messages"]) if m["role"] == "tool")
    assert "denied" in tool_message["content"].lower() or "not approved" in tool_message["content"].lower()
    assert card.get_attribute("data-state") == "deny"
