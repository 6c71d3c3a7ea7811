"""computer_use's safety (requirement T-CU): approval on the person's own display, the kill hotkey and
the turn's interrupt stopping input at once, and stored secrets never typed."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.tool_session import ScriptedSink
from hermes.tools.toolsets import Surface
from tools.computer_use.support import Desk, need_desktop, read_state, tk_board, write_config


def wait_for(predicate: Callable[[], Any], seconds: float = 10.0) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    return predicate()


@pytest.fixture
def own_display(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The person's own display, played by an Xvfb the test starts, with the Tk board on it."""
    need_desktop()
    read_end, write_end = os.pipe()
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write_end), "-screen", "0", "1024x768x24",
                               "-nolisten", "tcp"], pass_fds=(write_end,), stderr=subprocess.DEVNULL)
    os.close(write_end)
    number = b""
    while not number.endswith(b"\n"):  # Xvfb writes the number and the newline separately
        piece = os.read(read_end, 16)
        assert piece, "Xvfb did not start"
        number += piece
    os.close(read_end)
    monkeypatch.setenv("DISPLAY", f":{number.decode().strip()}")
    monkeypatch.delenv("XAUTHORITY", raising=False)
    state = tmp_path / "board.json"
    board = subprocess.Popen(tk_board(state).split())
    try:
        assert wait_for(lambda: read_state(state).get("entry"))
        yield state
    finally:
        board.terminate()
        board.wait(5)
        server.terminate()
        server.wait(5)


def entry_point(state: Path) -> list[int]:
    left, top, width, height = read_state(state)["entry"]
    return [left + width // 2, top + height // 2]


def test_on_the_persons_own_display_every_call_needs_approval(hermes_home: Path, own_display: Path,
                                                              desk: Callable[..., Desk]) -> None:
    write_config(hermes_home, display="own")
    sink = ScriptedSink("deny", "once", "session")
    person = desk(sink=sink)
    assert "did not approve" in person.error(action="screenshot")
    assert sink.asked[0].payload["command"] == "computer_use(action='screenshot')"
    assert read_state(own_display)["text"] == ""
    person.ok(action="left_click", coordinate=entry_point(own_display))
    person.ok(action="type", text="approved")
    person.ok(action="key", keys="Return")
    assert len(sink.asked) == 3  # "session" covered the last call
    assert wait_for(lambda: read_state(own_display)["text"] == "approved")
    assert person.ok(action="screenshot")["own_display"] is True

    nobody = desk(surface=Surface.ONESHOT)
    assert "nobody can be asked" in nobody.error(action="screenshot")


def test_the_kill_hotkey_stops_typing_at_once_and_for_the_rest_of_the_session(
        hermes_home: Path, desk: Callable[..., Desk], monkeypatch: pytest.MonkeyPatch) -> None:
    state = hermes_home / "board.json"
    write_config(hermes_home, screen_size="800x600", screenshot_size="800x600", startup=[tk_board(state)])
    session = desk()
    session.ok(action="cursor_position")
    assert wait_for(lambda: read_state(state).get("entry"))
    desktop = session.session.state["computer_use"].desktop
    session.ok(action="left_click", coordinate=entry_point(state))

    from Xlib import XK, X, display
    from Xlib.ext import xtest

    monkeypatch.setenv("XAUTHORITY", desktop.xauthority)  # the person at the keyboard of hermes's display
    person = display.Display(desktop.name)

    def press_hotkey() -> None:
        assert wait_for(lambda: len(read_state(state).get("text", "")) >= 20)
        codes = [person.keysym_to_keycode(XK.string_to_keysym(k)) for k in ("Control_L", "Alt_L", "Escape")]
        for code in codes:
            xtest.fake_input(person, X.KeyPress, code)
        for code in reversed(codes):
            xtest.fake_input(person, X.KeyRelease, code)
        person.sync()

    presser = threading.Thread(target=press_hotkey)
    presser.start()
    error = session.error(action="type", text="x" * 10_000)
    presser.join()
    person.close()
    assert "input stopped: the person pressed the kill hotkey (ctrl+alt+Escape)" in error
    typed = wait_for(lambda: read_state(state)["text"])
    assert 20 <= len(typed) < 10_000
    assert "stopped for this session" in session.error(action="left_click", coordinate=[10, 10])
    assert "stopped for this session" in session.error(action="screenshot")


def test_an_interrupted_turn_sends_no_further_input(hermes_home: Path, desk: Callable[..., Desk]) -> None:
    state = hermes_home / "board.json"
    write_config(hermes_home, screen_size="800x600", screenshot_size="800x600", startup=[tk_board(state)])
    checks = {"armed": False, "n": 0}

    def cancelled() -> bool:  # the turn is interrupted while the text is being typed
        if checks["armed"]:
            checks["n"] += 1
        return checks["n"] > 30

    session = desk(cancelled=cancelled)
    session.ok(action="cursor_position")
    assert wait_for(lambda: read_state(state).get("entry"))
    session.ok(action="left_click", coordinate=entry_point(state))
    checks["armed"] = True
    assert "input stopped: the turn was interrupted" in session.error(action="type", text="y" * 500)
    time.sleep(0.3)
    assert 0 < len(read_state(state)["text"]) < 500
    assert "interrupted" in session.error(action="key", keys="Return")


def test_stored_secrets_are_never_typed(hermes_home: Path, desk: Callable[..., Desk],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    state = hermes_home / "board.json"
    write_config(hermes_home, screen_size="800x600", screenshot_size="800x600", startup=[tk_board(state)])
    monkeypatch.setenv("DEMO_SERVICE_API_KEY", "s3cr3t-value-1234567")
    session = desk()
    session.ok(action="cursor_position")
    assert wait_for(lambda: read_state(state).get("entry"))
    session.ok(action="left_click", coordinate=entry_point(state))
    assert "never types stored secrets" in session.error(action="type", text="key: s3cr3t-value-1234567")
    assert "never types stored secrets" in session.error(action="type", text="sk-" + "a1B2c3D4e5F6g7H8i9J0")
    session.ok(action="type", text="s3cr3t-val")
    assert "never types stored secrets" in session.error(action="type", text="ue-1234567")
    time.sleep(0.3)
    assert read_state(state)["text"] == "s3cr3t-val"


def test_without_model_vision_no_screenshot_is_attached(hermes_home: Path, desk: Callable[..., Desk]) -> None:
    write_config(hermes_home, vision=False, screen_size="640x480", screenshot_size="640x480")
    result = desk()(action="screenshot")
    assert not result.is_error, result.text
    assert "images" not in result.metadata
    assert "not attached: the session's model is not marked as accepting images" in result.text


def test_the_private_desktop_has_no_menu_that_starts_programs(hermes_home: Path, desk: Callable[..., Desk]) -> None:
    """openbox's stock root menu (a right click on the desktop) offers a terminal: a shell no approval sees."""
    import shutil

    from Xlib import X

    from hermes.tools.computer_use.display import _LIVE, open_x

    if shutil.which("openbox") is None:
        pytest.skip("openbox is not installed (.ci/run installs it)")
    write_config(hermes_home, vision=False, screen_size="640x480", screenshot_size="640x480", window_manager="openbox")
    session = desk()
    name = session.ok(action="screenshot")["display"]
    desktop = next(d for d in _LIVE if d.name == name)
    x = open_x(desktop.name, desktop.xauthority)

    def popups() -> list[Any]:  # an openbox menu is a child of the root window, mapped while shown
        return [w for w in x.screen().root.query_tree().children if w.get_attributes().map_state == X.IsViewable]

    try:
        before = {w.id for w in popups()}  # openbox keeps a 1x1 window of its own mapped
        session.ok(action="right_click", coordinate=[320, 240])  # on the bare desktop
        time.sleep(0.5)  # a menu, were there one, is mapped within milliseconds
        assert [w for w in popups() if w.id not in before] == []
    finally:
        x.close()
