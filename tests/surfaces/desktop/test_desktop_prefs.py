"""The desktop app's tips rotation in the page (injected clock), tips and tours switched off mid-session
(TS-9: refused by the app now, absent from the next session's tools), and ``hermes desktop --no-open``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from hermes.surfaces.appserver.tips import CATALOG, FIRST_DELAY, GAP

from .harness import Desktop, desktop

__all__ = ["desktop"]


def _poll(desktop: Desktop) -> object:
    return desktop.page.evaluate("hermesApp.pollTips()")


def test_the_rotation_shows_its_tips_in_the_page_on_its_cadence(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    page.evaluate("hermesApp.state.idleMs = 0")
    assert _poll(desktop) is None  # just launched
    desktop.clock.advance(FIRST_DELAY + 1)
    page.evaluate("hermesApp.state.idleMs = 10 ** 9")  # the person is busy
    assert _poll(desktop) is None
    page.evaluate("hermesApp.state.idleMs = 0")
    shown = _poll(desktop)
    assert isinstance(shown, dict) and shown["selector"] == CATALOG[0].selector
    tip = page.locator('[data-tour="tip"]')
    assert tip.get_attribute("data-source") == "rotation" and CATALOG[0].text in tip.text_content()
    desktop.shot("tips-rotation")
    page.click('[data-tour="tip-close"]')
    assert _poll(desktop) is None  # closed counts as shown; the next waits 6 hours
    desktop.clock.advance(GAP)
    assert _poll(desktop)["selector"] == CATALOG[1].selector  # type: ignore[index]
    desktop.clock.advance(GAP)
    agent = desktop.tool("show_tip", {"selector": '[data-tour="composer"]', "text": "Type here."})
    assert agent["shown"] is True
    desktop.clock.advance(GAP - 60)
    assert _poll(desktop) is None  # the agent's tip silenced the rotation
    desktop.clock.advance(60)
    assert _poll(desktop)["selector"] == CATALOG[2].selector  # type: ignore[index]
    page.evaluate("hermesApp.state.idleMs = 60000")


def test_tips_and_tours_off_mid_session_are_refused_now_and_absent_next_session(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    desktop.say("hello")
    assert {"show_tip", "gui_tour"} <= set(desktop.tools_offered())
    page.click('[data-tour="settings-button"]')
    page.uncheck('[data-tour="tips-toggle"]')  # Settings → Appearance → In-app tips
    page.wait_for_function("hermesApp.state.prefs.in_app_tips === false")
    assert "in_app_tips: false" in (desktop.home / "config.yaml").read_text()
    page.click('[data-tour="settings-close"]')
    refused = desktop.tool("show_tip", {"selector": '[data-tour="model"]', "text": "x"})
    assert refused["refused"] is True and "tips are turned off" in refused["error"]
    assert page.locator('[data-tour="tip"]').count() == 0
    assert desktop.tool("gui_tour", {"action": "targets"})["targets"]  # tours are still on
    assert _poll(desktop) is None  # the rotation is off too
    # tours switched off outside the app (hermes config set): the page learns it with the next call
    config = desktop.home / "config.yaml"
    config.write_text(config.read_text() + "  in_app_tours: false\n")
    refused = desktop.tool("gui_tour", {"action": "start", "preset": "quick"})
    assert refused["refused"] is True and "tours are turned off" in refused["error"]
    assert page.locator('[data-tour="tour"]').count() == 0
    desktop.new_session()
    desktop.say("hello again")
    offered = desktop.tools_offered()
    assert "show_tip" not in offered and "gui_tour" not in offered and "focus_pane" in offered
    page.evaluate("hermesApp.call('ui.prefs.set', {in_app_tips: true, in_app_tours: true})")
    desktop.new_session()
    desktop.say("and back")
    assert {"show_tip", "gui_tour"} <= set(desktop.tools_offered())


def test_ui_prefs_set_refuses_unknown_keys_and_bad_values(desktop: Desktop) -> None:
    page = desktop.page
    bad = page.evaluate("hermesApp.call('ui.prefs.set', {in_app_tips: 'perhaps'}).catch(e => e.message)")
    assert "display.in_app_tips" in bad
    unknown = page.evaluate("hermesApp.call('ui.prefs.set', {font: 'big'}).catch(e => e.message)")
    assert "unknown: font" in unknown


def test_hermes_desktop_no_open_serves_the_app_that_answers(desktop: Desktop, tmp_path: Path) -> None:
    env = {**os.environ, "HERMES_HOME": str(desktop.home), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "desktop", "--no-open"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("hermes desktop on http://127.0.0.1:"), first
        url = first.split(" on ", 1)[1].strip()
        assert "serve_token" in proc.stdout.readline()  # the page needs the token, which is never printed
        url += "#token=" + (desktop.home / "serve_token").read_text().strip()
        page = desktop.browser.new_page()
        try:
            page.goto(url)
            page.wait_for_function("document.documentElement.dataset.ready === 'true'")
            page.fill('[data-tour="composer-input"]', "from the command")
            page.press('[data-tour="composer-input"]', "Enter")
            page.wait_for_function("""() => [...document.querySelectorAll('.message[data-role="assistant"]')]
                .some(m => m.textContent === 'FROM THE COMMAND')""")
            page.screenshot(path=str(desktop.shots / "hermes-desktop-cli.png"))
        finally:
            page.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(20)
        if proc.stdout is not None:
            proc.stdout.close()
    assert code == 0
