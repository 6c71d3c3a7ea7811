"""Projects in headless Chromium: Settings → Projects creates and deletes them, the top bar's picker opens
one in the current session, and the agent's commands really run in its folder."""

from __future__ import annotations

import json
from pathlib import Path

from .harness import Desktop, desktop

__all__ = ["desktop"]

NAME = "<img src=x onerror=window.pwned=1>Blog"


def _last_pwd(desktop: Desktop) -> str:
    result = desktop.tool("terminal", {"command": "pwd"})
    return str(result["output"]).strip()


def test_a_project_made_in_settings_is_opened_from_the_top_bar_and_commands_run_in_it(
        desktop: Desktop, tmp_path: Path) -> None:
    page = desktop.page
    site, notes = tmp_path / "site", tmp_path / "notes"
    site.mkdir()
    notes.mkdir()
    page.click('[data-tour="settings-button"]')
    page.fill('[data-tour="project-name"]', NAME)
    page.fill('[data-tour="project-folders"]', f"{site}\n{desktop.home}")
    page.click('[data-tour="project-create"]')  # HERMES_HOME may never be a project folder
    page.wait_for_function("document.getElementById('project-status').dataset.level === 'error'")
    assert "cannot be a project folder" in page.locator('[data-tour="project-status"]').text_content()
    page.fill('[data-tour="project-folders"]', f"{site}\n{notes}")
    page.click('[data-tour="project-create"]')
    project = page.locator("#project-list [data-tour-item='project']").filter(has_text=NAME)
    project.wait_for()
    assert page.locator("#project-list img, #project-select img").count() == 0  # the name is text
    assert page.evaluate("window.pwned") is None
    saved = json.loads((desktop.home / "projects.json").read_text())
    assert saved["projects"][0]["folders"] == [str(site.resolve()), str(notes.resolve())]
    desktop.shot("projects-settings")
    page.click('[data-tour="settings-close"]')

    desktop.new_session()
    page.select_option('[data-tour="project-select"]', NAME)
    page.wait_for_function("document.querySelector('.conversation:not([hidden]) .notice') !== null")
    assert _last_pwd(desktop) == str(site.resolve())
    assert desktop.tool("desktop_project", {"action": "current"})["open"] == NAME
    # another session is not in the project; back in the first one the picker shows it again
    first = page.evaluate("hermesApp.state.current")
    desktop.new_session()
    assert page.locator('[data-tour="project-select"]').input_value() == ""
    page.click(f'#session-list li[data-session="{first}"] [data-tour-item="session-title"]')
    page.wait_for_function("(n) => document.querySelector('[data-tour=\"project-select\"]').value === n", arg=NAME)

    page.select_option('[data-tour="project-select"]', "")  # closed while the agent is open
    page.wait_for_function("() => hermesApp.call('projects.list', {session: hermesApp.state.current})"
                           ".then(r => r.open === null)")
    assert _last_pwd(desktop) != str(site.resolve())

    page.click('[data-tour="settings-button"]')
    project.locator('[data-tour-item="project-delete"]').click()
    page.wait_for_function("document.querySelectorAll('#project-list [data-project]').length === 0")
    assert json.loads((desktop.home / "projects.json").read_text())["projects"] == []
    assert page.locator('[data-tour="project-select"] option').count() == 1
    page.click('[data-tour="settings-close"]')
