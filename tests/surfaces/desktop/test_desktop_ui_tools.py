"""Every desktop_ui tool called by the scripted model in a desktop app session, its effect checked in the
page (Chromium) and a screenshot of it saved; tours and tips as T-DESK says."""

from __future__ import annotations

import json
from pathlib import Path

from .harness import Desktop, desktop

__all__ = ["desktop"]

PAGE = """<!doctype html><title>Counter</title>
<h1 id="heading">Counter</h1>
<p id="count" data-testid="count">0</p>
<button id="add" onclick="const c = document.getElementById('count'); c.textContent = +c.textContent + 1">Add</button>
<input id="name" aria-label="Name" oninput="document.getElementById('echo').textContent = this.value">
<p id="echo"></p>
<ul><li><button>one</button></li><li><button>two</button></li></ul>"""


def frame(desktop: Desktop):  # type: ignore[no-untyped-def]
    return desktop.page.frame_locator('[data-tour="preview-frame"]')


def test_desktop_preview_shows_html_reads_it_and_closes(desktop: Desktop) -> None:
    desktop.new_session()
    shown = desktop.tool("desktop_preview", {"html": PAGE, "title": "A counter"})
    assert shown["shown"] == "html" and shown["title"] == "Counter" and "Counter" in shown["text"]
    assert frame(desktop).locator("#heading").text_content() == "Counter"
    assert desktop.page.locator('[data-tour="preview-caption"]').text_content() == "A counter"
    desktop.shot("desktop_preview-html")
    read = desktop.tool("desktop_preview", {"action": "read"})
    assert read["title"] == "Counter" and "Add" in read["text"]


def test_desktop_preview_shows_a_local_image_and_a_text_file(desktop: Desktop, tmp_path: Path) -> None:
    from PIL import Image

    picture = tmp_path / "dot.png"
    Image.new("RGB", (40, 30), (200, 30, 30)).save(picture)
    desktop.new_session()
    shown = desktop.tool("desktop_preview", {"path": str(picture)})
    assert shown["shown"] == "image"
    size = frame(desktop).locator("img").evaluate("i => [i.naturalWidth, i.naturalHeight]")
    assert size == [40, 30]
    desktop.shot("desktop_preview-image")
    notes = tmp_path / "notes.txt"
    notes.write_text("<b>not markup</b> just text\n")
    shown = desktop.tool("desktop_preview", {"path": str(notes)})
    assert shown["shown"] == "text" and "<b>not markup</b>" in shown["text"]
    missing = desktop.tool("desktop_preview", {"path": str(tmp_path / "nope.txt")})
    assert "is not a file" in missing["error"]
    both = desktop.tool("desktop_preview", {"html": "<p>x</p>", "url": "http://127.0.0.1:9/"})
    assert "exactly one of" in both["error"]


def test_drive_preview_clicks_types_and_reads_the_preview_page(desktop: Desktop) -> None:
    desktop.new_session()
    desktop.tool("desktop_preview", {"html": PAGE})
    clicked = desktop.tool("drive_preview", {"action": "click", "selector": "#add"})
    assert clicked["clicked"] == "#add" and "1" in clicked["page"]["text"]
    desktop.tool("drive_preview", {"action": "click", "selector": "#add"})
    assert frame(desktop).locator("#count").text_content() == "2"
    typed = desktop.tool("drive_preview", {"action": "type", "selector": "#name", "text": "Ada"})
    assert typed["value"] == "Ada"
    assert frame(desktop).locator("#echo").text_content() == "Ada"
    missing = desktop.tool("drive_preview", {"action": "click", "selector": "#nothing"})
    assert "no element matches #nothing" in missing["error"]
    desktop.shot("drive_preview")


def test_annotate_preview_outlines_an_element_with_a_note(desktop: Desktop) -> None:
    desktop.new_session()
    desktop.tool("desktop_preview", {"html": PAGE})
    noted = desktop.tool("annotate_preview", {"selector": "#add", "note": "press me"})
    assert noted["annotated"] == "#add" and noted["box"]["width"] > 0
    note = frame(desktop).locator('[data-hermes-note="press me"]')
    assert note.count() == 1 and note.text_content() == "press me"
    desktop.shot("annotate_preview")
    cleared = desktop.tool("annotate_preview", {"clear": True})
    assert cleared["cleared"] == 1 and frame(desktop).locator("[data-hermes-note]").count() == 0


def test_terminal_tools_read_the_shell_tab_and_close_it(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    focused = desktop.tool("focus_pane", {"pane": "terminal"})
    assert focused["focused"] == "terminal" and page.locator('[data-tour="terminal-pane"]').is_visible()
    page.click('[data-tour="new-terminal"]')
    page.wait_for_function("document.querySelector('#terminal-input').disabled === false")
    page.fill('[data-tour="terminal-input"]', "echo hermes-$((6*7))")
    page.press('[data-tour="terminal-input"]', "Enter")
    page.wait_for_function("document.querySelector('#terminal-screen').textContent.includes('hermes-42')")
    read = desktop.tool("read_terminal", {})
    assert "hermes-42" in read["text"] and read["kind"] == "shell"
    assert read["total_lines"] >= 2 and read["end"] == read["total_lines"] and read["viewport_rows"] >= 1
    first = desktop.tool("read_terminal", {"start_line": 0, "count": 1})
    assert first["start"] == 0 and first["end"] == 1
    below = desktop.tool("read_window_below", {})
    assert below["pane"] == "terminal" and "hermes-42" in below["text"]
    desktop.shot("read_terminal")
    closed = desktop.tool("close_terminal", {"process_id": read["terminal"]})
    assert closed["closed"] == read["terminal"] and closed["tabs_left"] == []
    assert page.locator('[data-tour-item="terminal-tab"]').count() == 0
    again = desktop.tool("read_terminal", {"terminal": read["terminal"]})
    assert "no terminal tab" in again["error"]


CURSES = """import curses
def main(win):
    win.addstr(5, 10, "hermes-curses")
    win.refresh()
    while True:
        key = win.getch()
        if key == curses.KEY_UP:
            win.addstr(6, 12, "arrow-up")
            win.refresh()
        elif key == ord("q"):
            return
curses.wrapper(main)
"""


def test_a_full_screen_program_draws_where_it_means_to_and_takes_keys(desktop: Desktop, tmp_path: Path) -> None:
    page = desktop.page
    program = tmp_path / "full_screen.py"
    program.write_text(CURSES)
    desktop.new_session()
    desktop.tool("focus_pane", {"pane": "terminal"})
    page.click('[data-tour="new-terminal"]')
    page.wait_for_function("document.querySelector('#terminal-input').disabled === false")
    page.fill('[data-tour="terminal-input"]', f"python3 {program}")
    page.press('[data-tour="terminal-input"]', "Enter")
    page.wait_for_function("document.querySelector('#terminal-screen').textContent.includes('hermes-curses')")
    read = desktop.tool("read_terminal", {})
    rows = read["text"].split("\n")
    assert "          hermes-curses" in rows, rows  # row 5 of the screen, column 10: where curses put it
    # the cursor stays where curses left it: just after the text, on the same row
    assert (rows.index("          hermes-curses"), read["cursor_col"]) == (read["cursor_row"], 23)
    page.click('[data-tour="terminal-screen"]')
    page.keyboard.press("ArrowUp")  # from the focused screen, as a terminal sends it (ESC [ A)
    page.wait_for_function("document.querySelector('#terminal-screen').textContent.includes('arrow-up')")
    assert "            arrow-up" in desktop.tool("read_terminal", {})["text"].split("\n")
    desktop.shot("read_terminal-full-screen")
    page.click('[data-tour="terminal-screen"]')  # the tool calls' turns gave the composer the focus
    page.keyboard.press("q")  # curses ends: the alternate screen goes, the shell's screen is back as it was
    page.wait_for_function("!document.querySelector('#terminal-screen').textContent.includes('hermes-curses')")
    assert f"python3 {program}" in desktop.tool("read_terminal", {})["text"]
    page.click('[data-tour="terminal-screen"]')
    page.keyboard.type("echo back-$((6*7))")
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('#terminal-screen').textContent.includes('back-42')")
    assert "arrow-up" not in desktop.tool("read_terminal", {})["text"]
    desktop.tool("close_terminal", {"process_id": read["terminal"]})


def test_a_background_process_gets_a_read_only_tab_that_close_terminal_closes(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    started = desktop.tool("terminal", {"command": "sleep 30", "background": True})
    process_id = started["process_id"]
    tab = page.locator(f'[data-tour-item="terminal-tab"][data-tab="{process_id}"]')
    assert tab.count() == 1
    closed = desktop.tool("close_terminal", {"process_id": process_id})
    assert closed["kind"] == "process" and closed["process_still_running"] is True
    assert tab.count() == 0
    listed = desktop.tool("process_manage", {"action": "list"})
    assert process_id in json.dumps(listed) and "running" in json.dumps(listed)  # closing the tab kept it
    desktop.tool("process_manage", {"action": "kill", "process_id": process_id})


def test_read_window_below_reads_the_preview_dock(desktop: Desktop) -> None:
    desktop.new_session()
    desktop.tool("desktop_preview", {"html": PAGE, "title": "Below"})
    below = desktop.tool("read_window_below", {})
    assert below["pane"] == "preview" and below["caption"] == "Below" and "Counter" in below["text"]


def test_focus_pane_brings_each_pane_forward(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    assert desktop.tool("focus_pane", {"pane": "settings"})["route"] == "/settings"
    assert page.locator('[data-tour="settings-pane"]').is_visible()
    desktop.shot("focus_pane-settings")
    page.click('[data-tour="settings-close"]')  # the person goes back to the chat to type again
    assert desktop.tool("focus_pane", {"pane": "preview"})["dock"] == "preview"
    assert page.locator('[data-tour="preview-pane"]').is_visible()
    back = desktop.tool("focus_pane", {"pane": "chat"})
    assert back["route"] == "/" and page.locator('[data-tour="composer"]').is_visible()
    assert page.evaluate("document.activeElement.id") == "composer-input"


def test_react_to_message_puts_the_emoji_on_the_last_user_message(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    desktop.say("thanks for the help")
    reacted = desktop.tool("react_to_message", {"emoji": "👍"})
    # the person's last message is now the one that asked for the call
    assert reacted["reacted"] == "👍" and reacted["message"]["role"] == "user"
    users = page.locator('.conversation:not([hidden]) .message[data-role="user"]')
    assert users.last.locator('[data-tour-item="reactions"]').text_content() == "👍"
    desktop.shot("react_to_message")


def test_set_theme_switches_the_colours_and_is_kept(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    dark = desktop.tool("set_theme", {"theme": "dark"})
    assert dark["shown"] == "dark" and page.evaluate("document.documentElement.dataset.shownTheme") == "dark"
    assert dark["background"] == "rgb(21, 23, 26)"
    assert "theme: dark" in (desktop.home / "config.yaml").read_text()
    desktop.shot("set_theme-dark")
    light = desktop.tool("set_theme", {"theme": "light"})
    assert light["background"] == "rgb(255, 255, 255)"


def test_gui_tour_targets_list_stable_selectors_first_and_survive_a_re_render(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    page.evaluate("hermesApp.navigate('/'); hermesApp.showDock('preview')")
    listed = desktop.tool("gui_tour", {"action": "targets"})["targets"]
    flags = [t["stable"] for t in listed]
    assert flags == sorted(flags, reverse=True) and True in flags and False in flags  # stable ones first
    stable = [t["selector"] for t in listed if t["stable"]]
    assert '[data-tour="composer"]' in stable and '[data-tour="new-session"]' in stable
    assert all("nth-child" not in s for s in stable)
    assert all("nth-child" in t["selector"] for t in listed if not t["stable"])
    # re-render: the sidebar is rebuilt, the dock switches and back, a session is opened
    page.evaluate("hermesApp.renderSessions(); hermesApp.showDock('terminal'); hermesApp.showDock('preview')")
    desktop.new_session()
    again = desktop.tool("gui_tour", {"action": "targets"})["targets"]
    assert [t["selector"] for t in again if t["stable"]] == stable
    preview = desktop.tool("desktop_preview", {"html": PAGE})
    assert preview["shown"] == "html"
    inside = desktop.tool("gui_tour", {"action": "targets", "surface": "preview"})["targets"]
    assert [t["selector"] for t in inside if t["stable"]][:4] == ["#heading", "#count", "#add", "#name"]
    assert any(not t["stable"] and t["label"] == "one" for t in inside)


def test_the_quick_tour_plays_and_esc_returns_the_app_to_where_it_started(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    started = desktop.tool("gui_tour", {"action": "start", "preset": "quick"})
    assert started["playing"] is True and started["steps"] == 4 and started["step"] == '[data-tour="sessions"]'
    bubble = page.locator('[data-tour="tour-step"]')
    assert bubble.locator("h4").text_content() == "Sessions"
    desktop.shot("gui_tour-quick-1")
    for title in ("Composer", "New session", "Model"):
        page.click('[data-tour="tour-next"]')
        page.wait_for_function("(t) => document.querySelector('[data-tour=\"tour-step\"] h4')?.textContent === t",
                               arg=title)
    page.keyboard.press("Escape")
    assert bubble.count() == 0 and page.locator('[data-tour="tour"]').count() == 0
    assert page.evaluate("document.documentElement.dataset.tourEnded") == "escape"


def test_a_custom_tour_navigates_waits_for_late_targets_and_esc_goes_back(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    page.evaluate("hermesApp.navigate('/'); hermesApp.showDock('preview')")
    steps = [
        {"navigate": "/settings", "selector": '[data-tour="tips-toggle"]', "title": "Tips", "text": "Tips here."},
        {"pane": "terminal", "selector": '[data-tour="new-terminal"]', "title": "Terminals", "text": "Shells."},
        {"selector": "#appears-later", "title": "Late", "text": "Waited for."},
        {"selector": "#never-there", "title": "Missing", "text": "Skipped."},
        {"selector": '[data-tour="model"]', "title": "Model", "text": "Last."},
    ]
    started = desktop.tool("gui_tour", {"action": "start", "steps": steps})
    assert started["playing"] is True and started["step"] == '[data-tour="tips-toggle"]'
    assert page.locator('[data-tour="settings-pane"]').is_visible()  # navigated
    page.click('[data-tour="tour-next"]')
    page.wait_for_function("document.querySelector('[data-tour=\"tour-step\"] h4')?.textContent === 'Terminals'")
    assert page.locator('[data-tour="terminal-pane"]').is_visible()  # the pane was shown
    page.click('[data-tour="tour-next"]')
    page.evaluate("""() => setTimeout(() => { const b = document.createElement('button'); b.id = 'appears-later';
        b.textContent = 'late'; document.getElementById('topbar').appendChild(b); }, 600)""")
    page.wait_for_function("document.querySelector('[data-tour=\"tour-step\"] h4')?.textContent === 'Late'")
    page.click('[data-tour="tour-next"]')  # the missing one is skipped after its wait
    page.wait_for_function("document.querySelector('[data-tour=\"tour-step\"] h4')?.textContent === 'Model'",
                           timeout=10_000)
    desktop.shot("gui_tour-custom")
    page.keyboard.press("Escape")
    assert page.locator('[data-tour="tour-step"]').count() == 0
    assert page.evaluate("hermesApp.state.route") == "/" and page.locator('[data-tour="composer"]').is_visible()
    assert page.locator('[data-tour="preview-pane"]').is_visible()
    assert not page.locator('[data-tour="terminal-pane"]').is_visible()
    page.evaluate("document.getElementById('appears-later').remove()")


def test_gui_tour_refuses_what_t_desk_forbids(desktop: Desktop) -> None:
    desktop.new_session()
    both = desktop.tool("gui_tour", {"action": "start", "preset": "quick", "steps": [{"selector": "#model"}]})
    assert "exclusive" in both["error"]
    preview = desktop.tool("gui_tour", {"action": "start", "preset": "full", "surface": "preview"})
    assert "only on surface 'app'" in preview["error"]


def test_the_full_tour_adds_the_current_screens_spots(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    started = desktop.tool("gui_tour", {"action": "start"})
    assert started["preset"] == "full" and started["steps"] == 8 and started["skipped"] == []
    page.keyboard.press("Escape")
    page.evaluate("hermesApp.navigate('/settings')")
    on_settings = desktop.tool("gui_tour", {"action": "start", "preset": "full"}, typed=False)
    # the composer is not on the settings screen: skipped; the settings screen's own spots are added
    assert '[data-tour="composer"]' in on_settings["skipped"] and on_settings["steps"] == 6
    page.keyboard.press("Escape")
    assert page.evaluate("hermesApp.state.route") == "/settings"
    page.evaluate("hermesApp.navigate('/')")


def test_show_tip_points_at_one_element_and_a_new_tip_replaces_the_old(desktop: Desktop) -> None:
    page = desktop.page
    desktop.new_session()
    first = desktop.tool("show_tip", {"selector": '[data-tour="model"]', "text": "The model name is a button."})
    assert first["shown"] is True and first["box"]["width"] > 0
    assert page.locator('[data-tour="tip"]').count() == 1 and page.locator('[data-tour="tour"]').count() == 0
    desktop.shot("show_tip")
    second = desktop.tool("show_tip", {"selector": '[data-tour="new-session"]', "text": "Start over here.",
                                       "title": "New"})
    assert second["shown"] is True
    tips = page.locator('[data-tour="tip"]')
    assert tips.count() == 1 and "Start over here." in tips.text_content()
    missing = desktop.tool("show_tip", {"selector": "#no-such-thing", "text": "x"})
    assert "no element matches" in missing["error"]
    desktop.tool("desktop_preview", {"html": PAGE})
    inside = desktop.tool("show_tip", {"selector": "#add", "text": "Press to count.", "surface": "preview"})
    assert inside["surface"] == "preview" and inside["box"]["y"] > 400  # below the chat, inside the dock
    page.click('[data-tour="tip-close"]')
    assert tips.count() == 0


def test_a_preview_page_cannot_reach_the_app_or_its_api(desktop: Desktop) -> None:
    desktop.new_session()
    probe = """<title>probe</title><p id="out">waiting</p><script>
      const out = document.getElementById('out');
      let parentDom = 'blocked';
      try { parentDom = String(window.parent.document.title); } catch (e) { parentDom = 'blocked'; }
      const ws = new WebSocket('ws://' + HOST + '/rpc');
      ws.onopen = () => { out.textContent = 'api-open ' + parentDom; };
      ws.onerror = () => { out.textContent = 'api-refused ' + parentDom; };
    </script>""".replace("HOST", json.dumps(desktop.url.split("//", 1)[1].rstrip("/")))
    desktop.tool("desktop_preview", {"html": probe})
    frame(desktop).locator("#out").filter(has_text="api-").wait_for()
    assert frame(desktop).locator("#out").text_content() == "api-refused blocked"
