"""One app server + one headless Chromium page for a test module (the desktop web front end, end to end).

The scripted model answers by the last message: ``call NAME {json}`` makes it call tool NAME with those
arguments; a tool result makes it answer ``TOOL RESULT: <result>``; anything else is echoed back upper-case,
streamed in small pieces. The server runs in this process (its tips clock is a :class:`FakeClock`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Reply, ScriptedModelServer, call, text


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def script(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return text("TOOL RESULT: " + str(last["content"]))
    said = str(last["content"])
    if said.startswith("call "):
        name, _, args = said[5:].partition(" ")
        return call(name, json.loads(args or "{}"))
    return Reply(content=said.upper(), chunk_delay=0.02)


def need_browser() -> None:
    import importlib.util

    missing = [what for what, ok in (("chromium", shutil.which("chromium") is not None),
                                     ("playwright", importlib.util.find_spec("playwright") is not None)) if not ok]
    if missing:
        reason = f"the desktop app tests need {' and '.join(missing)}"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI is set: the CI script installs them)")
        pytest.skip(reason)


@dataclass
class Desktop:
    page: Any
    model: ScriptedModelServer
    clock: FakeClock
    home: Path
    url: str
    shots: Path
    browser: Any
    errors: list[str] = field(default_factory=list)

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path))
        assert path.stat().st_size > 1000
        return path

    def new_session(self) -> None:
        before = self.page.evaluate("hermesApp.state.current")
        self.page.click('[data-tour="new-session"]')
        self.page.wait_for_function("(was) => hermesApp.state.current && hermesApp.state.current !== was", arg=before)

    def say(self, message: str, timeout: float = 20_000, *, typed: bool = True) -> str:
        """Send ``message`` in the current session (typed into the composer, or ``typed=False``: sent through
        the page's API connection, whatever screen is shown) and wait for its turn to end; the last
        assistant text."""
        page = self.page
        turns = page.evaluate("hermesApp.state.turns || 0")
        if typed:
            page.fill('[data-tour="composer-input"]', message)
            page.press('[data-tour="composer-input"]', "Enter")
        else:
            page.evaluate("(text) => hermesApp.call('message.send', {session: hermesApp.state.current, text})",
                          message)
        page.wait_for_function("(n) => (hermesApp.state.turns || 0) > n", arg=turns, timeout=timeout)
        return str(page.evaluate("""() => { const v = document.querySelector('.conversation:not([hidden])');
            const all = v.querySelectorAll('.message[data-role="assistant"]');
            return all.length ? all[all.length - 1].textContent : ''; }"""))

    def tool(self, name: str, args: dict[str, Any], timeout: float = 20_000, *, typed: bool = True) -> dict[str, Any]:
        """Have the model call tool ``name``; the result it got back (parsed)."""
        self.say(f"call {name} {json.dumps(args)}", timeout, typed=typed)
        result = self.page.evaluate("""(name) => { const v = document.querySelector('.conversation:not([hidden])');
            const calls = v.querySelectorAll('[data-tour-item="tool-call"][data-name="' + name + '"]');
            return calls.length ? calls[calls.length - 1].querySelector('.result').textContent : null; }""", name)
        assert result is not None, f"no {name} call shown"
        parsed = json.loads(result)
        assert isinstance(parsed, dict)
        return parsed

    def tools_offered(self) -> list[str]:
        """The tool names the model was offered in its latest request."""
        body = self.model.requests[-1]
        return [t["function"]["name"] for t in body.get("tools", [])]


@pytest.fixture(scope="module")
def desktop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desktop]:
    need_browser()
    from playwright.sync_api import sync_playwright

    from hermes.config.settings import Settings
    from hermes.surfaces.appserver.auth import Gate
    from hermes.surfaces.appserver.rpc import AppApi
    from hermes.surfaces.appserver.server import AppServer

    home = tmp_path_factory.mktemp("desktop-home")
    shots = tmp_path_factory.mktemp("desktop-screenshots")
    clock = FakeClock()
    with pytest.MonkeyPatch.context() as mp, ScriptedModelServer(script) as model, sync_playwright() as playwright:
        mp.setenv("HERMES_HOME", str(home))
        for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL", "OPENAI_MODEL"):
            mp.delenv(name, raising=False)
        (home / "config.yaml").write_text(
            f"model:\n  base_url: {model.url}\n  name: m\n  max_retries: 0\n  stream: true\n")
        server = AppServer(AppApi(Settings.load(), clock=clock), Gate("127.0.0.1", None), "127.0.0.1", 0)
        server.start()
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            url = f"http://127.0.0.1:{server.port}/"
            harness = Desktop(page, model, clock, home, url, shots, browser)
            page.on("pageerror", lambda exc: harness.errors.append(str(exc)))
            page.goto(url)
            page.wait_for_function("document.documentElement.dataset.ready === 'true'")
            yield harness
            assert harness.errors == [], harness.errors
        finally:
            browser.close()
            server.stop()


class HeldAnswers:
    """A second page of the app whose WebSocket runs through Playwright's ``route_web_socket``: while
    :attr:`holding`, the app server's answers to requests that ``hold(request)`` picks are kept back
    (:attr:`held`) until :meth:`release` — an answer that comes back late, as concurrent answers can."""

    def __init__(self, desktop: Desktop, hold: Callable[[dict[str, Any]], bool], *, holding: bool = False) -> None:
        self.hold = hold
        self.holding = holding  # True: from the page's very first requests on
        self.held: list[str] = []
        self.errors: list[str] = []
        self._routes: list[Any] = []
        self.page = desktop.browser.new_page(viewport={"width": 1280, "height": 860})
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.route_web_socket("**/rpc", self._route)
        self.page.goto(desktop.url)
        self.page.wait_for_function("document.documentElement.dataset.ready === 'true'")

    def _route(self, ws: Any) -> None:
        server = ws.connect_to_server()
        picked: set[int] = set()

        def to_server(message: str | bytes) -> None:
            request = json.loads(message)
            if self.holding and self.hold(request):
                picked.add(request["id"])
            server.send(message)

        def to_page(message: str | bytes) -> None:
            if json.loads(message).get("id") in picked:
                self.held.append(str(message))
            else:
                ws.send(message)

        ws.on_message(to_server)
        server.on_message(to_page)
        self._routes.append(ws)

    def wait_held(self, count: int = 1) -> None:
        for _ in range(400):
            if len(self.held) >= count:
                return
            self.page.wait_for_timeout(25)
        raise AssertionError(f"the page asked for {len(self.held)} of the {count} answers to hold")

    def release(self) -> None:
        """Send the held answers to the page; once this returns, the page has handled them (answers arrive
        in order, and a request sent after them has been answered)."""
        self.holding = False
        for message in self.held:
            self._routes[-1].send(message)
        self.held.clear()
        self.page.evaluate("() => hermesApp.call('sessions.list', {limit: 1})")

    def close(self) -> None:
        self.page.close()
        assert self.errors == []
