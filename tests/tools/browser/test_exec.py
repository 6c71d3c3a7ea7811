"""browser_exec: several actions in one call, checked up front, stopped at the first failure or the limit."""

from __future__ import annotations

import pytest

from tools.browser.pages import PageServer
from tools.browser.support import BrowserHarness, call, close, ref_named

pytestmark = pytest.mark.browser


def test_a_form_in_one_call(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    page = call(session, "browser_navigate", url=pages.url("/form"))["snapshot"]
    ran = call(session, "browser_exec", steps=[
        {"action": "type", "ref": ref_named(page, "textbox", "Name"), "text": "Grace"},
        {"action": "click", "ref": ref_named(page, "checkbox", "I agree")},
        {"action": "evaluate", "expression": "document.querySelector('input[name=name]').value"},
        {"action": "click", "ref": ref_named(page, "button", "Send")},
    ])
    assert [s["action"] for s in ran["steps"]] == ["type", "click", "evaluate", "click"]
    assert '"Grace"' in ran["steps"][2]["result"]
    assert ran["steps"][3]["changed"]["title"] == "Thanks" and "stopped" not in ran
    assert ran["page"]["title"] == "Thanks" and "Thank you" in ran["page"]["snapshot"]
    close(session)


def test_a_bad_step_is_named_before_anything_runs(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    before = len(pages.hits)
    bad = call(session, "browser_exec", steps=[{"action": "navigate", "url": pages.url("/form")},
                                                {"action": "scroll", "direction": "down", "amount": -3}])
    assert bad["error"].startswith("step 2 (scroll): 'amount' must be at least 1")
    assert "must be one of" in call(session, "browser_exec", steps=[{"action": "fly"}])["error"]
    assert pages.hits[before:] == []  # step 1 never ran
    close(session)


def test_the_first_failure_stops_the_script(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    ran = call(session, "browser_exec", steps=[{"action": "navigate", "url": pages.url("/form")},
                                                {"action": "click", "ref": "@e9999"},
                                                {"action": "navigate", "url": pages.url("/images")}])
    assert len(ran["steps"]) == 2 and ran["steps"][1]["error"].startswith("unknown ref @e9999")
    assert ran["stopped"] == "step 2 failed; the steps after it did not run"
    assert ran["page"]["title"] == "Form"
    close(session)


def test_the_time_limit_holds(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    ran = call(session, "browser_exec", timeout=1, snapshot=False,
               steps=[{"action": "wait", "ms": 100}, {"action": "wait", "ms": 5000}, {"action": "back"}])
    assert ran["stopped"].startswith("the time limit (1 s) ran out after 1 of 3 steps")
    assert "page" not in ran
    close(session)
