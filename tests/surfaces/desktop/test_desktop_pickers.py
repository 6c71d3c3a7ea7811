"""Settings → Model and Settings → Tools in headless Chromium: the model, endpoint and tool pickers write
config.yaml through the app server, and the next session really uses what was picked."""

from __future__ import annotations

from typing import Any

from ruamel.yaml import YAML

from fakes.model_server import Reply, ScriptedModelServer

from .harness import Desktop, desktop

__all__ = ["desktop"]


def _config(desktop: Desktop) -> dict[str, object]:
    data = YAML(typ="safe").load((desktop.home / "config.yaml").read_text(encoding="utf-8")) or {}
    assert isinstance(data, dict)
    return data


def _model(desktop: Desktop) -> dict[str, object]:
    model = _config(desktop)["model"]
    assert isinstance(model, dict)
    return model


def _open_settings(desktop: Desktop) -> None:
    page = desktop.page
    page.click('[data-tour="model"]')  # the top bar's model button opens the model picker
    page.wait_for_function("document.activeElement && document.activeElement.id === 'model-select'")
    assert page.evaluate("hermesApp.state.route") == "/settings"


def test_the_model_picker_lists_the_endpoint_and_the_pick_reaches_the_next_session(desktop: Desktop) -> None:
    page = desktop.page
    desktop.model.models[:] = ["m", "other"]
    _open_settings(desktop)
    page.click('[data-tour="models-refresh"]')  # the list from start-up is kept; ask again
    page.wait_for_function("document.querySelectorAll('#model-select option').length === 2")
    assert page.locator("#model-select").input_value() == "m"
    page.select_option("#model-select", "other")
    page.wait_for_function("document.getElementById('model').textContent === 'other'")
    assert _model(desktop)["name"] == "other"
    assert "next session" in page.locator('[data-tour="model-status"]').text_content()
    desktop.shot("model-picker")
    page.click('[data-tour="settings-close"]')
    desktop.new_session()
    desktop.say("who answers")
    assert desktop.model.requests[-1]["model"] == "other"
    _open_settings(desktop)
    page.select_option("#model-select", "m")
    page.wait_for_function("document.getElementById('model').textContent === 'm'")


def test_a_model_list_answered_after_a_pick_does_not_overwrite_it(desktop: Desktop) -> None:
    """Opening Settings asks for the model list; when that answer is slow and the person refreshes and picks
    a model meanwhile, the late answer must not overwrite the pick's status or the model shown."""
    import json

    held: list[str] = []
    hold = {"on": False}

    def route(ws: Any) -> None:
        server = ws.connect_to_server()
        slow: set[int] = set()

        def to_server(message: str | bytes) -> None:
            msg = json.loads(message)
            if hold["on"] and msg.get("method") == "models.list" and not msg["params"].get("refresh"):
                slow.add(msg["id"])
            server.send(message)

        def to_page(message: str | bytes) -> None:
            if json.loads(message).get("id") in slow:
                held.append(str(message))
            else:
                ws.send(message)

        ws.on_message(to_server)
        server.on_message(to_page)
        desktop_routes.append(ws)

    desktop_routes: list[Any] = []
    errors: list[str] = []
    page = desktop.browser.new_page(viewport={"width": 1280, "height": 860})
    try:
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.route_web_socket("**/rpc", route)
        page.goto(desktop.url)
        page.wait_for_function("document.documentElement.dataset.ready === 'true'")
        desktop.model.models[:] = ["m", "other"]
        hold["on"] = True
        page.click('[data-tour="model"]')
        deadline = 200
        while not held and deadline:
            page.wait_for_timeout(25)
            deadline -= 1
        assert held, "the settings page did not ask for the model list"
        page.click('[data-tour="models-refresh"]')
        page.wait_for_function("document.querySelectorAll('#model-select option').length === 2")
        page.select_option("#model-select", "other")
        page.wait_for_function("document.getElementById('model').textContent === 'other'")
        page.wait_for_function("document.getElementById('model-status').textContent.includes('next session')")
        for message in held:
            desktop_routes[-1].send(message)
        # answers arrive in order: once this one is back, the held one has been handled
        page.evaluate("() => hermesApp.call('sessions.list', {limit: 1})")
        assert "next session" in (page.locator('[data-tour="model-status"]').text_content() or "")
        assert page.locator("#model").text_content() == "other"
        page.select_option("#model-select", "m")
        page.wait_for_function("document.getElementById('model').textContent === 'm'")
        assert errors == []
    finally:
        page.close()
    assert _model(desktop)["name"] == "m"


def test_the_endpoint_picker_moves_new_sessions_to_another_endpoint_and_refuses_a_bad_url(
        desktop: Desktop) -> None:
    page = desktop.page
    first_url = desktop.model.url
    with ScriptedModelServer(lambda body: Reply(content="from the second endpoint"), model="m",
                             models=["m", "second-model"]) as second:
        _open_settings(desktop)
        assert page.locator("#base-url-input").input_value() == first_url
        options = page.locator("#provider-select option").all_text_contents()
        assert options[0].startswith("(not set") and len(options) > 2
        page.fill("#base-url-input", "not a url")
        page.click('[data-tour="provider-save"]')
        page.wait_for_function("document.getElementById('model-status').dataset.level === 'error'")
        assert _model(desktop)["base_url"] == first_url  # refused: nothing written

        page.fill("#base-url-input", second.url)
        page.click('[data-tour="provider-save"]')
        page.wait_for_function("[...document.querySelectorAll('#model-select option')]"
                               ".some(o => o.value === 'second-model')")
        assert _model(desktop)["base_url"] == second.url
        page.click('[data-tour="settings-close"]')
        desktop.new_session()
        assert desktop.say("hello") == "from the second endpoint"

        _open_settings(desktop)
        page.fill("#base-url-input", first_url)
        page.click('[data-tour="provider-save"]')
        page.wait_for_function("(u) => hermesApp.call('settings.get', {keys: ['model.base_url']})"
                               ".then(r => r.settings[0].value === u)", arg=first_url)
    page.click('[data-tour="settings-close"]')
    desktop.new_session()
    assert desktop.say("back home") == "BACK HOME"


def test_the_tool_picker_turns_a_toolset_off_for_new_sessions_and_shows_switched_off_tools(
        desktop: Desktop) -> None:
    page = desktop.page
    _open_settings(desktop)
    web = page.locator('#toolset-list [data-toolset="web"]')
    web.wait_for()
    assert web.get_attribute("data-state") == "on"
    web.locator('[data-tour-item="toolset-toggle"]').uncheck()
    page.wait_for_function("document.querySelector('#toolset-list [data-toolset=\"web\"]').dataset.state"
                           " === 'disabled'")
    assert "web" in _config(desktop)["agent"]["disabled_toolsets"]  # type: ignore[index]
    page.click('[data-tour="settings-close"]')
    desktop.new_session()
    desktop.say("no web please")
    assert "web_search" not in desktop.tools_offered() and "read_file" in desktop.tools_offered()

    # tips off: show_tip is listed as off (with the key), not as available
    _open_settings(desktop)
    page.locator('[data-tour="tips-toggle"]').uncheck()
    page.wait_for_function("hermesApp.state.prefs.in_app_tips === false")
    page.evaluate("HermesPickers.tools()")
    tip = page.locator('#toolset-list [data-tool="show_tip"]')
    page.wait_for_function("document.querySelector('#toolset-list [data-tool=\"show_tip\"]')"
                           ".dataset.available === 'false'")
    assert "off: display.in_app_tips is false" in tip.text_content()
    desktop.shot("tool-picker")
    page.locator('[data-tour="tips-toggle"]').check()
    page.wait_for_function("hermesApp.state.prefs.in_app_tips === true")
    page.locator('#toolset-list [data-toolset="web"] [data-tour-item="toolset-toggle"]').check()
    page.wait_for_function("document.querySelector('#toolset-list [data-toolset=\"web\"]').dataset.state === 'on'")
    assert "disabled_toolsets" not in _config(desktop).get("agent", {})  # type: ignore[operator]
    page.click('[data-tour="settings-close"]')
