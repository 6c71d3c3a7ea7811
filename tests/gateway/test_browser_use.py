"""The browser-use relay over real HTTP and WebSockets: the gateway (create_app under uvicorn) with its
``local`` backend (real headless Chromium processes) and its ``vendor`` backend (a Browser Use fake).

Local: a session is created with the upstream client's request shape, driven over the returned
``cdpUrl`` with real CDP commands (a loopback page's title is read back), refused to other users and
wrong capability URLs, screened for host access, limited per pool and per user, reaped when idle,
and killed on release and on shutdown. Vendor: the operator's key reaches the fake, the user's token
does not, the vendor's ``cdpUrl`` comes back unchanged, and only the creator may stop a session.
The Chromium tests skip when /usr/bin/chromium is missing, except under CI (they fail there).
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from fakes.cdp import cdp_call as cdp
from fakes.cdp import live_group, wait_until
from fakes.vendors import ServerThread
from fakes.vendors.browser_use import FakeBrowserUse
from fakes.vendors.harness import GatewayHarness

CHROMIUM = "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK) and not os.environ.get("CI"),
                                    reason="needs /usr/bin/chromium (CI installs it)")
OPERATOR_KEY = "bu-operator-secret"
TITLE = "Hermes gateway test page"
CREATE = {"timeout": 5, "proxyCountryCode": "us"}
RUN_AS = {"browser-use.run_as": "nobody"} if os.geteuid() == 0 else {}  # as root, Chromium runs as nobody


def upstream_headers(token: str, key: str | None = "browser-use-session-create:0123456789abcdef") -> dict[str, str]:
    headers = {"X-Browser-Use-API-Key": token, "Content-Type": "application/json"}
    if key:
        headers["X-Idempotency-Key"] = key
    return headers


def create(gw: GatewayHarness, token: str, key: str | None = None, body: Any = None) -> httpx.Response:
    return httpx.post(f"{gw.relay_url('browser-use')}/browsers", json=CREATE if body is None else body,
                      headers=upstream_headers(token, key), timeout=30)


def stop(gw: GatewayHarness, token: str, session_id: str, body: Any = None) -> httpx.Response:
    return httpx.patch(f"{gw.relay_url('browser-use')}/browsers/{session_id}", json=body or {"action": "stop"},
                       headers=upstream_headers(token, None), timeout=30)


def units(gw: GatewayHarness, name: str, operation: str) -> list[tuple[int, int]]:
    user = gw.side.accounts.get_user(name)
    rows = gw.usage_rows("SELECT units, status FROM usage WHERE user_id = ? AND operation = ? ORDER BY id",
                                (user.id, operation))
    return [(int(r[0]), int(r[1])) for r in rows]


def pool_session(gw: GatewayHarness, session_id: str) -> Any:
    return gw.app.state.relays["browser-use"].pool.sessions.get(session_id)


async def page_title(url: str, page: str) -> str:
    async with connect(url, proxy=None, compression=None) as ws:
        target = await cdp(ws, 1, "Target.createTarget", {"url": page})
        attached = await cdp(ws, 2, "Target.attachToTarget", {"targetId": target["result"]["targetId"],
                                                              "flatten": True})
        session = attached["result"]["sessionId"]
        for ident in range(3, 200):
            expression = "document.readyState + '|' + document.title"
            reply = await cdp(ws, ident, "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
            state, _, title = reply["result"]["result"]["value"].partition("|")
            if state == "complete" and title:
                return title
            await asyncio.sleep(0.05)
    raise AssertionError("the page never finished loading")


async def refused(url: str) -> list[str]:
    async with connect(url, proxy=None, compression=None) as ws:
        replies = [await cdp(ws, 1, "Target.createTarget", {"url": "file:///etc/passwd"}),
                   await cdp(ws, 2, "Target.createTarget", {"url": " FILE:///etc/hostname"}),
                   await cdp(ws, 3, "DOM.setFileInputFiles", {"files": ["/etc/passwd"], "nodeId": 1}),
                   await cdp(ws, 4, "Target.exposeDevToolsProtocol", {"targetId": "x"})]
        version = await cdp(ws, 5, "Browser.getVersion")
    assert "HeadlessChrome" in version["result"]["userAgent"] or "Chrome" in version["result"]["product"]
    return [r["error"]["message"] for r in replies]


async def navigation_error(url: str, target: str) -> str:
    """Chromium's ``errorText`` for opening ``target`` in a new tab of the session at ``url`` ('' if it loaded)."""
    async with connect(url, proxy=None, compression=None) as ws:
        tab = await cdp(ws, 1, "Target.createTarget", {"url": "about:blank"})
        attached = await cdp(ws, 2, "Target.attachToTarget", {"targetId": tab["result"]["targetId"], "flatten": True})
        reply = await cdp(ws, 3, "Page.navigate", {"url": target}, attached["result"]["sessionId"])
    return str(reply["result"].get("errorText", ""))


def ws_status(url: str) -> int:
    async def attempt() -> int:
        try:
            async with connect(url, proxy=None, compression=None, open_timeout=10):
                return 101
        except InvalidStatus as exc:
            return exc.response.status_code
    return asyncio.run(attempt())


@pytest.fixture(scope="module")
def page() -> Iterator[str]:
    async def home(request: Any) -> HTMLResponse:
        return HTMLResponse(f"<!doctype html><html><head><title>{TITLE}</title></head><body>hi</body></html>")

    with ServerThread(Starlette(routes=[Route("/page", home)])) as server:
        yield f"{server.url}/page"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_browser"), **{
        "browser-use.backend": "local", "browser-use.chromium": CHROMIUM, "browser-use.max_sessions": 2, **RUN_AS,
        "browser-use.max_sessions_per_user": 1, "browser-use.idle_timeout": 120, "browser-use.allow_loopback": True})
    with harness:
        for name, plan in (("alice", "paid"), ("bob", "paid"), ("carol", "paid"), ("fred", "free"), ("nina", "none")):
            harness.user(name, plan)
        yield harness


@needs_chromium
def test_local_session_is_driven_over_the_gateway_and_killed_on_release(gw: GatewayHarness, page: str) -> None:
    token = gw.token("alice")
    resp = create(gw, token, "browser-use-session-create:aaaa")
    assert resp.status_code == 201, resp.text
    data = resp.json()
    session_id, url = data["id"], data["cdpUrl"]
    assert data["status"] == "active" and resp.headers["x-external-call-id"] == session_id
    assert url.startswith(f"ws://127.0.0.1:{gw.server.port}/relay/browser-use/cdp/{session_id}?token=")
    again = create(gw, token, "browser-use-session-create:aaaa")  # the client's retry: same session, not re-metered
    assert again.status_code == 201 and again.json()["cdpUrl"] == url
    assert units(gw, "alice", "create") == [(1, 201), (0, 201)]
    pid = pool_session(gw, session_id).pid
    directory = pool_session(gw, session_id).directory

    assert asyncio.run(page_title(url, page)) == TITLE
    assert live_group(pid), "closing the client's socket must not end the session"
    assert asyncio.run(page_title(url, page)) == TITLE  # a second connection drives the same browser
    messages = asyncio.run(refused(url))
    assert all("refused by the gateway" in m for m in messages), messages

    wrong = url.split("?token=")[0] + "?token=" + "A" * 43
    assert ws_status(wrong) == 404 and ws_status(url.split("?")[0]) == 404
    bob = gw.token("bob")
    assert stop(gw, bob, session_id).status_code == 404  # another user's token cannot stop (or see) it
    assert httpx.get(f"{gw.relay_url('browser-use')}/browsers/{session_id}",
                     headers=upstream_headers(bob, None)).status_code == 404
    assert live_group(pid)

    gw.side.accounts.revoke(token)  # the capability dies with the token that created the session
    assert ws_status(url) == 403

    alice2 = gw.token("alice")
    resp = stop(gw, alice2, session_id)
    assert resp.status_code == 200 and resp.json()["status"] == "stopped" and resp.json()["cdpUrl"] is None
    assert wait_until(lambda: not live_group(pid), 5), "Chromium survived its release"
    assert not directory.exists() and pool_session(gw, session_id) is None
    assert stop(gw, alice2, session_id).json()["status"] == "stopped"  # a late stop is answered, not an error
    assert units(gw, "alice", "stop")[-1] == (0, 200)


@needs_chromium
def test_release_closes_open_sockets_and_pool_limits(gw: GatewayHarness) -> None:
    alice, bob, carol = gw.token("alice"), gw.token("bob"), gw.token("carol")
    first = create(gw, alice)
    assert first.status_code == 201, first.text
    second = create(gw, alice)
    assert second.status_code == 429 and second.json()["code"] == "too_many_sessions"
    host = gw.relay_host("browser-use")  # the host-routed form: browser-use-gateway.localhost:PORT
    other = httpx.post(f"{gw.url}/browsers", json=CREATE, headers={**upstream_headers(bob), "host": host})
    assert other.status_code == 201, other.text
    assert other.json()["cdpUrl"].startswith(f"ws://{host}/cdp/{other.json()['id']}?token=")

    async def by_host() -> dict[str, Any]:
        # connect to 127.0.0.1 while the URL (and so the Host header) names the relay host
        async with connect(other.json()["cdpUrl"], host="127.0.0.1", port=gw.server.port, proxy=None) as ws:
            return await cdp(ws, 1, "Browser.getVersion")

    assert "result" in asyncio.run(by_host())
    # loopback is allowed on this gateway, but never the fence itself (the browsers open no DevTools port)
    fence = gw.app.state.relays["browser-use"].pool.fence.port
    error = asyncio.run(navigation_error(first.json()["cdpUrl"], f"http://127.0.0.1:{fence}/"))
    assert error.startswith("net::ERR_"), error
    full = create(gw, carol)
    assert full.status_code == 503 and full.json()["code"] == "browser_pool_full" and full.headers["retry-after"]
    assert units(gw, "carol", "create") == [(0, 503)]

    async def released_while_open() -> int | None:
        async with connect(first.json()["cdpUrl"], proxy=None, compression=None) as ws:
            await cdp(ws, 1, "Browser.getVersion")
            assert (await asyncio.to_thread(stop, gw, alice, first.json()["id"])).status_code == 200
            try:
                await asyncio.wait_for(ws.recv(), 10)
            except ConnectionClosed as exc:
                return exc.rcvd.code if exc.rcvd else None
        return None

    assert asyncio.run(released_while_open()) == 1001
    assert stop(gw, bob, other.json()["id"]).status_code == 200
    room = create(gw, carol)  # room again
    assert room.status_code == 201, room.text
    os.kill(pool_session(gw, room.json()["id"]).pid, signal.SIGKILL)  # a crashed browser ends its session

    def ended() -> bool:
        view = httpx.get(f"{gw.relay_url('browser-use')}/browsers/{room.json()['id']}",
                         headers=upstream_headers(carol, None)).json()
        return bool(view["status"] == "stopped")

    assert wait_until(ended, 10)


@needs_chromium
def test_fence_idle_reaping_and_shutdown(tmp_path: Path, page: str) -> None:
    harness = GatewayHarness(tmp_path, **{"browser-use.backend": "local", "browser-use.chromium": CHROMIUM,
                                          "browser-use.idle_timeout": 2, **RUN_AS})
    harness.start()
    try:
        harness.user("alice", "paid")
        token = harness.token("alice")
        idle = create(harness, token)
        assert idle.status_code == 201, idle.text
        pid = pool_session(harness, idle.json()["id"]).pid
        # by default the browser cannot open loopback (or private) addresses: the fence refuses them
        error = asyncio.run(navigation_error(idle.json()["cdpUrl"], page))
        assert error.startswith("net::ERR_"), error
        assert wait_until(lambda: not live_group(pid), 10), "an idle session was not reaped"
        view = httpx.get(f"{harness.relay_url('browser-use')}/browsers/{idle.json()['id']}",
                         headers=upstream_headers(token, None)).json()
        assert view["status"] == "stopped"
        live = create(harness, token)
        assert live.status_code == 201
        session = pool_session(harness, live.json()["id"])
        pid, directory = session.pid, session.directory
    finally:
        harness.stop()
    assert wait_until(lambda: not live_group(pid), 5) and not directory.exists()


def test_tokens_plans_and_bad_requests(gw: GatewayHarness) -> None:
    url = f"{gw.relay_url('browser-use')}/browsers"
    missing = httpx.post(url, json=CREATE)
    assert missing.status_code == 401 and missing.json()["code"] == "missing_token"
    bad = httpx.post(url, json=CREATE, headers={"X-Browser-Use-API-Key": "not-a-token"})
    assert bad.status_code == 401 and bad.json()["code"] == "invalid_token"
    fred = create(gw, gw.token("fred"))
    assert fred.status_code == 403 and fred.json()["code"] == "category_not_covered"
    nina = create(gw, gw.token("nina"))
    assert nina.status_code == 403 and nina.json()["code"] == "not_entitled"
    alice = gw.token("alice")
    for body in ({"timeout": 0}, {"timeout": "5"}, {"browserScreenWidth": 10**6}, ["x"]):
        resp = create(gw, alice, body=body)
        assert resp.status_code == 400 and resp.json()["code"] in ("invalid_request", "invalid_json"), body
    assert stop(gw, alice, "no-such-session").status_code == 404
    assert stop(gw, alice, "no-such-session", {"action": "pause"}).status_code == 400
    assert httpx.delete(f"{url}/x", headers=upstream_headers(alice, None)).status_code == 405
    assert ws_status(f"ws://127.0.0.1:{gw.server.port}/relay/browser-use/cdp/nope?token=x") == 404
    assert ws_status(f"ws://127.0.0.1:{gw.server.port}/relay/firecrawl/v2/search") == 404


@pytest.fixture(scope="module")
def vendor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeBrowserUse, GatewayHarness]]:
    fake = FakeBrowserUse(key=OPERATOR_KEY)
    with ServerThread(fake.app) as server:
        harness = GatewayHarness(tmp_path_factory.mktemp("gw_browser_vendor"), **{
            "browser-use.url": server.url, "browser-use.api_key": OPERATOR_KEY,
            "limits": {"backoff_base": 0.01, "vendor_retries": 2}})
        with harness:
            harness.user("alice", "paid")
            harness.user("bob", "paid")
            yield fake, harness


def test_vendor_backend_forwards_with_the_operator_key(vendor: tuple[FakeBrowserUse, GatewayHarness]) -> None:
    fake, gw = vendor
    token = gw.token("alice")
    key = "browser-use-session-create:feedfacefeedfacefeedfacefeedface"
    resp = create(gw, token, key)
    assert resp.status_code == 201, resp.text
    data = resp.json()
    assert data["cdpUrl"] == f"wss://cdp.browser-use.invalid/{data['id']}"  # as the vendor gave it
    assert resp.headers["x-external-call-id"] == f"call-{data['id']}"
    seen = fake.requests[-1]
    assert seen["path"] == "/browsers" and seen["headers"]["x-browser-use-api-key"] == OPERATOR_KEY
    assert seen["json"] == CREATE and token not in str(seen) and "authorization" not in seen["headers"]
    assert seen["headers"]["x-idempotency-key"].startswith("browser-use-session-create:")
    assert seen["headers"]["x-idempotency-key"] != key  # one key per user at the vendor
    posts = len(fake.paths("POST"))
    again = create(gw, token, key)
    assert again.status_code == 201 and again.json()["id"] == data["id"] and len(fake.paths("POST")) == posts
    assert units(gw, "alice", "create") == [(1, 201), (0, 201)]

    bob = gw.token("bob")
    assert stop(gw, bob, data["id"]).status_code == 404 and not fake.paths("PATCH")
    assert create(gw, bob, key).status_code == 409  # another user's key is not a way to someone's session
    got = httpx.get(f"{gw.relay_url('browser-use')}/browsers/{data['id']}", headers=upstream_headers(token, None))
    assert got.status_code == 200 and got.json()["status"] == "active"
    stopped = stop(gw, token, data["id"])
    assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"
    patch = fake.requests[-1]
    assert patch["method"] == "PATCH" and patch["json"] == {"action": "stop"}
    assert patch["headers"]["x-browser-use-api-key"] == OPERATOR_KEY and token not in str(patch)
    assert units(gw, "alice", "stop") == [(0, 200)]
    assert ws_status(f"ws://127.0.0.1:{gw.server.port}/relay/browser-use/cdp/{data['id']}?token=x") == 404


def test_vendor_failures(vendor: tuple[FakeBrowserUse, GatewayHarness]) -> None:
    fake, gw = vendor
    token = gw.token("alice")
    fake.fail_next = [503]
    assert create(gw, token).status_code == 201  # retried by the gateway
    fake.fail_next = [500] * 5
    resp = create(gw, token, "browser-use-session-create:down")
    assert resp.status_code == 502 and resp.json()["code"] == "vendor_error"
    fake.fail_next = []
    assert create(gw, token, "browser-use-session-create:down").status_code == 201  # the key was not burnt
    fake.key = "rotated"
    try:
        resp = create(gw, token)
    finally:
        fake.key = OPERATOR_KEY
    assert resp.status_code == 502 and resp.json()["code"] == "vendor_auth_failed" and OPERATOR_KEY not in resp.text


def test_vendor_create_in_progress_answers_409(vendor: tuple[FakeBrowserUse, GatewayHarness]) -> None:
    fake, gw = vendor
    token = gw.token("bob")
    key = "browser-use-session-create:slowslowslowslowslowslowslowslow"

    async def twice() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as client:
            first = asyncio.create_task(client.post(f"{gw.relay_url('browser-use')}/browsers", json=CREATE,
                                                    headers=upstream_headers(token, key)))
            await asyncio.sleep(0.3)  # the first is now waiting on the (slow) vendor
            second = await client.post(f"{gw.relay_url('browser-use')}/browsers", json=CREATE,
                                       headers=upstream_headers(token, key))
            return [await first, second]

    fake.delay = 1.0
    try:
        first, second = asyncio.run(twice())
    finally:
        fake.delay = 0.0
    assert first.status_code == 201 and second.status_code == 409
    # the upstream client keeps its key (and retries) when error.message says "already in progress"
    assert "already in progress" in second.json()["error"]["message"]
    again = create(gw, token, key)
    assert again.status_code == 201 and again.json()["id"] == first.json()["id"]
