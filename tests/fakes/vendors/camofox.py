"""A Camofox server fake (github.com/jo-inc/camofox-browser's REST API) driving a real headless Chromium.

The real server drives Camoufox (Firefox) with Playwright; this one drives the Debian Chromium the same
way, so the browser tools meet real pages through the same HTTP shapes:

* ``POST /tabs`` ``{userId, sessionKey, url?}`` → ``{tabId, url}`` (one browser context per userId);
* ``POST /tabs/{id}/navigate`` ``{userId, url}``, ``/click`` ``{userId, ref}``, ``/type`` ``{userId, ref, text,
  mode}``, ``/press`` ``{userId, key}``, ``/back`` → ``{ok, url}``; ``/scroll`` ``{userId, direction, amount}``;
  ``/wait``; ``/evaluate`` ``{userId, expression}`` → ``{ok, result}`` (an *expression*, as Node's
  ``page.evaluate(string)`` takes it: a function written as text is not called);
* ``GET /tabs/{id}/snapshot?userId=&offset=`` → ``{url, snapshot, refsCount, truncated, totalChars, hasMore,
  nextOffset}``: the page's ARIA snapshot with `` [eN]`` after the role and name of each interactive line,
  refs renumbered on every snapshot, served in windows of ``window`` characters;
* ``GET /tabs/{id}/screenshot?userId=&fullPage=`` → PNG; ``DELETE /tabs/{id}``, ``DELETE /sessions/{userId}``;
  ``GET /health``.

With ``access_key`` set every route but ``/health`` wants ``Authorization: Bearer <key>`` (401 otherwise),
as ``CAMOFOX_ACCESS_KEY`` does. Host names under ``.camofox.test`` resolve to 127.0.0.1 inside this browser
only (``--host-resolver-rules``), so pages on the loopback page server can be opened by a name the
client's guard does not take for a private address. ``requests`` logs (method, path, userId, authorised).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

INTERACTIVE = ("button", "link", "textbox", "searchbox", "checkbox", "radio", "listbox", "option", "menuitem",
               "tab", "switch", "slider", "spinbutton", "treeitem")
_LINE = re.compile(r'^(\s*- )([A-Za-z]+)(?: "((?:[^"\\]|\\.)*)")?')


@dataclass
class _Tab:
    page: Any
    user: str
    refs: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    last: str = ""


class FakeCamofox:
    def __init__(self, chromium: str, *, access_key: str | None = None, window: int = 20_000) -> None:
        self.chromium = chromium
        self.access_key = access_key
        self.window = window
        self.requests: list[tuple[str, str, str, bool]] = []
        self.tabs: dict[str, _Tab] = {}
        self.contexts: dict[str, Any] = {}
        self._ids = itertools.count(1)
        self._browser: Any = None
        self._driver: Any = None
        self._lock: asyncio.Lock | None = None
        tab = "/tabs/{tab_id}/"
        self.app = Starlette(lifespan=self._lifespan, routes=[
            Route("/health", self._health, methods=["GET"]),
            Route("/tabs", self._create, methods=["POST"]),
            Route("/tabs/{tab_id}", self._close_tab, methods=["DELETE"]),
            Route("/sessions/{user}", self._close_user, methods=["DELETE"]),
            *(Route(tab + action, self._action, methods=["POST"])
              for action in ("navigate", "click", "type", "press", "scroll", "back", "wait", "evaluate")),
            Route(tab + "snapshot", self._snapshot, methods=["GET"]),
            Route(tab + "screenshot", self._screenshot, methods=["GET"]),
        ])

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        if self._browser is not None:
            with contextlib.suppress(Exception):
                await self._browser.close()
            await self._driver.stop()

    async def _chromium(self) -> Any:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._browser is None:
                from playwright.async_api import async_playwright

                self._driver = await async_playwright().start()
                args = ["--host-resolver-rules=MAP *.camofox.test 127.0.0.1", "--disable-gpu"]
                if os.geteuid() == 0:
                    args.append("--no-sandbox")
                self._browser = await self._driver.chromium.launch(executable_path=self.chromium, args=args)
            return self._browser

    # -- plumbing ---------------------------------------------------------------------------------------------
    def _authorised(self, request: Request) -> bool:
        return self.access_key is None or request.headers.get("authorization") == f"Bearer {self.access_key}"

    async def _body(self, request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError:
            body = {}
        return body if isinstance(body, dict) else {}

    def _log(self, request: Request, user: str) -> bool:
        ok = self._authorised(request)
        self.requests.append((request.method, request.url.path, user, ok))
        return ok

    def _tab(self, request: Request, user: str) -> _Tab | None:
        found = self.tabs.get(request.path_params["tab_id"])
        return found if found is not None and found.user == user else None

    # -- routes ------------------------------------------------------------------------------------------------
    async def _health(self, request: Request) -> Response:
        return JSONResponse({"ok": True, "engine": "chromium-fake", "activeTabs": len(self.tabs)})

    async def _create(self, request: Request) -> Response:
        body = await self._body(request)
        user = str(body.get("userId") or "")
        if not self._log(request, user):
            return JSONResponse({"error": "Unauthorized"}, 401)
        if not user or not body.get("sessionKey"):
            return JSONResponse({"error": "userId and sessionKey required"}, 400)
        if user not in self.contexts:
            self.contexts[user] = await (await self._chromium()).new_context()
        page = await self.contexts[user].new_page()
        tab_id = f"tab-{next(self._ids)}"
        self.tabs[tab_id] = _Tab(page, user)
        if body.get("url"):
            await page.goto(str(body["url"]), wait_until="domcontentloaded")
        return JSONResponse({"tabId": tab_id, "url": page.url})

    async def _action(self, request: Request) -> Response:
        body = await self._body(request)
        user = str(body.get("userId") or "")
        if not self._log(request, user):
            return JSONResponse({"error": "Unauthorized"}, 401)
        tab = self._tab(request, user)
        if tab is None:
            return JSONResponse({"error": "Tab not found"}, 404)
        action = request.url.path.rsplit("/", 1)[1]
        page = tab.page
        try:
            if action == "evaluate":
                result = await page.evaluate("e => (0, eval)(e)", str(body.get("expression") or ""))
                return JSONResponse({"ok": True, "result": result})
            if action == "navigate":
                await page.goto(str(body.get("url") or ""), wait_until="domcontentloaded")
            elif action in ("click", "type"):
                role, name, nth = tab.refs[str(body.get("ref"))]
                element = page.get_by_role(role, name=name, exact=True).nth(nth) if name else \
                    page.get_by_role(role).nth(nth)
                if action == "click":
                    await element.click(timeout=10_000)
                else:
                    await element.fill(str(body.get("text") or ""), timeout=10_000)
            elif action == "press":
                await page.keyboard.press(str(body.get("key")))
            elif action == "scroll":
                amount = int(body.get("amount") or 500)
                await page.mouse.wheel(0, amount if body.get("direction") != "up" else -amount)
            elif action == "back":
                await page.go_back(wait_until="domcontentloaded")
            elif action == "wait":
                await page.wait_for_load_state("domcontentloaded")
        except KeyError:
            return JSONResponse({"error": f"Unknown ref: {body.get('ref')}"}, 400)
        except Exception as exc:  # what the real server answers for a browser failure
            return JSONResponse({"error": str(exc).splitlines()[0][:300]}, 500)
        return JSONResponse({"ok": True, "url": page.url})

    async def _snapshot(self, request: Request) -> Response:
        user = request.query_params.get("userId", "")
        if not self._log(request, user):
            return JSONResponse({"error": "Unauthorized"}, 401)
        tab = self._tab(request, user)
        if tab is None:
            return JSONResponse({"error": "Tab not found"}, 404)
        offset = int(request.query_params.get("offset") or 0)
        if offset == 0 or not tab.last:
            raw = await tab.page.locator("body").aria_snapshot()
            tab.last = self._annotated(tab, raw)
        text = tab.last[offset:offset + self.window]
        more = offset + self.window < len(tab.last)
        return JSONResponse({"url": tab.page.url, "snapshot": text, "refsCount": len(tab.refs),
                             "truncated": more, "totalChars": len(tab.last), "hasMore": more,
                             "nextOffset": offset + self.window if more else None})

    def _annotated(self, tab: _Tab, raw: str) -> str:
        """Refs e1, e2 … numbered afresh, keyed by role, name and position among equals."""
        tab.refs.clear()
        seen: dict[tuple[str, str], int] = {}
        lines = raw.splitlines()
        for i, line in enumerate(lines):
            match = _LINE.match(line)
            if match is None or match.group(2) not in INTERACTIVE:
                continue
            role, name = match.group(2), (match.group(3) or "").replace('\\"', '"')
            nth = seen[(role, name)] = seen.get((role, name), -1) + 1
            ref = f"e{len(tab.refs) + 1}"
            tab.refs[ref] = (role, name, nth)
            lines[i] = f"{line[:match.end()]} [{ref}]{line[match.end():]}"
        return "\n".join(lines)

    async def _screenshot(self, request: Request) -> Response:
        user = request.query_params.get("userId", "")
        if not self._log(request, user):
            return JSONResponse({"error": "Unauthorized"}, 401)
        tab = self._tab(request, user)
        if tab is None:
            return JSONResponse({"error": "Tab not found"}, 404)
        full = request.query_params.get("fullPage") == "true"
        return Response(await tab.page.screenshot(type="png", full_page=full), media_type="image/png")

    async def _close_tab(self, request: Request) -> Response:
        body = await self._body(request)
        user = str(body.get("userId") or request.query_params.get("userId") or "")
        if not self._log(request, user):
            return JSONResponse({"error": "Unauthorized"}, 401)
        tab = self._tab(request, user)
        if tab is not None:
            del self.tabs[request.path_params["tab_id"]]
            await tab.page.close()
        return JSONResponse({"ok": True})

    async def _close_user(self, request: Request) -> Response:
        user = request.path_params["user"]
        if not self._log(request, user):
            return JSONResponse({"error": "Unauthorized"}, 401)
        for tab_id in [t for t, tab in self.tabs.items() if tab.user == user]:
            del self.tabs[tab_id]
        context = self.contexts.pop(user, None)
        if context is not None:
            await context.close()
        return JSONResponse({"ok": True})

    def open_pages(self, user: str) -> list[str]:
        """The addresses of the user's open tabs (read from the test's thread: the URLs only)."""
        return [tab.page.url for tab in self.tabs.values() if tab.user == user]
