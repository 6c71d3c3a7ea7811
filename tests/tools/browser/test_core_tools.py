"""The ten core browser tools in a real headless Chromium against pages served on 127.0.0.1."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tools.browser.pages import PageServer
from tools.browser.support import BrowserHarness, call, close, ref_named, refs_of

pytestmark = pytest.mark.browser


def test_a_form_is_filled_and_sent(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    opened = call(session, "browser_navigate", url=pages.url("/form"))
    assert opened["title"] == "Form" and opened["url"] == pages.url("/form")
    page = opened["snapshot"]
    name = ref_named(page, "textbox", "Name")
    typed = call(session, "browser_type", ref=name, text="Ada Lovelace")
    assert "typed 12 characters" in typed["result"] and "Ada Lovelace" not in json.dumps(typed)
    call(session, "browser_click", ref=ref_named(page, "checkbox", "I agree"))
    sent = call(session, "browser_click", ref=ref_named(page, "button", "Send"))
    assert sent["changed"]["title"] == "Thanks"
    assert "name=Ada+Lovelace" in sent["changed"]["url"] and "agree=on" in sent["changed"]["url"]
    back = call(session, "browser_back")
    assert back["url"] == pages.url("/form") and back["changed"]["added"] >= 4
    close(session)


@pytest.mark.parametrize("secret", ["hunter2-secret", 'with: "quotes" and: colons'])
def test_a_typed_password_never_appears_in_results(browser: BrowserHarness, pages: PageServer, secret: str) -> None:
    session = browser.session()
    page = call(session, "browser_navigate", url=pages.url("/login"))["snapshot"]
    typed = call(session, "browser_type", ref=ref_named(page, "textbox", "Password"), text=secret)
    call(session, "browser_type", ref=ref_named(page, "textbox", "User"), text="ada")
    snapshot = call(session, "browser_snapshot")["snapshot"]
    assert secret not in json.dumps(typed) and secret not in snapshot and json.dumps(secret) not in snapshot
    assert "••••••" in snapshot and "ada" in snapshot  # other fields keep their text
    close(session)


def test_refs_that_never_existed_or_went_stale_are_refused(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    page = call(session, "browser_navigate", url=pages.url("/changing"))["snapshot"]
    vanish, replace = ref_named(page, "button", "Vanish"), ref_named(page, "button", "Replace")
    assert call(session, "browser_click", ref="@e999")["error"].startswith("unknown ref @e999")
    assert "is not an element ref" in call(session, "browser_click", ref="button")["error"]
    gone = call(session, "browser_click", ref=vanish)
    assert gone["changed"] == {"added": 0, "removed": 1}
    assert call(session, "browser_click", ref=vanish)["error"] == \
        f"stale ref {vanish}: the page changed; take a new snapshot"
    swapped = call(session, "browser_click", ref=replace)
    assert 'button "Fresh"' in swapped["changed"]["new_elements"]
    # a ref of a page left behind is stale on the next page, never another element of it
    call(session, "browser_navigate", url=pages.url("/form"))
    assert call(session, "browser_click", ref=replace)["error"].startswith(f"stale ref {replace}")
    close(session)


def test_a_page_that_changes_under_the_model(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    page = call(session, "browser_navigate", url=pages.url("/changing"))["snapshot"]
    vanish = ref_named(page, "button", "Vanish")
    # the page removes the button by itself (no action of ours): the ref is refused, not clicked blindly
    call(session, "browser_console", expression="document.getElementById('old').remove()")
    assert call(session, "browser_click", ref=vanish)["error"].startswith(f"stale ref {vanish}")
    close(session)


def test_an_element_inside_an_iframe_is_clicked(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    page = call(session, "browser_navigate", url=pages.url("/frames"))["snapshot"]
    assert "- iframe" in page
    clicked = call(session, "browser_click", ref=ref_named(page, "button", "Inner button"))
    assert 'button "Pressed inside"' in clicked["changed"]["new_elements"]
    close(session)


def test_dialogs_are_closed_by_the_policy_and_reported(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    page = call(session, "browser_navigate", url=pages.url("/dialogs"))["snapshot"]
    asked = call(session, "browser_click", ref=ref_named(page, "button", "Ask"))
    assert asked["dialogs"] == [{"type": "confirm", "message": "Sure?", "closed": "dismissed"}]
    after = call(session, "browser_snapshot")["snapshot"]
    assert "paragraph: \"no\"" in after or "paragraph: no" in after
    close(session)


def test_images_are_listed_without_data_urls(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    call(session, "browser_navigate", url=pages.url("/images"))
    images = call(session, "browser_get_images")
    assert images["count"] == 2
    assert [i["alt"] for i in images["images"]] == ["a pixel", "another pixel"]
    assert all(i["width"] == 1 and i["height"] == 1 for i in images["images"])
    close(session)


def test_console_messages_errors_and_expressions(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    call(session, "browser_navigate", url=pages.url("/console"))
    log = call(session, "browser_console", clear=True)
    assert log["total_messages"] == 2 and log["total_errors"] == 1
    assert "[log] hello from the page" in log["console"] and "[error] boom in a timer" in log["console"]
    assert log["console"].startswith("Untrusted content from")
    assert call(session, "browser_console")["total_messages"] == 0
    value = call(session, "browser_console", expression="document.title + ' ' + (6 * 7)")
    assert '"Console 42"' in value["result"]
    assert "the expression failed" in call(session, "browser_console", expression="nosuchname.x")["error"]
    close(session)


def test_scroll_press_and_malformed_arguments(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    page = call(session, "browser_navigate", url=pages.url("/big"))["snapshot"]
    down = call(session, "browser_scroll", direction="down", amount=1500)
    assert down["scroll_y"] >= 1000
    assert call(session, "browser_scroll", direction="up")["scroll_y"] < down["scroll_y"]
    assert "'amount' must be at least 1" in call(session, "browser_scroll", direction="down", amount=-5)["error"]
    assert "'direction' must be one of" in call(session, "browser_scroll", direction="sideways")["error"]
    big = call(session, "browser_type", ref=refs_of(page)[0], text="x" * (10 * 2**20))
    assert "'text' must have at most 100000 characters" in big["error"]
    assert "Unknown key" in call(session, "browser_press", key="NoSuchKey")["error"]
    assert call(session, "browser_press", key="End")["result"] == "pressed End"
    close(session)


def test_vision_without_a_vision_tool_saves_the_screenshot(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    call(session, "browser_navigate", url=pages.url("/form"))
    seen = call(session, "browser_vision", question="What is on the page?")
    shot = Path(seen["screenshot_path"])
    assert shot.read_bytes().startswith(b"\x89PNG") and stat.S_IMODE(shot.stat().st_mode) == 0o600
    assert shot.is_relative_to(browser.settings().paths.spill)
    assert "no vision tool is enabled" in seen["note"]
    close(session)


def test_a_download_is_kept_in_the_task_folder(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    page = call(session, "browser_navigate", url=pages.url("/downloads"))["snapshot"]
    got = call(session, "browser_click", ref=ref_named(page, "link", "Get the file"))
    kept = got["downloads"][0]
    assert kept["bytes"] == 5000 and Path(kept["path"]).name == "file.txt"
    assert Path(kept["path"]).read_bytes() == b"x" * 5000
    assert Path(kept["path"]).is_relative_to(browser.settings().paths.spill)
    close(session)


def test_tasks_have_their_own_tabs_and_session_end_closes_them(browser: BrowserHarness, pages: PageServer) -> None:
    from hermes.tools.browser.backend import hub

    first, second = browser.session(), browser.session()
    call(first, "browser_navigate", url=pages.url("/form"))
    call(second, "browser_navigate", url=pages.url("/images"))
    assert call(first, "browser_snapshot")["title"] == "Form"
    assert call(second, "browser_snapshot")["title"] == "Images"
    assert {first.task_id, second.task_id} <= set(hub().tabs)
    close(first)
    assert first.task_id not in hub().tabs and second.task_id in hub().tabs
    close(second)
