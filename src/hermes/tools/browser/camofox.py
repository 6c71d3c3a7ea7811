"""Camofox: the browser tools on a Camofox server (``CAMOFOX_URL``), a Firefox with its own REST API.

Camofox (github.com/jo-inc/camofox-browser) is not reached over CDP: every step is an HTTP call on its
tab API (``POST /tabs`` ``{userId, sessionKey}`` → ``{tabId}``; ``POST /tabs/{id}/navigate|click|type|
press|scroll|back|evaluate``; ``GET /tabs/{id}/snapshot`` and ``/screenshot``; ``DELETE /tabs/{id}`` and
``DELETE /sessions/{userId}``). With ``CAMOFOX_ACCESS_KEY`` (or ``CAMOFOX_API_KEY``) set, every call carries
``Authorization: Bearer <key>``.

:class:`CamofoxPage` gives the tools the few page operations they use (address, title, navigation,
snapshot, element lookup by ref, keys, wheel, screenshot, script), so snapshots, refs, budgets, paging,
untrusted marking and "what changed" work exactly as on Chromium. What differs:

* **refs** — Camofox numbers the interactive elements of each snapshot afresh (``[e1]`` after the role
  and name of a line, keyed by role, name and position among equals). The page keeps one id per such key,
  so an element keeps its ref from one snapshot to the next, and a ref whose element is gone is refused
  as stale, like on Chromium;
* **navigation safety** — the server's browser is not ours to fence: every address is judged before it is
  asked for, and every address a step *ends up on* (a redirect, a click, a script) is judged after it; a
  refused one is left for ``about:blank`` at once and reported. Subresources are the server's business;
* **not offered** — console messages (Camofox keeps none), JavaScript dialogs, downloads, and the vault
  (a secret would have to travel to the server inside a script: the vault fills only browsers hermes
  drives itself).

Each task gets its own Camofox user (``hermes-<random>``), so tasks never share cookies, and its user is
closed with the task.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError

if TYPE_CHECKING:
    import httpx

    from hermes.tools.browser.cloud import CloudAccess

#: the most snapshot text gathered from the server's windows (the tools' own budget pages it after)
SNAPSHOT_MAX_CHARS = 4_000_000
_WINDOWS_MAX = 200
_REF_LINE = re.compile(r'^(\s*- )([A-Za-z]+)( "(?:[^"\\]|\\.)*")? \[(e\d+)\]')
#: a script written as a function (Playwright calls those; Camofox evaluates what it gets as an expression)
_FUNCTION = re.compile(r"^\s*(?:async\s+)?(?:function\b|\([^()]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)")
VAULT_REFUSED = ("the vault fills logins only in a browser hermes drives itself (local Chromium or a CDP endpoint); "
                 "on Camofox a secret would travel to the server inside a script, so nothing was filled")


class _Wheel:
    def __init__(self, page: CamofoxPage) -> None:
        self._page = page

    async def wheel(self, dx: float, dy: float) -> None:
        await self._page.call("POST", "scroll", {"direction": "down" if dy >= 0 else "up", "amount": int(abs(dy))})


class _Keys:
    def __init__(self, page: CamofoxPage) -> None:
        self._page = page

    async def press(self, key: str) -> None:
        await self._page.landed(await self._page.call("POST", "press", {"key": key}))


class CamofoxLocator:
    """The element behind one of the page's ids (its Camofox ref in the latest snapshot)."""

    def __init__(self, page: CamofoxPage, ident: str) -> None:
        self._page = page
        self._ident = ident

    def _ref(self) -> str:
        ref = self._page.refs.get(self._ident)
        if ref is None:
            raise ToolError("the element is no longer on the page; take a new snapshot")
        return ref

    async def count(self) -> int:
        return 1 if self._ident in self._page.refs else 0

    async def click(self) -> None:
        await self._page.landed(await self._page.call("POST", "click", {"ref": self._ref()}))

    async def fill(self, text: str) -> None:
        await self._page.call("POST", "type", {"ref": self._ref(), "text": text, "mode": "fill"})

    async def press(self, key: str) -> None:
        await self._page.keyboard.press(key)


class CamofoxPage:
    """One Camofox tab, driven over HTTP (see the module docstring). ``judge(url)`` is told of every address
    a step ends on; ``on_document()`` of every change of address."""

    def __init__(self, access: CloudAccess, task_id: str, timeout: float) -> None:
        import httpx

        headers = {"Content-Type": "application/json"}
        if access.secret:
            headers["Authorization"] = f"Bearer {access.secret}"
        self.base = access.base.rstrip("/")
        self.via = access.via
        self.user = f"hermes-{secrets.token_hex(8)}"
        self.session_key = task_id
        self.http: httpx.AsyncClient = httpx.AsyncClient(timeout=timeout + 5, trust_env=False, headers=headers)
        self.tab_id = ""
        self.url = "about:blank"
        self.refs: dict[str, str] = {}  # our id → Camofox's ref in the latest snapshot
        self._ids: dict[str, str] = {}  # "role:name:nth" → our id
        self._closed = False
        self.judge: Callable[[str], Awaitable[None]] | None = None
        self.on_document: Callable[[], None] | None = None
        self.mouse = _Wheel(self)
        self.keyboard = _Keys(self)

    # -- the HTTP side --------------------------------------------------------------------------------
    async def open(self) -> None:
        body = await self._request("POST", "/tabs", {"userId": self.user, "sessionKey": self.session_key})
        tab_id = body.get("tabId")
        if not isinstance(tab_id, str) or not tab_id:
            raise ToolError(f"the Camofox server ({self.via}) answered a new tab without a tabId")
        self.tab_id = tab_id
        self.url = str(body.get("url") or "about:blank")

    async def call(self, method: str, action: str, body: dict[str, Any] | None = None,
                   params: dict[str, str] | None = None) -> dict[str, Any]:
        """One call on this tab's API (``/tabs/{id}/{action}``)."""
        if method == "GET":
            return await self._request("GET", f"/tabs/{self.tab_id}/{action}", None,
                                       {"userId": self.user, **(params or {})})
        return await self._request(method, f"/tabs/{self.tab_id}/{action}", {"userId": self.user, **(body or {})})

    async def _request(self, method: str, path: str, body: dict[str, Any] | None,
                       params: dict[str, str] | None = None) -> dict[str, Any]:
        reply = await self._send(method, path, body, params)
        try:
            answer = reply.json()
        except ValueError:
            answer = {}
        answer = answer if isinstance(answer, dict) else {}
        if reply.status_code == 404 and path.startswith("/tabs/"):
            self._closed = True  # Camofox closed the tab (its own idle timeout): the next call opens another
        if reply.status_code >= 400:
            said = str(answer.get("error") or reply.text)[:300]
            raise ToolError(f"the Camofox server ({self.via}) answered HTTP {reply.status_code}: {said}")
        return answer

    async def _send(self, method: str, path: str, body: dict[str, Any] | None,
                    params: dict[str, str] | None = None) -> httpx.Response:
        import httpx

        try:
            return await self.http.request(method, self.base + path, json=body, params=params)
        except httpx.HTTPError as exc:
            raise ToolError(f"the Camofox server ({self.via}) did not answer: {type(exc).__name__}") from None

    async def landed(self, answer: dict[str, Any]) -> None:
        """Note the address a step ended on (judged, and a new document when it changed)."""
        url = answer.get("url")
        if isinstance(url, str) and url:
            await self._moved(url)

    async def _moved(self, url: str) -> None:
        if url.split("#", 1)[0] != self.url.split("#", 1)[0] and self.on_document is not None:
            self.on_document()
        self.url = url
        if self.judge is not None and url != "about:blank":
            await self.judge(url)

    # -- what the tools call (the few page operations of Playwright's they use) ----------------------------------
    def is_closed(self) -> bool:
        return self._closed

    @property
    def frames(self) -> list[CamofoxPage]:
        return [self]

    @property
    def main_frame(self) -> CamofoxPage:
        return self

    async def goto(self, url: str, wait_until: str = "load", timeout: float = 0) -> None:
        if url == "about:blank":
            await self.blank()
            return
        await self.landed(await self.call("POST", "navigate", {"url": url}))

    async def blank(self) -> None:
        """Leave the current page for a blank one (not judged: nothing is opened): its tab is closed and a
        fresh one of the same user takes its place, so nothing of the page lives on."""
        await self._request("DELETE", f"/tabs/{self.tab_id}", {"userId": self.user})
        await self.open()
        if self.on_document is not None:
            self.on_document()
        self.url = "about:blank"
        self.refs.clear()

    async def go_back(self, wait_until: str = "load") -> object | None:
        before = self.url
        await self.landed(await self.call("POST", "back"))
        return None if self.url == before else True

    async def title(self) -> str:
        return str(await self.evaluate("document.title") or "")

    async def evaluate(self, expression: str, arg: object = None) -> Any:
        if arg is not None:
            raise ToolError("Camofox evaluates an expression only; a script with arguments cannot run there")
        text = f"({expression})()" if _FUNCTION.match(expression) else expression
        answer = await self.call("POST", "evaluate", {"expression": text})
        return answer.get("result")

    async def wait_for_load_state(self, state: str = "load", timeout: float = 0) -> None:
        await self.call("POST", "wait", {"timeout": int(timeout or 10_000), "waitForNetwork": False})

    async def screenshot(self, path: str, full_page: bool = False) -> None:
        reply = await self._send("GET", f"/tabs/{self.tab_id}/screenshot",
                                 None, {"userId": self.user, "fullPage": "true" if full_page else "false"})
        if reply.status_code >= 400 or not reply.content.startswith(b"\x89PNG"):
            raise ToolError(f"the Camofox server ({self.via}) gave no screenshot (HTTP {reply.status_code})")
        Path(path).write_bytes(reply.content)

    def locator(self, selector: str) -> CamofoxLocator:
        return CamofoxLocator(self, selector.removeprefix("aria-ref="))

    async def aria_snapshot(self, mode: str = "ai", timeout: float = 0) -> str:
        """The page's snapshot in the shape the tools read (``[ref=eN]`` on each interactive line, our ids)."""
        answer = await self.call("GET", "snapshot")
        parts = [str(answer.get("snapshot") or "")]
        size = len(parts[0])
        for _ in range(_WINDOWS_MAX):  # a large page comes in windows
            offset = answer.get("nextOffset")
            if not answer.get("hasMore") or not isinstance(offset, int) or size >= SNAPSHOT_MAX_CHARS:
                break
            answer = await self.call("GET", "snapshot", params={"offset": str(offset)})
            parts.append(str(answer.get("snapshot") or ""))
            size += len(parts[-1])
        url = answer.get("url")
        if isinstance(url, str) and url:
            await self._moved(url)
        return self._with_ids("".join(parts)[:SNAPSHOT_MAX_CHARS])

    def _with_ids(self, raw: str) -> str:
        self.refs.clear()
        seen: dict[str, int] = {}
        lines = raw.splitlines()
        for i, line in enumerate(lines):
            match = _REF_LINE.match(line)
            if match is None:
                continue
            prefix, role, name, ref = match.groups()
            key = f"{role}:{json.dumps(name or '')}"
            nth = seen[key] = seen.get(key, -1) + 1
            ident = self._ids.setdefault(f"{key}:{nth}", f"e{len(self._ids) + 1}")
            self.refs[ident] = ref
            lines[i] = f"{prefix}{role}{name or ''} [ref={ident}]{line[match.end():]}"
        return "\n".join(lines)

    async def close(self) -> None:
        """Close the tab and the task's Camofox user (failures are left to the server's own timeouts)."""
        if self._closed and not self.tab_id:
            return
        self._closed = True
        for method, path in (("DELETE", f"/tabs/{self.tab_id}"), ("DELETE", f"/sessions/{self.user}")):
            try:
                await self._send(method, path, {"userId": self.user})
            except ToolError:
                break
        await self.http.aclose()


class CamofoxContext:
    """What a tab's ``context`` is on Camofox: only closing is asked of it (the page closes itself)."""

    def __init__(self, page: CamofoxPage) -> None:
        self.page = page

    async def close(self) -> None:
        await self.page.close()


def is_camofox(page: object) -> bool:
    return isinstance(page, CamofoxPage)
