"""The usage dashboard in headless Chromium (``/usr/bin/chromium``; skipped when it is missing, unless
``CI`` is set — CI installs it).

A login link opened in the browser lands on the signed-in page, whose DOM holds the table rows and the
SVG bars and points; the same when the link is followed from another site; a screenshot shows the
chart's colours. The gateway and its usage come from :func:`fakes.dashboard.usage_gateway`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import struct
import subprocess
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from fakes.cdp import cdp_call
from fakes.dashboard import DAY, Page, login_link, usage_gateway
from fakes.vendors import ServerThread
from fakes.vendors.harness import GatewayHarness

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    with usage_gateway(tmp_path_factory.mktemp("gw_dash_browser")) as harness:
        yield harness


def _chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing (CI installs it)")
        pytest.skip(f"{CHROMIUM} is not installed")
    profile = tmp / "profile"
    profile.mkdir(exist_ok=True)
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=45, check=False,
                          env={**os.environ, "HOME": str(tmp)})


@pytest.mark.timeout(120)
def test_chromium_renders_the_signed_in_dashboard(gw: GatewayHarness, tmp_path: Path) -> None:
    url = f"{gw.url}/dashboard?login={login_link(gw, 'alice')}&days=30"
    done = _chromium(tmp_path, "--dump-dom", url)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = Page(done.stdout)
    assert "Signed in as alice (plan paid)" in done.stdout and 'name="token"' not in done.stdout
    rows = dom.tables["by-tool"]
    assert [r[:7] for r in rows] == [
        ["Web extract", "firecrawl relay, local", "scrape", "2", "1", "1", "$0.001"],
        ["Web search", "firecrawl relay, searxng", "search", "3", "3", "7", "$0.014"],
        ["Text to speech", "openai-audio relay, openai", "speech", "1", "1", "24", "$0.0024"],
    ]
    assert "<svg" in done.stdout
    bars = {(m["data-day"], m["data-category"]): m["data-units"] for m in dom.marks if m["kind"] == "bar"}
    points = {(m["data-day"], m["data-category"]) for m in dom.marks if m["kind"] == "point"}
    today = time.strftime("%Y-%m-%d", time.gmtime())
    earlier = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 3 * DAY))
    assert bars == {(today, "firecrawl"): "3", (today, "openai-audio"): "24", (earlier, "firecrawl"): "5"}
    assert points == set(bars)


@contextmanager
def devtools(tmp: Path) -> Iterator[str]:
    """A headless Chromium with its DevTools endpoint open; yields the browser's WebSocket URL."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing (CI installs it)")
        pytest.skip(f"{CHROMIUM} is not installed")
    profile = tmp / "profile"
    profile.mkdir()
    browser = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
         "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "HOME": str(tmp)})
    try:
        active = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (active.exists() and len(active.read_text().split()) >= 2):
            time.sleep(0.05)
        port, path = active.read_text().split()[:2]
        yield f"ws://127.0.0.1:{port}{path}"
    finally:
        browser.terminate()
        try:
            browser.wait(10)
        except subprocess.TimeoutExpired:
            browser.kill()
            browser.wait()


class Tab:
    """One browser tab driven over DevTools: open a URL, read the page, type and click like a person.

    A cross-site navigation swaps the renderer process, which ``--dump-dom`` does not follow reliably; a
    DevTools session attached to the tab (``flatten``) stays with it across the swap.
    """

    def __init__(self, ws: Any, session: str) -> None:
        self.ws, self.session, self.ids = ws, session, itertools.count(100)

    @classmethod
    async def open(cls, ws: Any, url: str) -> Tab:
        target = await cdp_call(ws, 1, "Target.createTarget", {"url": url})
        attached = await cdp_call(ws, 2, "Target.attachToTarget", {"targetId": target["result"]["targetId"],
                                                               "flatten": True})
        return cls(ws, attached["result"]["sessionId"])

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await cdp_call(self.ws, next(self.ids), method, params, self.session)

    async def evaluate(self, expression: str) -> Any:
        reply = await self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return reply.get("result", {}).get("result", {}).get("value")  # None while navigating

    async def wait_for(self, settled: Callable[[str], bool], seconds: float = 20) -> str:
        """The page's HTML once it has loaded and ``settled(html)`` holds (the last one seen after ``seconds``)."""
        html, deadline = "", time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = await self.evaluate("document.readyState + '|' + document.documentElement.outerHTML")
            if isinstance(value, str):
                state, _, html = value.partition("|")
                if state == "complete" and settled(html):
                    return html
            await asyncio.sleep(0.1)
        return html

    async def goto(self, url: str) -> None:
        await self.call("Page.navigate", {"url": url})

    async def click(self, selector: str) -> None:
        """A left click with the mouse in the middle of the element ``selector``."""
        where = await self.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                                    ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        assert isinstance(where, list), f"no {selector} on the page"
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            await self.call("Input.dispatchMouseEvent", {"type": kind, "x": where[0], "y": where[1],
                                                         "button": "left", "clickCount": 1})

    async def type_into(self, selector: str, text: str) -> None:
        await self.click(selector)
        await self.call("Input.insertText", {"text": text})


async def _final_page(ws_url: str, start: str, settled: str) -> str:
    """Open ``start`` in a new tab and read the page's HTML until it contains ``settled`` (or 20 s pass)."""
    from websockets.asyncio.client import connect

    async with connect(ws_url, proxy=None, compression=None, max_size=None) as ws:
        tab = await Tab.open(ws, start)
        return await tab.wait_for(lambda html: settled in html)


@pytest.mark.timeout(120)
def test_chromium_link_followed_from_another_site(gw: GatewayHarness, tmp_path: Path) -> None:
    """A login link opened from another site (``localhost`` is not the site ``127.0.0.1``): the browser keeps
    a ``SameSite=Strict`` cookie off a redirect that started there, so the gateway answers with a page of its
    own that moves on; the browser must end on the signed-in page, not on the sign-in form."""
    target = f"{gw.url}/dashboard?login={login_link(gw, 'alice')}"

    async def hop(request: Request) -> Response:
        return HTMLResponse(f'<meta http-equiv="refresh" content="0;url={target}"><p>elsewhere</p>')

    with devtools(tmp_path) as ws_url, ServerThread(Starlette(routes=[Route("/", hop)])) as other:
        html = asyncio.run(_final_page(ws_url, f"http://localhost:{other.port}/", "Signed in as"))
    assert "elsewhere" not in html and 'name="token"' not in html
    assert "Signed in as alice (plan paid)" in html and "<svg" in html


SIGNED_OUT_USER = 'name="token"'
SIGNED_OUT_ADMIN = 'name="admin_token"'


async def _click_every_form(ws_url: str, gw: GatewayHarness, forger: str) -> dict[str, str]:
    """Sign in and out through every dashboard form, typing and clicking; then the forged forms of
    ``forger`` (another site). Returns the page HTML after each step, by step name."""
    from websockets.asyncio.client import connect

    seen: dict[str, str] = {}

    def signed_in(who: str) -> Callable[[str], bool]:
        return lambda html: f"Signed in as {who}" in html or "role=\"alert\"" in html

    def signed_out(field: str) -> Callable[[str], bool]:
        return lambda html: field in html and "Signed in as" not in html

    async with connect(ws_url, proxy=None, compression=None, max_size=None) as ws:
        tab = await Tab.open(ws, f"{gw.url}/dashboard")
        await tab.wait_for(signed_out(SIGNED_OUT_USER))
        await tab.type_into('input[name="token"]', gw.token("bob"))
        await tab.click('form[action="dashboard/signin"] button')
        seen["token sign-in"] = await tab.wait_for(signed_in("bob"))
        await tab.click('form[action="dashboard/signout"] button')
        seen["user sign-out"] = await tab.wait_for(signed_out(SIGNED_OUT_USER))
        await tab.type_into('input[name="token"]', login_link(gw, "dora"))
        await tab.click('form[action="dashboard/signin"] button')
        seen["code sign-in"] = await tab.wait_for(signed_in("dora"))

        await tab.goto(f"{gw.url}/admin/dashboard")
        await tab.wait_for(signed_out(SIGNED_OUT_ADMIN))
        await tab.type_into('input[name="admin_token"]', gw.side.admin_token)
        await tab.click('form[action="dashboard/signin"] button')
        seen["admin sign-in"] = await tab.wait_for(signed_in("the administrator"))
        await tab.click('form[action="dashboard/signout"] button')
        seen["admin sign-out"] = await tab.wait_for(signed_out(SIGNED_OUT_ADMIN))
        await tab.type_into('input[name="admin_token"]', gw.side.admin_token)
        await tab.click('form[action="dashboard/signin"] button')
        await tab.wait_for(signed_in("the administrator"))

        for step, button in (("forged sign-out", "#signout"), ("forged sign-in", "#signin")):
            await tab.goto(forger)
            await tab.wait_for(lambda html: "forms of another site" in html)
            await tab.click(button)
            seen[step] = await tab.wait_for(lambda html: "forms of another site" not in html)
        await tab.goto(f"{gw.url}/admin/dashboard")
        seen["admin after forgery"] = await tab.wait_for(signed_in("the administrator"))
        await tab.goto(f"{gw.url}/dashboard")
        seen["user after forgery"] = await tab.wait_for(signed_in("dora"))
    return seen


@pytest.mark.timeout(150)
def test_chromium_every_form_works_and_forged_ones_are_refused(gw: GatewayHarness, tmp_path: Path) -> None:
    """Each form of the dashboard typed into and clicked in Chromium: sign in by pasting a gateway token,
    sign out, sign in by pasting a login code, the admin's sign-in and sign-out. Then a page on another site
    (``localhost``) posts the dashboard's own forms: both are refused and no session changes."""
    bob = gw.token("bob")

    async def forms(request: Request) -> Response:
        return HTMLResponse(
            "<h1>forms of another site</h1>"
            f'<form method="post" action="{gw.url}/admin/dashboard/signout"><input type="hidden" name="csrf" '
            'value="x"><button id="signout">Win a prize</button></form>'
            f'<form method="post" action="{gw.url}/dashboard/signin"><input type="hidden" name="token" '
            f'value="{bob}"><input type="hidden" name="csrf" value="x"><button id="signin">Win more</button></form>')

    with devtools(tmp_path) as ws_url, ServerThread(Starlette(routes=[Route("/", forms)])) as other:
        seen = asyncio.run(_click_every_form(ws_url, gw, f"http://localhost:{other.port}/"))
    assert "Signed in as bob (plan free)" in seen["token sign-in"], seen["token sign-in"][-1500:]
    assert "Signed in as dora (plan paid)" in seen["code sign-in"], seen["code sign-in"][-1500:]
    assert "Signed in as the administrator" in seen["admin sign-in"], seen["admin sign-in"][-1500:]
    for step in ("user sign-out", "admin sign-out"):
        assert "another site" not in seen[step] and "Signed in as" not in seen[step], step
    for step in ("forged sign-out", "forged sign-in"):
        assert "This form was sent from another site" in seen[step], seen[step][-1500:]
    assert "Signed in as the administrator" in seen["admin after forgery"]
    assert "Signed in as dora" in seen["user after forgery"] and "Signed in as bob" not in seen["user after forgery"]


def png_colours(data: bytes) -> set[tuple[int, int, int]]:
    """The set of RGB colours of an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, head = 8, [], b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            head = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", head)
    assert depth == 8 and ctype in (2, 6) and interlace == 0
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * bpp
    prev = bytearray(stride)
    colours: set[tuple[int, int, int]] = set()
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        colours.update((line[i], line[i + 1], line[i + 2]) for i in range(0, stride, bpp))
        prev = line
    return colours


@pytest.mark.timeout(120)
def test_chromium_screenshot_shows_the_chart(gw: GatewayHarness, tmp_path: Path) -> None:
    shot = tmp_path / "dashboard.png"
    url = f"{gw.url}/dashboard?login={login_link(gw, 'alice')}&days=30"
    done = _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,900", "--hide-scrollbars", url)
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert struct.unpack(">II", data[16:24]) == (1200, 900)
    colours = png_colours(data)
    assert len(colours) > 50  # text is anti-aliased: a page of words, not a blank one
    # the bars of both categories are on screen in their colours (firecrawl blue, openai-audio green)
    assert (0x2F, 0x6F, 0xDF) in colours and (0x2A, 0x9D, 0x5C) in colours
