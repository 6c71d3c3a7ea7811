"""Tabs per task, the idle reaper, the persistent profile, and the availability check."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from hermes.tools.asyncbridge import run_sync
from hermes.tools.browser.backend import hub
from tools.browser.pages import PageServer
from tools.browser.support import BrowserHarness, call, close

pytestmark = pytest.mark.browser


def test_the_idle_reaper_closes_tabs_and_then_the_browser(browser: BrowserHarness, pages: PageServer) -> None:
    session = browser.session()
    call(session, "browser_navigate", url=pages.url("/form"))
    assert session.task_id in hub().tabs
    assert run_sync(hub().reap(now=time.monotonic() + 60)) == []  # not idle for 5 minutes yet
    closed = run_sync(hub().reap(now=time.monotonic() + 10_000))
    assert session.task_id in closed and session.task_id not in hub().tabs
    assert not hub()._locals  # nobody uses the Chromium any more: it was stopped
    # the next call opens a new tab (and a new Chromium) on its own
    assert call(session, "browser_navigate", url=pages.url("/images"))["title"] == "Images"
    close(session)
    # with no tab left, the Chromium still waits out its own inactivity timeout before it stops
    assert run_sync(hub().reap(now=time.monotonic() + 60)) == [] and hub()._locals


def test_cookies_survive_sessions_only_with_persist_profile(browser: BrowserHarness, pages: PageServer) -> None:
    read_cookie = "document.cookie"
    first = browser.session()
    call(first, "browser_navigate", url=pages.url("/set-cookie"))
    close(first)
    second = browser.session()
    call(second, "browser_navigate", url=pages.url("/form"))
    assert "oatmeal" not in call(second, "browser_console", expression=read_cookie)["result"]
    close(second)

    browser.configure("browser:\n  allow_private_urls: true\n  persist_profile: true\n")
    try:
        third = browser.session()
        call(third, "browser_navigate", url=pages.url("/set-cookie"))
        close(third)
        profile = browser.home / "browser" / "profile"
        state = profile / "state.json"
        assert stat.S_IMODE(profile.stat().st_mode) == 0o700 and stat.S_IMODE(state.stat().st_mode) == 0o600
        assert "oatmeal" in state.read_text(encoding="utf-8")
        fourth = browser.session()
        call(fourth, "browser_navigate", url=pages.url("/form"))
        assert "flavour=oatmeal" in call(fourth, "browser_console", expression=read_cookie)["result"]
        close(fourth)
    finally:
        browser.configure("browser:\n  allow_private_urls: true\n")


def test_availability_follows_what_can_run(browser: BrowserHarness, tmp_path: Path) -> None:
    from hermes.tools.browser.config import local_backend_ready

    ready, how = local_backend_ready(browser.settings())
    assert ready and how.startswith("local Chromium (")
    browser.configure("browser:\n  chromium: /nonexistent/chromium\n")
    try:
        ready, why = local_backend_ready(browser.settings())
        assert not ready and "no Chromium found" in why
        assert "browser_navigate" not in browser.session().offered()
        offered_error = browser.session().dispatch("browser_navigate", {"url": "http://127.0.0.1/"}).text
        assert "not enabled in this session" in offered_error
    finally:
        browser.configure("browser:\n  allow_private_urls: true\n")


def test_a_cloud_selection_this_build_cannot_drive_is_a_clear_error(browser: BrowserHarness,
                                                                     pages: PageServer) -> None:
    from hermes.tools.browser.config import local_backend_ready

    browser.configure("browser:\n  allow_private_urls: true\n  cloud_provider: browserbase\n")
    try:
        ready, why = local_backend_ready(browser.settings())
        assert not ready and why.startswith("browser is configured to use browserbase"), why
        assert "browser_navigate" not in browser.session().offered()
        # a caller that reaches the handler anyway (the catalog's own availability cache aside) is told why
        from hermes.tools.browser.actions import browser_navigate
        from hermes.tools.session import SessionContext, ToolSession

        session = ToolSession(browser.registry, None, SessionContext.from_settings(browser.settings()))
        with pytest.raises(Exception, match="browser is configured to use browserbase"):
            run_sync(browser_navigate({"url": pages.url("/form")}, session=session, task_id="cloud"))
    finally:
        browser.configure("browser:\n  allow_private_urls: true\n")
