"""The sessions sidebar in headless Chromium: rename in place, delete with a second click, and titles shown
as text (a title holding HTML never becomes markup or runs script)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hermes.store.sessions import SessionStore

from .harness import Desktop, HeldAnswers, desktop

__all__ = ["desktop"]

HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>Kitchen & <b>hall</b>'
CURRENT = '#session-list li.current'


@contextmanager
def _store(desktop: Desktop) -> Iterator[SessionStore]:
    """The app's session store, opened beside the running app server (as another process would)."""
    store = SessionStore(desktop.home / "state.db")
    try:
        yield store
    finally:
        store.close()


def _stored_title(desktop: Desktop, session_id: str) -> str | None:
    with _store(desktop) as store:
        return store.get_session(session_id).title


def _stored_ids(desktop: Desktop) -> list[str]:
    with _store(desktop) as store:
        return [s.id for s in store.list_sessions(limit=1000)]


def test_a_session_is_renamed_in_place_and_a_title_with_html_stays_text(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    desktop.say("plan the kitchen")
    key = page.evaluate("hermesApp.state.current")
    session_id = page.evaluate("(k) => hermesApp.state.open[k].session_id", key)
    item = page.locator(f'#session-list li[data-session="{key}"]')
    item.locator('[data-tour-item="session-title"]').filter(has_text="plan the kitchen").wait_for()

    # Esc keeps the old title
    item.locator('[data-tour-item="session-rename"]').click()
    field = item.locator('[data-tour-item="session-rename-input"]')
    field.fill("not this one")
    field.press("Escape")
    assert item.locator('[data-tour-item="session-title"]').text_content() == "plan the kitchen"

    item.locator('[data-tour-item="session-rename"]').click()
    field.fill(HOSTILE)
    field.press("Enter")
    page.wait_for_function("(t) => [...document.querySelectorAll('#session-list .session-title')]"
                           ".some(e => e.textContent === t)", arg=HOSTILE)
    assert _stored_title(desktop, session_id) == HOSTILE
    desktop.shot("session-renamed")
    # after a reload the title comes from sessions.list (the stored title), not from what the page typed
    page.reload()
    page.wait_for_function("document.documentElement.dataset.ready === 'true'")
    titles = page.locator('#session-list [data-tour-item="session-title"]').all_text_contents()
    assert HOSTILE in titles
    assert page.locator("#session-list img, #session-list script, #session-list b").count() == 0
    assert page.evaluate("window.pwned") is None
    assert HOSTILE not in page.evaluate("document.title")


def test_a_session_is_deleted_after_a_second_click_and_leaves_the_store(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    desktop.say("throw this away")
    key = page.evaluate("hermesApp.state.current")
    session_id = page.evaluate("(k) => hermesApp.state.open[k].session_id", key)
    delete = page.locator(f'#session-list li[data-session="{key}"] [data-tour-item="session-delete"]')
    delete.click()
    assert delete.get_attribute("aria-label") == "Confirm delete"  # one click only asks
    assert session_id in _stored_ids(desktop)
    delete.click()
    page.wait_for_function("(k) => !document.querySelector('#session-list li[data-session=\"' + k + '\"]')", arg=key)
    assert page.locator(f'#session-list li[data-session-id="{session_id}"]').count() == 0
    assert page.evaluate("hermesApp.state.current") is None
    assert page.locator(f'.conversation[data-session="{key}"]').count() == 0
    assert session_id not in _stored_ids(desktop)
    # the next message starts a new session instead of talking to the deleted one
    assert desktop.say("fresh start") == "FRESH START"
    assert page.evaluate("hermesApp.state.current") != key


def test_the_token_leaves_the_address_at_once_and_travels_in_no_url_even_on_reconnect(desktop: Desktop) -> None:
    """A server that wants its token: the page takes it from ``#token=`` (never sent to a server), drops it
    from the address, and presents it as a WebSocket subprotocol — no request URL (which proxies and access
    logs keep) holds it, on the first connection or after a reconnect."""
    from hermes.config.settings import Settings
    from hermes.surfaces.appserver.auth import Gate
    from hermes.surfaces.appserver.rpc import AppApi
    from hermes.surfaces.appserver.server import AppServer

    secret = "tok-" + "s3cret" * 6
    server = AppServer(AppApi(Settings.load()), Gate("127.0.0.1", secret, require_token=True), "127.0.0.1", 0)
    server.start()
    page = desktop.browser.new_page()
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url))
    page.on("websocket", lambda ws: urls.append(ws.url))
    try:
        page.goto(f"http://127.0.0.1:{server.port}/#token={secret}")
        page.wait_for_function("document.documentElement.dataset.ready === 'true'")
        assert secret not in page.url and secret not in page.evaluate("location.href + history.length")
        assert page.evaluate("hermesApp.call('sessions.list', {}).then(r => Array.isArray(r.sessions))")
        page.evaluate("hermesApp.state.ws.close()")
        page.wait_for_function("() => document.documentElement.dataset.connected === 'true' && "
                               "hermesApp.state.ws.readyState === 1", timeout=10_000)
        assert page.evaluate("hermesApp.call('sessions.list', {}).then(r => Array.isArray(r.sessions))")
        sockets = [u for u in urls if u.startswith("ws://")]
        assert len(sockets) == 2, urls
        assert not [u for u in urls if secret in u], urls
    finally:
        page.close()
        server.stop()


def _stored_session(desktop: Desktop, title: str) -> str:
    with _store(desktop) as store:
        session_id = store.create_session(surface="desktop", model="m", toolsets=[], tools=[], title=title)
        store.append_message(session_id, {"role": "user", "content": "an old question"})
        store.append_message(session_id, {"role": "assistant", "content": "an old answer"})
        return session_id


def test_a_resume_answered_after_another_pick_does_not_pull_the_page_back(desktop: Desktop) -> None:
    """Resuming a long stored session can answer late; a session picked meanwhile stays on screen."""
    old = _stored_session(desktop, "a long stored session")
    late = HeldAnswers(desktop, lambda r: r.get("method") == "sessions.resume")
    page = late.page
    try:
        page.click('[data-tour="new-session"]')
        page.wait_for_function("hermesApp.state.current")
        picked = page.evaluate("hermesApp.state.current")
        late.holding = True
        page.click(f'#session-list li[data-session-id="{old}"]')
        late.wait_held()
        page.click(f'#session-list li[data-session="{picked}"]')
        late.release()
        assert page.evaluate("hermesApp.state.current") == picked
        resumed = page.evaluate("(id) => Object.keys(hermesApp.state.open).find("
                                "k => hermesApp.state.open[k].session_id === id)", old)
        assert resumed, "the resumed session is open in the sidebar"
        assert page.locator(f'#session-list li[data-session="{resumed}"]').count() == 1
        page.click(f'#session-list li[data-session="{resumed}"]')  # and it holds its history
        page.locator('.conversation:not([hidden]) .message').filter(has_text="an old answer").wait_for()
    finally:
        late.close()


def test_a_title_being_edited_survives_another_session_finishing_its_turn(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    desktop.say("the first session")
    first = page.evaluate("hermesApp.state.current")
    desktop.new_session()
    desktop.say("the second session")
    item = page.locator(f'#session-list li[data-session="{first}"]')
    item.hover()  # a session's buttons show on hover (and on the current one)
    item.locator('[data-tour-item="session-rename"]').click()
    field = item.locator('[data-tour-item="session-rename-input"]')
    field.fill("half typed")
    desktop.say("a turn in the second session", typed=False)  # its end refreshes the sidebar
    assert field.count() == 1 and field.input_value() == "half typed"
    field.press("Escape")
    assert item.locator('[data-tour-item="session-title"]').text_content() == "the first session"
    # an armed delete survives a refresh too, and leaving it disarms it
    button = item.locator('[data-tour-item="session-delete"]')
    item.hover()
    button.click()
    desktop.say("another turn", typed=False)
    assert button.text_content() == "Delete?"
    page.locator("#composer-input").focus()
    page.wait_for_function("(k) => !document.querySelector("
                           "'#session-list li[data-session=\"' + k + '\"] [data-armed]')", arg=first)
    assert page.locator(f'#session-list li[data-session="{first}"]').count() == 1


def test_a_turn_that_ended_before_its_send_was_answered_leaves_stop_off(desktop: Desktop) -> None:
    late = HeldAnswers(desktop, lambda r: r.get("method") == "message.send")
    page = late.page
    try:
        page.click('[data-tour="new-session"]')
        page.wait_for_function("hermesApp.state.current")
        late.holding = True
        page.fill('[data-tour="composer-input"]', "quick")
        page.press('[data-tour="composer-input"]', "Enter")
        page.wait_for_function("(hermesApp.state.turns || 0) > 0")  # the turn ended; its answer is held
        late.release()
        assert page.locator("#stop").is_disabled()
        assert page.evaluate("hermesApp.state.running[hermesApp.state.current]") is False
    finally:
        late.close()
