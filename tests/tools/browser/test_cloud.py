"""Cloud browsers: the browser tools on a Browser Use session created through our own Tool Gateway
(``browser.cloud_provider: nous``; the gateway's ``browser-use`` relay with its local Chromium pool, over
real HTTP and WebSockets), Browser Use directly against the v3 fake, and Browserbase against its fake
(Camofox has its own module, test_camofox.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.cdp import wait_until
from fakes.vendors import ServerThread
from fakes.vendors.browser_use import FakeBrowserUse
from fakes.vendors.harness import GatewayHarness
from hermes.config.paths import HermesPaths
from hermes.config.settings import Settings
from hermes.tools.session import SessionContext, ToolSession
from hermes.tools.toolsets import BROWSER_CORE
from tools.browser.pages import PageServer, standard_routes
from tools.browser.support import CHROMIUM, call, close, need_browser

BB_KEY = "bb-user-key"

pytestmark = pytest.mark.browser
RUN_AS = {"browser-use.run_as": "nobody"} if os.geteuid() == 0 else {}
CLOUD_ENV = ("TOOL_GATEWAY_USER_TOKEN", "BROWSER_USE_GATEWAY_URL", "BROWSER_USE_API_KEY", "TOOL_GATEWAY_DOMAIN",
             "TOOL_GATEWAY_SCHEME", "TOOL_GATEWAY_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    need_browser()
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_cloud_browser"), **{
        "browser-use.backend": "local", "browser-use.chromium": CHROMIUM, "browser-use.max_sessions": 2, **RUN_AS,
        "browser-use.idle_timeout": 120, "browser-use.allow_loopback": True})
    with harness:
        harness.user("alice", "paid")
        yield harness


@pytest.fixture
def home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in CLOUD_ENV:
        monkeypatch.delenv(name, raising=False)
    import hermes.tools.browser.tool  # noqa: F401 - registers the core tools

    return hermes_home


def session_in(home: Path, config: dict[str, object]) -> ToolSession:
    from hermes.tools.registry import registry

    (home / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
    registry.invalidate_checks()
    context = SessionContext.from_settings(Settings.load(HermesPaths(home)), task_id=f"cloud-{os.urandom(4).hex()}")
    return ToolSession(registry, BROWSER_CORE, context)


def test_the_tools_drive_a_browser_of_our_own_gateway_and_stop_it_at_the_end(
        home: Path, gw: GatewayHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    pages = PageServer(standard_routes()).start()
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", gw.token("alice"))
    monkeypatch.setenv("BROWSER_USE_GATEWAY_URL", gw.relay_url("browser-use"))
    session = session_in(home, {"browser": {"cloud_provider": "nous", "allow_private_urls": True}})
    pool = gw.app.state.relays["browser-use"].pool
    try:
        agent = call(session, "browser_console", expression="navigator.userAgent")
        assert "HeadlessChrome" in agent.get("result", ""), agent
        (live,) = list(pool.sessions.values())
        # a cloud browser never opens private or loopback addresses, whatever allow_private_urls says
        refused = call(session, "browser_navigate", url=pages.url("/form"))
        assert "refused to open" in refused["error"], refused
        assert pages.hits == []
    finally:
        close(session)
        pages.stop()
    assert wait_until(lambda: live.id not in pool.sessions, 15), "the gateway session was not stopped"
    user = gw.side.accounts.get_user("alice")
    rows = gw.usage_rows("SELECT units FROM usage WHERE user_id = ? AND units > 0", (user.id,))
    assert [int(r[0]) for r in rows] == [1]  # one metered session


def test_browser_use_directly_with_the_users_key(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeBrowserUse(key="bu-user-key")
    with ServerThread(fake.app) as server:
        monkeypatch.setenv("BROWSER_USE_API_KEY", "bu-user-key")
        session = session_in(home, {"browser": {"cloud_provider": "browser-use",
                                                "browser-use": {"base_url": server.url}}})
        try:
            error = call(session, "browser_snapshot")["error"]
        finally:
            close(session)
    # the fake's cdpUrl (wss://cdp.browser-use.invalid/…) cannot be reached: the session is stopped again
    assert "did not answer over CDP" in error and "bu-user-key" not in error
    (created,) = fake.sessions.values()
    assert created["status"] == "stopped"
    assert [r["method"] for r in fake.requests] == ["POST", "PATCH"]


class FakeBrowserbase:
    """The Browserbase sessions API (``/v1/sessions``, ``X-BB-API-Key``): a created session's
    ``connectUrl`` is the DevTools WebSocket of a real Chromium on 127.0.0.1; ``requests`` logs calls."""

    def __init__(self, connect_url: str) -> None:
        from starlette.applications import Starlette
        from starlette.routing import Route

        self.connect_url = connect_url
        self.requests: list[tuple[str, str, dict[str, object]]] = []
        self.app = Starlette(routes=[Route("/v1/sessions", self._create, methods=["POST"]),
                                     Route("/v1/sessions/{ident}", self._update, methods=["POST"])])

    async def _record(self, request: object) -> dict[str, object] | None:
        from starlette.requests import Request

        assert isinstance(request, Request)
        body = await request.json()
        self.requests.append((request.method, request.url.path, body))
        return body if request.headers.get("x-bb-api-key") == BB_KEY else None

    async def _create(self, request: object) -> object:
        from starlette.responses import JSONResponse

        body = await self._record(request)
        if body is None:
            return JSONResponse({"error": "unauthorized"}, 401)
        return JSONResponse({"id": "bb-session-1", "status": "RUNNING", "projectId": body.get("projectId"),
                             "connectUrl": self.connect_url}, 201)

    async def _update(self, request: object) -> object:
        from starlette.responses import JSONResponse

        body = await self._record(request)
        return JSONResponse({"id": "bb-session-1", "status": "COMPLETED"} if body else {"error": "no"},
                            200 if body else 401)


def test_browserbase_sessions_are_created_driven_and_released(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    import socket
    import urllib.request

    from hermes.tools.browser.connect import connect, stop_started

    need_browser()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
    connect({}, "bb-start", endpoint, home=tmp_path, chromium=CHROMIUM)  # a debuggable Chromium to stand in
    try:
        with urllib.request.urlopen(f"{endpoint}/json/version", timeout=5) as reply:
            socket_url = json.loads(reply.read())["webSocketDebuggerUrl"]
        fake = FakeBrowserbase(socket_url)
        with ServerThread(fake.app) as server:
            monkeypatch.setenv("BROWSERBASE_API_KEY", BB_KEY)
            monkeypatch.setenv("BROWSERBASE_PROJECT_ID", "proj-7")
            session = session_in(home, {"browser": {"cloud_provider": "browserbase",
                                                    "browserbase": {"base_url": f"{server.url}/v1"}}})
            try:
                agent = call(session, "browser_console", expression="navigator.userAgent")
            finally:
                close(session)
    finally:
        stop_started()
    assert "HeadlessChrome" in agent.get("result", ""), agent
    assert fake.requests == [("POST", "/v1/sessions", {"projectId": "proj-7"}),
                             ("POST", "/v1/sessions/bb-session-1", {"projectId": "proj-7",
                                                                   "status": "REQUEST_RELEASE"})]
