"""The usage dashboard in headless Chromium (``/usr/bin/chromium``; skipped when it is missing, unless
``CI`` is set — CI installs it).

A login link opened in the browser lands on the signed-in page, whose DOM holds the table rows and the
SVG bars and points; the same when the link is followed from another site; a screenshot shows the
chart's colours. The gateway and its usage come from :func:`fakes.dashboard.usage_gateway`.
"""

from __future__ import annotations

import asyncio
import os
import struct
import subprocess
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

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
        ["firecrawl", "local", "scrape", "2", "1", "1", "$0.001"],
        ["firecrawl", "searxng", "search", "3", "3", "7", "$0.014"],
        ["openai-audio", "openai", "speech", "1", "1", "24", "$0.0024"],
    ]
    assert "<svg" in done.stdout
    bars = {(m["data-day"], m["data-category"]): m["data-units"] for m in dom.marks if m["kind"] == "bar"}
    points = {(m["data-day"], m["data-category"]) for m in dom.marks if m["kind"] == "point"}
    today = time.strftime("%Y-%m-%d", time.gmtime())
    earlier = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 3 * DAY))
    assert bars == {(today, "firecrawl"): "3", (today, "openai-audio"): "24", (earlier, "firecrawl"): "5"}
    assert points == set(bars)


async def _final_page(devtools: str, start: str, settled: str) -> str:
    """Open ``start`` in a new tab and read the page's HTML until it contains ``settled`` (or 20 s pass).

    A cross-site navigation swaps the renderer process, which ``--dump-dom`` does not follow reliably; a
    DevTools session attached to the tab (``flatten``) stays with it across the swap.
    """
    from websockets.asyncio.client import connect

    async with connect(devtools, proxy=None, compression=None, max_size=None) as ws:
        target = await cdp_call(ws, 1, "Target.createTarget", {"url": start})
        attached = await cdp_call(ws, 2, "Target.attachToTarget", {"targetId": target["result"]["targetId"],
                                                               "flatten": True})
        session = attached["result"]["sessionId"]
        html, deadline, ident = "", time.monotonic() + 20, 3
        while time.monotonic() < deadline:
            reply = await cdp_call(ws, ident, "Runtime.evaluate", {
                "expression": "document.readyState + '|' + document.documentElement.outerHTML",
                "returnByValue": True}, session)
            ident += 1
            value = reply.get("result", {}).get("result", {}).get("value")  # an error while navigating: retry
            if isinstance(value, str):
                state, _, html = value.partition("|")
                if state == "complete" and settled in html:
                    return html
            await asyncio.sleep(0.1)
        return html


@pytest.mark.timeout(120)
def test_chromium_link_followed_from_another_site(gw: GatewayHarness, tmp_path: Path) -> None:
    """A login link opened from another site (``localhost`` is not the site ``127.0.0.1``): the browser keeps
    a ``SameSite=Strict`` cookie off a redirect that started there, so the gateway answers with a page of its
    own that moves on; the browser must end on the signed-in page, not on the sign-in form."""
    target = f"{gw.url}/dashboard?login={login_link(gw, 'alice')}"

    async def hop(request: Request) -> Response:
        return HTMLResponse(f'<meta http-equiv="refresh" content="0;url={target}"><p>elsewhere</p>')

    profile = tmp_path / "profile"
    profile.mkdir()
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing (CI installs it)")
        pytest.skip(f"{CHROMIUM} is not installed")
    browser = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
         "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "HOME": str(tmp_path)})
    try:
        active = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (active.exists() and len(active.read_text().split()) >= 2):
            time.sleep(0.05)
        port, path = active.read_text().split()[:2]
        with ServerThread(Starlette(routes=[Route("/", hop)])) as other:
            html = asyncio.run(_final_page(f"ws://127.0.0.1:{port}{path}", f"http://localhost:{other.port}/",
                                           "Signed in as"))
    finally:
        browser.terminate()
        try:
            browser.wait(10)
        except subprocess.TimeoutExpired:
            browser.kill()
            browser.wait()
    assert "elsewhere" not in html and 'name="token"' not in html
    assert "Signed in as alice (plan paid)" in html and "<svg" in html


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
