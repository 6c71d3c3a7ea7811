"""Settings → Model and Settings → Tools in headless Chromium: the model, endpoint and tool pickers write
config.yaml through the app server, and the next session really uses what was picked."""

from __future__ import annotations

from ruamel.yaml import YAML

from fakes.model_server import Reply, ScriptedModelServer

from .harness import Desktop, HeldAnswers, desktop

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
    late = HeldAnswers(desktop, lambda r: r.get("method") == "models.list" and not r["params"].get("refresh"))
    page = late.page
    try:
        desktop.model.models[:] = ["m", "other"]
        late.holding = True
        page.click('[data-tour="model"]')
        late.wait_held()
        page.click('[data-tour="models-refresh"]')
        page.wait_for_function("document.querySelectorAll('#model-select option').length === 2")
        page.select_option("#model-select", "other")
        page.wait_for_function("document.getElementById('model').textContent === 'other'")
        page.wait_for_function("document.getElementById('model-status').textContent.includes('next session')")
        late.release()
        assert "next session" in (page.locator('[data-tour="model-status"]').text_content() or "")
        assert page.locator("#model").text_content() == "other"
        page.select_option("#model-select", "m")
        page.wait_for_function("document.getElementById('model').textContent === 'm'")
    finally:
        late.close()
    assert _model(desktop)["name"] == "m"


def test_the_start_up_model_list_answered_late_does_not_undo_a_pick(desktop: Desktop) -> None:
    late = HeldAnswers(desktop, lambda r: r.get("method") == "models.list" and not r["params"].get("refresh"),
                       holding=True)  # the page's start-up list, and the one Settings asks for
    page = late.page
    try:
        desktop.model.models[:] = ["m", "other"]
        page.click('[data-tour="model"]')
        late.wait_held(2)
        page.click('[data-tour="models-refresh"]')
        page.wait_for_function("document.querySelectorAll('#model-select option').length === 2")
        page.select_option("#model-select", "other")
        page.wait_for_function("document.getElementById('model').textContent === 'other'")
        late.release()  # both answers say "m": asked for before the pick
        assert page.locator("#model").text_content() == "other"
        page.select_option("#model-select", "m")
        page.wait_for_function("document.getElementById('model').textContent === 'm'")
    finally:
        late.close()


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
