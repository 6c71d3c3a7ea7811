"""The browser tools on a Camofox server (``CAMOFOX_URL``): its REST API, spoken by the fake in
``fakes/vendors/camofox.py`` over a real headless Chromium. Pages live on the loopback page server and are
opened by ``*.camofox.test`` names that only the fake's browser resolves; loopback addresses themselves
are refused, as for every cloud browser."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.vendors import ServerThread
from fakes.vendors.camofox import FakeCamofox
from hermes.config.paths import HermesPaths
from hermes.config.settings import Settings
from hermes.tools.session import SessionContext, ToolSession
from hermes.tools.toolsets import BROWSER_CORE, BROWSER_VAULT
from tools.browser.pages import PageServer, html, standard_routes
from tools.browser.support import CHROMIUM, call, close, need_browser, ref_named

pytestmark = pytest.mark.browser
KEY = "camofox-access-key-1"
CLEARED = ("CAMOFOX_URL", "CAMOFOX_ACCESS_KEY", "CAMOFOX_API_KEY", "BROWSER_USE_API_KEY", "BROWSERBASE_API_KEY",
           "BROWSER_CDP_URL", "TOOL_GATEWAY_USER_TOKEN")


@pytest.fixture(scope="module")
def pages() -> Iterator[PageServer]:
    server = PageServer(standard_routes()).start()
    server.routes["/to-loopback"] = (302, {"Location": server.url("/secret")}, b"")
    server.routes["/secret"] = html("<title>Secret</title><p>internal-only-text</p>")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def camofox() -> Iterator[tuple[FakeCamofox, ServerThread]]:
    need_browser()
    fake = FakeCamofox(CHROMIUM, access_key=KEY, window=8_000)
    with ServerThread(fake.app, lifespan="on") as server:
        yield fake, server


@pytest.fixture
def home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch, camofox: tuple[FakeCamofox, ServerThread]) -> Path:
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CAMOFOX_URL", camofox[1].url)
    monkeypatch.setenv("CAMOFOX_ACCESS_KEY", KEY)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    import hermes.tools.browser.tool
    import hermes.tools.browser.vault_tools  # noqa: F401 - both register their tools

    return hermes_home


def session_in(home: Path, config: dict[str, object]) -> ToolSession:
    from hermes.tools.registry import registry

    (home / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
    registry.invalidate_checks()
    context = SessionContext.from_settings(Settings.load(HermesPaths(home)), task_id=f"fox-{os.urandom(4).hex()}")
    return ToolSession(registry, (*BROWSER_CORE, *BROWSER_VAULT), context)


def named(pages: PageServer, path: str) -> str:
    return f"http://shop.camofox.test:{pages.port}{path}"


def test_the_core_tools_work_a_form_on_camofox_and_close_its_user_at_the_end(
        home: Path, pages: PageServer, camofox: tuple[FakeCamofox, ServerThread]) -> None:
    fake, _ = camofox
    session = session_in(home, {"browser": {"cloud_provider": "camofox"}})
    assert "browser_navigate" in {d["function"]["name"] for d in session.definitions()}
    try:
        opened = call(session, "browser_navigate", url=named(pages, "/form"))
        assert opened["title"] == "Form", opened
        assert "untrusted" in opened["snapshot"].lower()
        name_box = ref_named(opened["snapshot"], "textbox", "Name")
        typed = call(session, "browser_type", ref=name_box, text="Ada")
        assert "typed 3 characters" in typed["result"], typed
        again = call(session, "browser_snapshot")
        assert ref_named(again["snapshot"], "textbox", "Name") == name_box  # a ref survives Camofox's renumbering
        sent = call(session, "browser_click", ref=ref_named(again["snapshot"], "button", "Send"))
        assert "/submitted?name=Ada" in sent["changed"]["url"], sent
        stale = call(session, "browser_click", ref=name_box)
        assert "stale ref" in stale["error"], stale
        back = call(session, "browser_back")
        assert back["url"].endswith("/form"), back
        assert call(session, "browser_console", expression="1 + 2")["result"].count("3") >= 1
        assert call(session, "browser_console", expression="() => document.title")["result"].count("Form") >= 1
        assert "does not report console messages" in call(session, "browser_console")["note"]
        call(session, "browser_navigate", url=named(pages, "/images"))
        images = call(session, "browser_get_images")
        assert images["count"] == 2, images
        shot = call(session, "browser_vision", question="what is shown?")
        assert Path(shot["screenshot_path"]).read_bytes().startswith(b"\x89PNG")
        scrolled = call(session, "browser_scroll", direction="down", amount=200)
        assert "scroll_y" in scrolled, scrolled
        user = next(u for _, _, u, _ in fake.requests if u)
    finally:
        close(session)
    assert all(ok for _, _, _, ok in fake.requests), "every call carries the access key"
    assert ("DELETE", f"/sessions/{user}", user, True) in fake.requests
    assert fake.open_pages(user) == []


def test_loopback_addresses_are_refused_before_and_after_a_redirect(
        home: Path, pages: PageServer, camofox: tuple[FakeCamofox, ServerThread]) -> None:
    fake, _ = camofox
    session = session_in(home, {"browser": {"cloud_provider": "camofox"}})
    try:
        before = len(pages.hits)
        refused = call(session, "browser_navigate", url=pages.url("/secret"))
        assert "refused to open" in refused["error"] and "private or loopback" in refused["error"], refused
        assert len(pages.hits) == before, "nothing was asked of the page server"
        landed = call(session, "browser_navigate", url=named(pages, "/to-loopback"))
        assert "led to" in landed["error"] and "127.0.0.1" in landed["error"], landed
        assert "internal-only-text" not in json.dumps(landed)
        user = next(u for _, path, u, _ in reversed(fake.requests) if path == "/tabs")
        assert fake.open_pages(user) == ["about:blank"], "the refused page was left at once"
        assert "internal-only-text" not in json.dumps(call(session, "browser_snapshot"))
    finally:
        close(session)


def test_a_big_page_comes_in_camofox_windows_and_stays_within_the_budget(
        home: Path, pages: PageServer) -> None:
    session = session_in(home, {"browser": {"cloud_provider": "camofox", "snapshot_budget": 2_000}})
    try:
        first = call(session, "browser_navigate", url=named(pages, "/big"))
        assert first["pages"] > 1 and len(first["snapshot"]) <= 2_000 * 4 + 2_000, {k: first[k] for k in ("pages",)}
        found = call(session, "browser_snapshot", find="The very last button")
        assert found["matches"] == 1, found
    finally:
        close(session)


def test_the_vault_refuses_to_send_a_secret_to_camofox(home: Path, pages: PageServer) -> None:
    from hermes.tools.browser.vault import Vault

    password = "never-leaves-hermes-42"
    entry = Vault(home).add(named(pages, "/login"), "alice", password)
    session = session_in(home, {"browser": {"cloud_provider": "camofox", "vault": {"enabled": True}}})
    try:
        call(session, "browser_navigate", url=named(pages, "/login"))
        answer = call(session, "browser_vault_fill", handle=entry.handle)
        assert "refused" in answer["error"] and "Camofox" in answer["error"], answer
        assert password not in json.dumps(answer)
    finally:
        close(session)


def test_a_wrong_access_key_is_a_clear_error(home: Path, pages: PageServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAMOFOX_ACCESS_KEY", "not-the-key")
    session = session_in(home, {"browser": {"cloud_provider": "camofox"}})
    try:
        answer = call(session, "browser_navigate", url=named(pages, "/form"))
        assert "HTTP 401" in answer["error"] and "Camofox" in answer["error"], answer
        assert "not-the-key" not in answer["error"]
    finally:
        close(session)
