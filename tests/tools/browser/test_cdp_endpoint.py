"""The CDP endpoint backend: a Chromium started with --remote-debugging-port on 127.0.0.1, the two
CDP-only tools offered only while that endpoint answers, dialogs waiting for browser_dialog."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.tools.browser.cdp import endpoint_answers
from tools.browser.pages import PageServer, html
from tools.browser.support import CHROMIUM, BrowserHarness, call, close, need_browser, ref_named

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """``http://127.0.0.1:<port>`` of a headless Chromium with a DevTools port."""
    need_browser()
    profile = tempfile.mkdtemp(prefix="cdp-profile-")
    process = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-address=127.0.0.1",
         "--remote-debugging-port=0", f"--user-data-dir={profile}", "--no-first-run",
         # names that only this browser resolves: hermes cannot judge them by name, only by the address the
         # browser got the response from. *.side.test is a second site (its iframes run in a process of
         # their own); 0.0.0.0 is never allowed, yet it reaches this machine's loopback servers
         "--host-resolver-rules=MAP *.hop.test 127.0.0.1, MAP *.side.test 127.0.0.1, "
         "MAP *.zero.test 0.0.0.0", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    port = None
    deadline = time.monotonic() + 30
    while port is None and time.monotonic() < deadline:
        line = process.stderr.readline()
        found = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
        if found:
            port = int(found.group(1))
    assert port is not None, "Chromium did not open its DevTools port"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)
        process.stderr.close()
        shutil.rmtree(profile, ignore_errors=True)


def _dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_the_cdp_tools_are_offered_only_while_the_endpoint_answers(browser: BrowserHarness, endpoint: str) -> None:
    assert endpoint_answers(endpoint)
    dead = _dead_url()
    assert not endpoint_answers(dead)
    browser.configure(f"browser:\n  allow_private_urls: true\n  cdp_url: {dead}\n")
    offered = browser.session().offered()
    assert "browser_navigate" in offered and "browser_cdp" not in offered and "browser_dialog" not in offered
    browser.configure(f"browser:\n  allow_private_urls: true\n  cdp_url: {endpoint}\n")
    offered = browser.session().offered()
    assert {"browser_cdp", "browser_dialog", "browser_navigate"} <= offered
    browser.configure("browser:\n  allow_private_urls: true\n")
    assert "browser_cdp" not in browser.session().offered()


def test_tools_drive_the_endpoint_browser_and_dialogs_wait(browser: BrowserHarness, pages: PageServer,
                                                           endpoint: str) -> None:
    browser.configure(f"browser:\n  allow_private_urls: true\n  cdp_url: {endpoint}\n")
    session = browser.session()
    try:
        page = call(session, "browser_navigate", url=pages.url("/dialogs"))["snapshot"]
        asked = call(session, "browser_click", ref=ref_named(page, "button", "Ask"))
        assert asked["pending_dialogs"] == [{"type": "confirm", "message": "Sure?", "default_prompt": ""}]
        assert call(session, "browser_snapshot")["pending_dialogs"][0]["message"] == "Sure?"
        answered = call(session, "browser_dialog", action="accept")
        assert answered["result"] == "accepted the confirm dialog" and answered["pending_dialogs"] == []
        assert "paragraph: \"yes\"" in call(session, "browser_snapshot")["snapshot"] or \
            "paragraph: yes" in call(session, "browser_snapshot")["snapshot"]
        assert call(session, "browser_dialog", action="dismiss")["error"] == "no JavaScript dialog is open on this page"
        title = call(session, "browser_cdp", method="Runtime.evaluate", params={"expression": "document.title"})
        assert '"value": "Dialogs"' in title["result"]
        assert "must be Domain.method" in call(session, "browser_cdp", method="evaluate")["error"]
        refused = call(session, "browser_cdp", method="Page.navigate",
                       params={"url": "http://169.254.169.254/latest/"})
        assert refused["error"].startswith("refused to open")
        assert "failed" in call(session, "browser_cdp", method="Nope.nothing")["error"]
        # methods that would open pages or write files past the navigation checks are refused
        for method, params in (("Target.createTarget", {"url": pages.url("/dialogs")}),
                               ("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": "/tmp"}),
                               ("Page.setDownloadBehavior", {"behavior": "allow"}), ("Fetch.disable", {}),
                               ("Page.frameNavigated", {"url": "http://169.254.169.254/"}),
                               # nor may the cookies, storage or caches of the person's browser be read
                               ("Network.getAllCookies", {}), ("Network.getCookies", {"urls": [pages.url("/")]}),
                               ("DOMStorage.getDOMStorageItems", {"storageId": {"isLocalStorage": True}}),
                               ("CacheStorage.requestCacheNames", {})):
            assert "refused" in call(session, "browser_cdp", method=method, params=params)["error"], method
    finally:
        close(session)
        browser.configure("browser:\n  allow_private_urls: true\n")


def test_a_redirect_in_the_endpoint_browser_is_refused(browser: BrowserHarness, pages: PageServer,
                                                       endpoint: str) -> None:
    browser.configure(f"browser:\n  allow_private_urls: true\n  cdp_url: {endpoint}\n")
    session = browser.session()
    try:
        refused = call(session, "browser_navigate", url=pages.url("/to-metadata"))
        assert "refused" in refused.get("error", ""), refused
        assert "169.254.169.254" in refused["error"]
    finally:
        close(session)
        browser.configure("browser:\n  allow_private_urls: true\n")


def test_no_redirect_hop_of_the_endpoint_browser_reaches_a_private_address(tmp_path: Path, pages: PageServer,
                                                                           endpoint: str) -> None:
    """A route sees only a chain's first request: each hop is judged at the response stage instead, so the
    private server is never asked — not by a navigation, not by a page's fetch()."""
    internal = PageServer({"/admin": html("<title>Admin</title><p>internal-only</p>")}).start()
    public = f"http://pub.hop.test:{pages.port}"
    pages.routes["/go-internal"] = (302, {"Location": internal.url("/admin"), "Access-Control-Allow-Origin": "*"}, b"")
    pages.routes["/fetches-internal"] = html(
        f"<title>Fetcher</title><p id=out>waiting</p><script>fetch('{public}/go-internal?x=sub')"
        ".then(r => r.text()).then(t => out.textContent = 'got ' + t).catch(e => out.textContent = 'failed')"
        "</script>")
    strict = BrowserHarness(tmp_path, pages)
    strict.configure(f"browser:\n  cdp_url: {endpoint}\n")
    session = strict.session()
    try:
        refused = call(session, "browser_navigate", url=f"{public}/go-internal")
        assert f"led to {internal.url('/admin')}" in refused["error"], refused
        # a script's fetch() (here from about:blank: every page on this machine is private) goes the same way
        fetch = (f"fetch('{public}/go-internal?x=sub').then(r => r.text()).then(t => 'got ' + t)"
                 ".catch(e => 'failed')")
        fetched = call(session, "browser_console", expression=fetch)
        assert "result" in fetched and "failed" in fetched["result"], fetched
        assert internal.hits == [], "a hop reached the private server"
    finally:
        close(session)
        internal.stop()


def test_a_name_only_the_endpoint_browser_resolves_is_judged_by_its_address(tmp_path: Path, pages: PageServer,
                                                                            endpoint: str) -> None:
    """*.hop.test resolves to 127.0.0.1 in the endpoint browser only: the response's address is what counts."""
    hidden = f"http://inner.hop.test:{pages.port}"
    strict = BrowserHarness(tmp_path, pages)
    strict.configure(f"browser:\n  cdp_url: {endpoint}\n")
    session = strict.session()
    try:
        opened = call(session, "browser_navigate", url=f"{hidden}/form")
        assert "inner.hop.test was served from 127.0.0.1" in opened.get("error", ""), opened
        assert "snapshot" not in opened
        # the page was left for about:blank: nothing of it is left to read
        assert call(session, "browser_snapshot")["url"] == "about:blank"
    finally:
        close(session)


def test_a_cross_site_iframe_chain_is_judged_by_the_address_of_every_frame(tmp_path: Path, pages: PageServer,
                                                                          endpoint: str) -> None:
    """top page → site B's iframe → a frame served from 0.0.0.0: B and its frame run in processes of their
    own (out-of-process iframes), which the top page's CDP session never sees; the nested frame's address
    is judged all the same and nothing of it reaches the model."""
    pages.routes["/oopif-top"] = html(f"<title>Top</title><iframe src='http://b.side.test:{pages.port}/oopif-mid'>"
                                      "</iframe>")
    pages.routes["/oopif-mid"] = html(f"<p>mid</p><iframe src='http://c.zero.test:{pages.port}/oopif-deep'></iframe>")
    pages.routes["/oopif-deep"] = html("<p>deep-private-text</p>")
    loose = BrowserHarness(tmp_path, pages)  # loopback allowed: only the 0.0.0.0 frame may be refused
    loose.configure(f"browser:\n  cdp_url: {endpoint}\n  allow_private_urls: true\n")
    session = loose.session()
    try:
        opened = call(session, "browser_navigate", url=f"http://top.hop.test:{pages.port}/oopif-top")
        assert "c.zero.test was served from 0.0.0.0" in opened.get("error", ""), opened
        assert "deep-private-text" not in str(opened)
        assert call(session, "browser_snapshot")["url"] == "about:blank"
        # a redirect of the iframe's own image to the metadata address is refused the same way
        pages.routes["/oopif-top-hop"] = html(f"<iframe src='http://b.side.test:{pages.port}/oopif-mid-hop'></iframe>")
        pages.routes["/oopif-mid-hop"] = html("<p>mid-text</p><img src='/oopif-hop'>")
        pages.routes["/oopif-hop"] = (302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b"")
        hopped = call(session, "browser_navigate", url=f"http://top.hop.test:{pages.port}/oopif-top-hop")
        assert "169.254.169.254" in hopped.get("error", ""), hopped
        assert "mid-text" not in str(hopped)
    finally:
        close(session)


def test_a_private_page_is_refused_in_the_endpoint_browser_by_default(tmp_path: Path, pages: PageServer,
                                                                      endpoint: str) -> None:
    strict = BrowserHarness(tmp_path, pages)
    strict.configure(f"browser:\n  cdp_url: {endpoint}\n")
    session = strict.session()
    try:
        assert "private or loopback" in call(session, "browser_navigate", url=pages.url("/form"))["error"]
    finally:
        close(session)
