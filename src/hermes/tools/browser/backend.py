"""The browsers behind the tools: one Playwright driver per process, one :class:`Tab` per task.

Everything here runs on the tool bridge loop (:mod:`hermes.tools.asyncbridge`): the handlers are async,
so Playwright's async API is used and its objects never cross threads.

* **local** — the Chromium program (``browser.chromium`` or the first ``chromium`` on PATH; never a
  browser download) started by Playwright with ``executable_path``, headless, its traffic forced through
  a network fence (:mod:`hermes.net.fence`) that judges every connection. One Chromium per fence policy,
  one browser context per task, so tasks never see each other's cookies;
* **cdp** — ``browser.cdp_url`` / ``BROWSER_CDP_URL``: Playwright's ``connect_over_cdp``; each task gets
  its own page in the endpoint's default context (the person's logins stay usable) and only that page
  is closed when the task ends;
* **cloud** — a Browser Use session per task (:mod:`.cloud`: directly or through the Tool Gateway),
  driven over its ``cdpUrl`` like a CDP endpoint and stopped when the task ends.

A tab is closed when its session ends (:func:`hermes.tools.context.on_session_end`) and by the idle
reaper after ``browser.inactivity_timeout``; the local Chromium stops when no tab used it for that long.
With ``browser.persist_profile`` the cookies and local storage of local tabs are loaded from and saved
to ``HERMES_HOME/browser/profile/state.json`` (folder 0700, file 0600, written atomically).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hermes.config.atomic import atomic_write
from hermes.errors import ToolError
from hermes.tools.browser.guard import address_refusal, policy_of, served_refusal, url_refusal

if TYPE_CHECKING:
    from playwright.async_api import (
        Browser,
        BrowserContext,
        CDPSession,
        Dialog,
        Download,
        Page,
        Playwright,
        Response,
        Route,
    )

    from hermes.net.fence import NetworkFence
    from hermes.tools.browser.config import BrowserConfig

logger = logging.getLogger(__name__)

REAP_EVERY = 15.0
CONSOLE_KEPT = 200
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(eq=False)
class Tab:
    """One task's page and what the tools remember about it."""

    task_id: str
    config: BrowserConfig
    context: BrowserContext
    page: Page
    owns_context: bool
    console: deque[dict[str, str]] = field(default_factory=lambda: deque(maxlen=CONSOLE_KEPT))
    errors: deque[dict[str, str]] = field(default_factory=lambda: deque(maxlen=CONSOLE_KEPT))
    #: dialogs waiting for browser_dialog (CDP backend); closed dialogs and downloads not reported yet
    pending_dialogs: list[Dialog] = field(default_factory=list)
    closed_dialogs: list[dict[str, str]] = field(default_factory=list)
    #: requests refused by the guard or the fence since the last action, as (url, reason)
    blocked: list[tuple[str, str]] = field(default_factory=list)
    failed: deque[tuple[str, str]] = field(default_factory=lambda: deque(maxlen=50))
    downloads: list[dict[str, Any]] = field(default_factory=list)
    saving: set[asyncio.Task[Any]] = field(default_factory=set)
    #: main-frame documents seen (bumped on every main-frame navigation)
    document: int = 0
    #: refs the tools have seen on this tab, and the ref → "role name" map of the latest snapshot
    known_refs: set[str] = field(default_factory=set)
    current_refs: dict[str, str] = field(default_factory=dict)
    current_all: set[str] = field(default_factory=set)
    #: the model's refs ↔ Playwright's (see :mod:`.snapshot`)
    ref_of: dict[str, str] = field(default_factory=dict)
    target_of: dict[str, str] = field(default_factory=dict)
    snapshot_document: int = -1
    #: the latest full snapshot (for paging and search) and where it is saved
    snapshot_lines: list[str] = field(default_factory=list)
    snapshot_path: Path | None = None
    snapshot_count: int = 0
    cdp: CDPSession | None = None
    #: the last main-frame address the CDP backend's re-check refused (and left for about:blank)
    main_refused: tuple[str, str] | None = None
    #: the last response a remote browser got from an address that is not allowed (the page was blanked):
    #: what the tools read of the page is refused until it is taken (:func:`refuse_served`)
    served_refused: tuple[str, str] | None = None
    #: set when a dialog starts waiting (an action that opened one returns instead of stalling)
    dialog_opened: asyncio.Event = field(default_factory=asyncio.Event)
    last_used: float = field(default_factory=time.monotonic)
    #: the cloud browser session of this tab (stopped when the tab closes), and its own connection
    cloud_session: str | None = None
    cloud_browser: Browser | None = None
    #: the document a vault fill wrote a secret into: scripts and raw CDP are refused on it (a script could
    #: read the field back in any encoding) until the page navigates
    vault_document: int | None = None
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    def touch(self) -> None:
        self.last_used = time.monotonic()

    def name_ref(self, playwright_ref: str) -> str:
        """The model's ref for Playwright's ``playwright_ref`` in the current document (a new one on first
        sight; a new document never inherits the refs of the last)."""
        key = f"{self.document}:{playwright_ref}"
        mine = self.ref_of.get(key)
        if mine is None:
            mine = self.ref_of[key] = f"e{len(self.ref_of) + 1}"
            self.target_of[mine] = playwright_ref
        return mine

    def take_blocked(self) -> list[tuple[str, str]]:
        taken, self.blocked = self.blocked, []
        return taken

    async def drain(self, timeout: float = 5.0) -> None:
        """Wait for the tab's background work (re-checks of navigations) to finish."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)

    def spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    @property
    def folder(self) -> Path:
        """This task's own folder under the spill folder (screenshots, downloads, saved snapshots), 0700."""
        path = self.config.spill_dir / "browser" / _UNSAFE_NAME.sub("_", self.task_id)[:80]
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return path


@dataclass
class _Local:
    browser: Browser
    fence: NetworkFence
    #: how long it may sit without tabs (the inactivity timeout of the config that started it)
    idle_limit: float
    last_used: float = field(default_factory=time.monotonic)


class BrowserHub:
    """The process-wide driver, browsers and tabs (use :func:`hub`)."""

    def __init__(self) -> None:
        self._playwright: Playwright | None = None
        self._locals: dict[tuple[str, bool, bool], _Local] = {}
        self._remotes: dict[str, Browser] = {}
        self.tabs: dict[str, Tab] = {}
        self._lock: asyncio.Lock | None = None
        self._reaper: asyncio.Task[None] | None = None

    # -- the driver and browsers ------------------------------------------------------------------------
    async def _driver(self) -> Playwright:
        if self._playwright is None:
            try:
                from playwright.async_api import async_playwright
            except ImportError:
                raise ToolError("the browser tools need the Python package 'playwright' "
                                "(pip install 'hermes[browser]'); no browser download is needed") from None
            self._playwright = await async_playwright().start()
        return self._playwright

    async def _local_browser(self, config: BrowserConfig) -> Browser:
        if config.chromium is None:
            raise ToolError("no Chromium found: install the 'chromium' package or set browser.chromium in "
                            "config.yaml")
        key = (config.chromium, config.allow_private_urls, config.headless)
        found = self._locals.get(key)
        if found is not None and found.browser.is_connected():
            found.last_used = time.monotonic()
            return found.browser
        from hermes.net.fence import NetworkFence

        fence = NetworkFence(policy_of(config.allow_private_urls))
        port = await fence.start()
        args = ["--disable-quic", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--mute-audio", f"--proxy-server=socks5://127.0.0.1:{port}", "--proxy-bypass-list=<-loopback>",
                "--force-webrtc-ip-handling-policy=disable_non_proxied_udp"]
        if os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium's sandbox refuses to run as root
        driver = await self._driver()
        try:
            browser = await driver.chromium.launch(executable_path=config.chromium, headless=config.headless,
                                                   args=args, timeout=60_000)
        except Exception as exc:
            await fence.aclose()
            raise ToolError(f"Chromium ({config.chromium}) did not start: {str(exc).splitlines()[0]}") from None
        self._locals[key] = _Local(browser, fence, config.inactivity_timeout)
        return browser

    async def _remote_browser(self, url: str, timeout: float) -> Browser:
        found = self._remotes.get(url)
        if found is not None and found.is_connected():
            return found
        driver = await self._driver()
        try:
            browser = await driver.chromium.connect_over_cdp(url, timeout=timeout * 1000)
        except Exception as exc:
            raise ToolError(f"the CDP endpoint {url} did not answer: {str(exc).splitlines()[0]}") from None
        self._remotes[url] = browser
        return browser

    # -- tabs -----------------------------------------------------------------------------------------------
    async def tab(self, task_id: str, config: BrowserConfig) -> Tab:
        """The task's tab, opened on first use."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            found = self.tabs.get(task_id)
            if found is not None and not found.page.is_closed():
                found.touch()
                return found
            if found is not None:
                await self._close(found)
            opener = (self._open_remote if config.cdp_url else self._open_local if config.cloud is None
                      else self._open_camofox if config.cloud.vendor == "camofox" else self._open_cloud)
            tab = await opener(task_id, config)
            self.tabs[task_id] = tab
            if self._reaper is None or self._reaper.done():
                self._reaper = asyncio.ensure_future(self._reap_forever())
            return tab

    async def _open_local(self, task_id: str, config: BrowserConfig) -> Tab:
        browser = await self._local_browser(config)
        state = _profile_state(config)
        context = await browser.new_context(service_workers="block", accept_downloads=True,
                                            viewport={"width": 1280, "height": 800},
                                            storage_state=str(state) if state is not None else None)
        context.set_default_timeout(config.command_timeout * 1000)
        page = await context.new_page()
        tab = Tab(task_id, config, context, page, owns_context=True)
        await context.route("**/*", lambda route: _screen(tab, route))
        context.on("page", lambda new: _adopt(tab, new))
        _watch(tab, page)
        return tab

    async def _open_remote(self, task_id: str, config: BrowserConfig) -> Tab:
        assert config.cdp_url is not None
        browser = await self._remote_browser(config.cdp_url, config.command_timeout)
        context = browser.contexts[0] if browser.contexts else await browser.new_context()
        page = await context.new_page()
        page.set_default_timeout(config.command_timeout * 1000)
        tab = Tab(task_id, config, context, page, owns_context=False)
        await _guard_remote(tab, page)
        page.on("popup", lambda new: _adopt(tab, new))
        _watch(tab, page)
        return tab

    async def _open_cloud(self, task_id: str, config: BrowserConfig) -> Tab:
        """A cloud browser of the task's own (:mod:`.cloud`), driven like a CDP endpoint."""
        from hermes.tools.browser.cloud import create_session, stop_session

        assert config.cloud is not None
        ident, url = await create_session(config.cloud, config.command_timeout)
        driver = await self._driver()
        try:
            browser = await driver.chromium.connect_over_cdp(url, timeout=config.command_timeout * 1000)
            context = browser.contexts[0] if browser.contexts else await browser.new_context()
            page = await context.new_page()
        except Exception as exc:
            await stop_session(config.cloud, ident)
            raise ToolError(f"the cloud browser ({config.cloud.via}) did not answer over CDP: "
                            f"{str(exc).splitlines()[0]}") from None
        page.set_default_timeout(config.command_timeout * 1000)
        tab = Tab(task_id, config, context, page, owns_context=False, cloud_session=ident, cloud_browser=browser)
        await _guard_remote(tab, page)
        page.on("popup", lambda new: _adopt(tab, new))
        _watch(tab, page)
        return tab

    async def _open_camofox(self, task_id: str, config: BrowserConfig) -> Tab:
        """A tab of its own user on the Camofox server (:mod:`.camofox`), every landing judged."""
        from hermes.tools.browser.camofox import CamofoxContext, CamofoxPage

        assert config.cloud is not None
        page = CamofoxPage(config.cloud, task_id, config.command_timeout)
        try:
            await page.open()
        except ToolError:
            await page.http.aclose()
            raise
        tab = Tab(task_id, config, cast("BrowserContext", CamofoxContext(page)), cast("Page", page),
                  owns_context=False)

        def moved() -> None:
            tab.document += 1

        page.on_document = moved
        page.judge = lambda url: _recheck(tab, tab.page, url)
        return tab

    async def fresh_page(self, tab: Tab) -> None:
        """Replace the tab's page by a new blank one (after a refused navigation, whose error page would
        still be loading into the old one)."""
        from hermes.tools.browser.camofox import is_camofox

        old = tab.page
        if is_camofox(old):  # one tab per task on Camofox: it is sent to about:blank instead
            with contextlib.suppress(ToolError):
                await old.goto("about:blank")
            return
        page = await tab.context.new_page()
        if tab.owns_context:
            tab.page = page  # the context's "page" handler watched it already
        else:
            page.set_default_timeout(tab.config.command_timeout * 1000)
            await _guard_remote(tab, page)
            _watch(tab, page)
            tab.page = page
        tab.document += 1
        with contextlib.suppress(Exception):
            await old.close()

    async def close_tab(self, task_id: str) -> bool:
        """Close the task's tab (saving the profile first when it persists); False when it had none."""
        tab = self.tabs.pop(task_id, None)
        if tab is None:
            return False
        await self._close(tab)
        for local in self._locals.values():  # its idle time counts from its last tab
            if tab.owns_context and tab.context.browser is local.browser:
                local.last_used = time.monotonic()
        return True

    async def _close(self, tab: Tab) -> None:
        for dialog in tab.pending_dialogs:
            with contextlib.suppress(Exception):
                await dialog.dismiss()
        tab.pending_dialogs.clear()
        try:
            if tab.owns_context:
                if tab.config.persist_profile:
                    await _save_profile(tab)
                await tab.context.close()
            else:
                await tab.page.close()
        except Exception:  # the browser went away first
            logger.debug("closing the browser tab of %s failed", tab.task_id, exc_info=True)
        if tab.cloud_session is not None and tab.config.cloud is not None:
            from hermes.tools.browser.cloud import stop_session

            if tab.cloud_browser is not None:
                with contextlib.suppress(Exception):
                    await tab.cloud_browser.close()
            await stop_session(tab.config.cloud, tab.cloud_session)
            tab.cloud_session = None

    # -- the reaper and shutdown ------------------------------------------------------------------------------
    async def reap(self, now: float | None = None) -> list[str]:
        """Close tabs idle past their inactivity timeout, then local browsers nobody used that long."""
        now = time.monotonic() if now is None else now
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # never while a tab is being opened on a browser about to stop
            closed = [task for task, tab in list(self.tabs.items())
                      if now - tab.last_used > tab.config.inactivity_timeout]
            for task in closed:
                await self.close_tab(task)
            for key, local in list(self._locals.items()):
                in_use = any(t.owns_context and t.context.browser is local.browser for t in self.tabs.values())
                if in_use:
                    local.last_used = max(local.last_used, *(t.last_used for t in self.tabs.values()))
                elif now - local.last_used > local.idle_limit:
                    await self._stop_local(key)
        return closed

    async def _reap_forever(self) -> None:
        while self.tabs or self._locals:
            await asyncio.sleep(REAP_EVERY)
            try:
                await self.reap()
            except Exception:
                logger.warning("the browser reaper failed", exc_info=True)

    async def _stop_local(self, key: tuple[str, bool, bool]) -> None:
        local = self._locals.pop(key)
        with contextlib.suppress(Exception):
            await local.browser.close()
        await local.fence.aclose()

    async def shutdown(self) -> None:
        """Close every tab and browser and stop the driver (process exit, tests)."""
        for task in list(self.tabs):
            await self.close_tab(task)
        for key in list(self._locals):
            await self._stop_local(key)
        for browser in self._remotes.values():
            with contextlib.suppress(Exception):
                await browser.close()
        self._remotes.clear()
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                await self._playwright.stop()
            self._playwright = None


_HUB: BrowserHub | None = None


def hub() -> BrowserHub:
    """The process-wide hub (created on first use; stopped at process exit)."""
    global _HUB
    if _HUB is None:
        import atexit

        _HUB = BrowserHub()
        atexit.register(_shutdown_at_exit)
    return _HUB


def _shutdown_at_exit() -> None:
    if _HUB is None or not (_HUB.tabs or _HUB._locals or _HUB._remotes or _HUB._playwright):
        return
    from hermes.tools.asyncbridge import run_sync

    with contextlib.suppress(Exception):
        run_sync(_HUB.shutdown(), timeout=10)


# -- what every page of a tab reports ------------------------------------------------------------------------
def _adopt(tab: Tab, page: Page) -> None:
    """A page the tab's page opened (``target=_blank``, ``window.open``) becomes the tab's page."""
    if not tab.owns_context and page.opener is None:
        return  # another page of the person's own browser
    _watch(tab, page)
    if not tab.owns_context:
        tab.spawn(_guard_remote(tab, page))
    tab.page = page
    tab.document += 1


def _watch(tab: Tab, page: Page) -> None:
    page.on("console", lambda msg: tab.console.append({"type": msg.type, "text": msg.text[:2000]}))
    page.on("pageerror", lambda exc: tab.errors.append({"message": str(exc)[:2000]}))
    page.on("requestfailed", lambda req: tab.failed.append((req.url, req.failure or "failed")))
    page.on("dialog", lambda dialog: _on_dialog(tab, dialog))
    page.on("download", lambda download: _start_download(tab, download))
    page.on("framenavigated", lambda frame: _navigated(tab, page, frame))


def _navigated(tab: Tab, page: Page, frame: Any) -> None:
    if frame is not page.main_frame:
        return
    tab.document += 1
    if not tab.owns_context:  # a CDP browser is not behind our fence: judge where it ended up
        tab.spawn(_recheck(tab, page, frame.url))


async def _recheck(tab: Tab, page: Page, url: str) -> None:
    why = url_refusal(url, allow_private=tab.config.allow_private_urls) or await address_refusal(
        url, allow_private=tab.config.allow_private_urls)
    if why is not None:
        tab.blocked.append((url, why))
        tab.main_refused = (url, why)
        with contextlib.suppress(Exception):
            await page.goto("about:blank")


def _on_dialog(tab: Tab, dialog: Dialog) -> None:
    if not tab.owns_context and tab.cloud_session is None:  # a cloud browser has no browser_dialog: the policy
        tab.pending_dialogs.append(dialog)  # browser_dialog answers it
        tab.dialog_opened.set()
        return
    accept = tab.config.dialog_policy == "accept"
    tab.closed_dialogs.append({"type": dialog.type, "message": dialog.message[:500],
                               "closed": "accepted" if accept else "dismissed"})
    tab.spawn(dialog.accept() if accept else dialog.dismiss())


async def _guard_remote(tab: Tab, page: Page) -> None:
    """The checks of a page in a browser that is not behind our fence (CDP endpoint, cloud): every request
    the page makes (:func:`_screen`), and every redirect hop (:func:`_judge_hop`) — a route sees only the
    first request of a redirect chain, so responses are held at the response stage over a CDP session of
    our own and a 3xx whose ``Location`` is refused fails before the browser follows it.

    That CDP session sees the top page's own process only: a cross-site iframe runs in a process of its
    own (an out-of-process iframe), whose responses — its document, images, fetch() calls, nested frames —
    reach Playwright over the iframe's target, never that session. So every response of every frame is
    also judged from Playwright's page-wide ``response`` event by the address it came from
    (:func:`_judge_frame_response`)."""
    await page.route("**/*", lambda route: _screen(tab, route))
    page.on("response", lambda response: tab.spawn(_judge_frame_response(tab, page, response)))
    try:
        session = await tab.context.new_cdp_session(page)
        session.on("Fetch.requestPaused", lambda event: tab.spawn(_judge_hop(tab, session, event)))
        session.on("Network.responseReceived", lambda event: _judge_served(tab, page, event, event.get("response")))
        session.on("Network.requestWillBeSent",
                   lambda event: _judge_served(tab, page, event, event.get("redirectResponse")))
        await session.send("Network.enable", {})
        await session.send("Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Response"}]})
    except Exception as exc:  # a browser without the Fetch domain: the landing is still judged after the fact
        logger.warning("redirect hops of %s are not screened: %s", tab.task_id, str(exc).splitlines()[0][:200])


def _judge_served(tab: Tab, page: Page, event: dict[str, Any], response: Any) -> None:
    """A response the remote browser received, judged at the address it came from (at once, in the event
    callback, so a tool reading the page after it sees the refusal): a refused one blanks the page."""
    if not isinstance(response, dict):
        return
    url = str(response.get("url") or "")
    why = served_refusal(url, str(response.get("remoteIPAddress") or ""), allow_private=tab.config.allow_private_urls)
    if why is None:
        return
    if (url[:300], why) not in tab.blocked:  # the top page's process reports it twice
        tab.blocked.append((url[:300], why))
    tab.served_refused = (url, why)
    if event.get("type") == "Document" and tab.main_refused is None:
        tab.main_refused = (url, why)
    tab.spawn(_blank(page))


async def _judge_frame_response(tab: Tab, page: Page, response: Response) -> None:
    """A response of any frame or worker of a remote page (Playwright reports those of out-of-process
    iframes too), judged by the address the remote browser got it from; a refused one blanks the page like
    :func:`_judge_served`. A redirect whose ``Location`` is refused counts as refused too (the hop itself
    is failed before it is followed only in the top page's process, by :func:`_judge_hop`)."""
    from urllib.parse import urljoin

    served, location, top = None, None, False
    with contextlib.suppress(Exception):  # the page went away
        served = await response.server_addr()
        if 300 <= response.status < 400:
            location = await response.header_value("location")
    with contextlib.suppress(Exception):  # a worker's response has no frame
        top = response.request.resource_type == "document" and response.frame is page.main_frame
    remote = str(served.get("ipAddress") or "") if served else ""
    _judge_served(tab, page, {"type": "Document" if top else "Other"},
                  {"url": response.url, "remoteIPAddress": remote})
    if location:
        target = urljoin(response.url, location)
        allow = tab.config.allow_private_urls
        why = url_refusal(target, allow_private=allow, navigation=False) or await address_refusal(
            target, allow_private=allow)
        if why is not None:
            tab.blocked.append((target[:300], why))
            tab.served_refused = (target, f"{response.url[:200]} led there: {why}")
            await _blank(page)


async def _blank(page: Page) -> None:
    with contextlib.suppress(Exception):
        await page.goto("about:blank")


async def refuse_served(tab: Tab) -> None:
    """Raise when a remote browser's page got a response from an address that is not allowed since the last
    check: whatever a tool read of the page may hold it (the page itself is blanked already)."""
    if tab.owns_context:
        return
    await tab.drain()  # the judgments of responses still in flight (frame-wide ones are async)
    if tab.served_refused is None:
        return
    (url, why), tab.served_refused = tab.served_refused, None
    raise ToolError(f"refused: the page got {url[:200]}, which is not shown: {why} (the page is closed: about:blank)")


async def _judge_hop(tab: Tab, session: CDPSession, event: dict[str, Any]) -> None:
    from urllib.parse import urljoin

    request_id = event.get("requestId")
    status = int(event.get("responseStatusCode") or 0)
    target = None
    if 300 <= status < 400:
        location = next((str(h.get("value", "")) for h in event.get("responseHeaders") or []
                         if str(h.get("name", "")).lower() == "location"), "")
        target = urljoin(str(event.get("request", {}).get("url", "")), location) if location else None
    allow = tab.config.allow_private_urls
    why = None
    if target is not None:
        why = url_refusal(target, allow_private=allow, navigation=False) or await address_refusal(
            target, allow_private=allow)
    with contextlib.suppress(Exception):  # the page or the session went away
        if why is None:
            await session.send("Fetch.continueRequest", {"requestId": request_id})
            return
        assert target is not None
        tab.blocked.append((target[:300], why))
        if event.get("resourceType") == "Document":
            tab.main_refused = (target, why)
        await session.send("Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"})


async def _screen(tab: Tab, route: Route) -> None:
    """Every request of the tab: refused when the guard says so, else sent on."""
    request = route.request
    allow = tab.config.allow_private_urls
    why = url_refusal(request.url, allow_private=allow, navigation=False)
    if why is None and not tab.owns_context:
        why = await address_refusal(request.url, allow_private=allow)
    if why is not None:
        tab.blocked.append((request.url[:300], why))
        with contextlib.suppress(Exception):
            await route.abort("blockedbyclient")
        return
    with contextlib.suppress(Exception):
        await route.continue_()


def _start_download(tab: Tab, download: Download) -> None:
    task = asyncio.ensure_future(_keep_download(tab, download))
    tab.saving.add(task)
    task.add_done_callback(tab.saving.discard)


async def _keep_download(tab: Tab, download: Download) -> None:
    """Save a download in the task's folder; one over ``browser.download_max_bytes`` is deleted."""
    name = _UNSAFE_NAME.sub("_", download.suggested_filename or "download")[:120] or "download"
    target = tab.folder / "downloads" / name
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        await download.save_as(target)
    except Exception as exc:
        tab.downloads.append({"url": download.url[:300], "error": f"the download failed: {exc}"})
        return
    size = target.stat().st_size
    if size > tab.config.download_max_bytes:
        target.unlink(missing_ok=True)
        tab.downloads.append({"url": download.url[:300], "error": f"the download ({size:,} bytes) is over "
                              f"browser.download_max_bytes ({tab.config.download_max_bytes:,}); it was deleted"})
        return
    os.chmod(target, 0o600)
    tab.downloads.append({"url": download.url[:300], "path": str(target), "bytes": size})


# -- the persistent profile ----------------------------------------------------------------------------------
def _profile_state(config: BrowserConfig) -> Path | None:
    if not config.persist_profile:
        return None
    folder = config.profile_dir
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    state = folder / "state.json"
    return state if state.is_file() else None


async def _save_profile(tab: Tab) -> None:
    state = await tab.context.storage_state()
    folder = tab.config.profile_dir
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(folder / "state.json", json.dumps(state), mode=0o600)
