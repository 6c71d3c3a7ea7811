"""Fixtures of the browser tool tests: a page server on 127.0.0.1, a HERMES_HOME whose config lets the
browser open loopback pages, and sessions of the browser tools (one Chromium per test module)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.browser.pages import PageServer, standard_routes
from tools.browser.support import BrowserHarness, need_browser


@pytest.fixture(scope="module")
def pages() -> Iterator[PageServer]:
    server = PageServer(standard_routes()).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory, pages: PageServer) -> Iterator[BrowserHarness]:
    """Sessions of the browser tools over one HERMES_HOME (``browser.allow_private_urls: true`` so the
    loopback page server can be opened); every Chromium is stopped at the end of the module."""
    need_browser()
    home: Path = tmp_path_factory.mktemp("browser_home")
    harness = BrowserHarness(home, pages)
    harness.configure("browser:\n  allow_private_urls: true\n")
    with pytest.MonkeyPatch.context() as patch:  # availability checks read the files under HERMES_HOME
        patch.setenv("HERMES_HOME", str(home))
        yield harness
    harness.shutdown()
