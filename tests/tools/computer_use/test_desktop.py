"""computer_use on a private Xvfb larger than the model's screenshot size, with the Tk test window
(requirement T-CU): screenshots scaled to 1280x800, clicks through the scaling landing on the exact real
pixels, typing into a field, and clear errors for malformed actions."""

from __future__ import annotations

import base64
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tools.computer_use.support import Desk, need_desktop, read_state, tk_board, write_config

REAL, MODEL = (1920, 1200), (1280, 800)


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Desk, Path]]:
    """One session on a 1920x1200 Xvfb running the Tk board (shown to the model at 1280x800)."""
    need_desktop()
    home = tmp_path_factory.mktemp("cu_home")
    state = home / "board.json"
    write_config(home, screen_size="1920x1200", screenshot_size="1280x800", startup=[tk_board(state)])
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HERMES_HOME", str(home))
        desk = Desk(home)
        desk.ok(action="cursor_position")  # starts the display and the board
        deadline = time.monotonic() + 10
        while not read_state(state).get("target") and time.monotonic() < deadline:
            time.sleep(0.05)
        yield desk, state
        desk.close()


def image_of(result: Any) -> Any:
    from PIL import Image

    url = result.metadata["images"][0]
    assert url.startswith("data:image/png;base64,")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")


def model_point(real: list[int]) -> list[int]:
    """The centre of a real rectangle in model pixels, computed here independently (2/3 scale)."""
    left, top, width, height = real
    return [(left + width // 2) * 2 // 3, (top + height // 2) * 2 // 3]


def inside(point: list[int], rect: list[int]) -> bool:
    return rect[0] <= point[0] < rect[0] + rect[2] and rect[1] <= point[1] < rect[1] + rect[3]


def test_screenshot_is_scaled_and_every_red_pixel_clicked_lands_on_the_target(board: tuple[Desk, Path]) -> None:
    desk, state_path = board
    result = desk(action="screenshot")
    assert not result.is_error, result.text
    answer = json.loads(result.text)
    assert answer["screen"] == list(MODEL) and (answer["width"], answer["height"]) == MODEL
    image = image_of(result)
    assert image.size == MODEL
    red = [(x, y) for y in range(image.size[1]) for x in range(image.size[0])
           if image.getpixel((x, y)) == (255, 0, 0)]
    assert red, "the red 9x9 target is visible in the scaled screenshot"
    target = read_state(state_path)["target"]
    before = len(read_state(state_path)["target_clicks"])
    for x, y in red:
        clicked = desk.ok(action="left_click", coordinate=[x, y])
        assert clicked["cursor"] == [x, y]  # the pointer's position read back in model pixels
    deadline = time.monotonic() + 5
    while len(read_state(state_path)["target_clicks"]) < before + len(red) and time.monotonic() < deadline:
        time.sleep(0.05)
    clicks = read_state(state_path)["target_clicks"][before:]
    assert len(clicks) == len(red)
    assert all(inside(c, target) for c in clicks), (clicks, target)


def test_type_into_the_field_edit_it_and_press_the_button(board: tuple[Desk, Path]) -> None:
    desk, state_path = board
    layout = read_state(state_path)
    desk.ok(action="triple_click", coordinate=model_point(layout["entry"]))
    typed = desk.ok(action="type", text="Hello, Wörld! 12345")
    assert typed["typed_characters"] == 19
    desk.ok(action="key", keys="BackSpace", repeat=2)
    desk.ok(action="left_click", coordinate=model_point(layout["button"]))
    deadline = time.monotonic() + 5
    while read_state(state_path).get("saved", 0) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert read_state(state_path)["saved_text"] == "Hello, Wörld! 123"


def test_a_sequence_runs_in_order_and_ends_with_a_screenshot(board: tuple[Desk, Path]) -> None:
    desk, state_path = board
    layout = read_state(state_path)
    saved = layout["saved"]
    result = desk(actions=[{"action": "triple_click", "coordinate": model_point(layout["entry"])},
                           {"action": "type", "text": "second"},
                           {"action": "key", "keys": "shift+Home"},
                           {"action": "key", "keys": "ctrl+c"},
                           {"action": "left_click", "coordinate": model_point(layout["button"])}],
                  screenshot=True)
    assert not result.is_error, result.text
    steps = json.loads(result.text)["steps"]
    assert [s["action"] for s in steps] == ["triple_click", "type", "key", "key", "left_click", "screenshot"]
    assert image_of(result).size == MODEL
    deadline = time.monotonic() + 5
    while read_state(state_path)["saved"] == saved and time.monotonic() < deadline:
        time.sleep(0.05)
    assert read_state(state_path)["saved_text"] == "second"


def test_zoom_shows_a_region_larger(board: tuple[Desk, Path]) -> None:
    desk, state_path = board
    x, y = model_point(read_state(state_path)["target"])
    result = desk(action="zoom", region=[x - 10, y - 10, x + 9, y + 9])
    answer = json.loads(result.text)
    image = image_of(result)
    assert image.size == (answer["width"], answer["height"]) and image.size[0] >= 200  # 30 real px, magnified
    centre = image.getpixel((image.size[0] // 2, image.size[1] // 2))
    assert centre == (255, 0, 0)
    assert "not screen coordinates" in answer["note"]


def test_the_tk_window_has_no_accessibility_tree_so_windows_are_listed(board: tuple[Desk, Path]) -> None:
    desk, _ = board
    listing = desk.ok(action="accessibility")
    assert listing["source"] == "x11-windows"
    assert "only top-level windows" in listing["note"]
    names = [e["name"] for e in listing["elements"]]
    assert "Hermes Tk board" in names


def settled(state_path: Path, check: Any) -> dict[str, Any]:
    deadline = time.monotonic() + 5
    while not check(read_state(state_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return read_state(state_path)


def near(real: list[int], model: list[int]) -> bool:
    """The real pixel is the one under the model pixel's centre (1.5 real pixels per model pixel)."""
    return all(0 <= (m + 0.5) * 1.5 - r < 1 for r, m in zip(real, model, strict=True))


def test_drag_right_click_double_click_shift_click_and_scroll(board: tuple[Desk, Path]) -> None:
    desk, state_path = board
    before = read_state(state_path)
    left, top = before["canvas"][:2]
    start = [(left + 200) * 2 // 3, (top + 20) * 2 // 3]
    end = [(left + 320) * 2 // 3, (top + 60) * 2 // 3]
    desk.ok(action="left_click_drag", start_coordinate=start, coordinate=end)
    after = settled(state_path, lambda s: len(s["releases"]) > len(before["releases"]))
    assert near(after["target_clicks"][-1], start) and near(after["releases"][-1], end)

    desk.ok(action="right_click", coordinate=start)
    desk.ok(action="double_click", coordinate=end)
    desk.ok(action="wait", duration=0.7)  # past Tk's double-click time, so the next click is a single one
    desk.ok(action="left_click", coordinate=end, hold_keys="shift")
    desk.ok(action="scroll", coordinate=start, scroll_direction="down", scroll_amount=3)
    desk.ok(action="scroll", coordinate=start, scroll_direction="up", scroll_amount=1)
    after = settled(state_path, lambda s: s["wheel"]["up"] > before["wheel"]["up"])
    assert near(after["right_clicks"][-1], start)
    assert after["double_clicks"] == before["double_clicks"] + 1
    assert after["shift_clicks"] == before["shift_clicks"] + 1
    assert after["wheel"] == {"down": before["wheel"]["down"] + 3, "up": before["wheel"]["up"] + 1}


@pytest.mark.parametrize(("args", "words"), [
    ({"action": "left_click", "coordinate": [1280, 10]}, "off the screen: the screenshot is 1280x800"),
    ({"action": "mouse_move", "coordinate": [-1, 5]}, "x must be 0..1279"),
    ({"action": "key", "keys": "ctrl+frobnicate"}, "unknown key name 'frobnicate'"),
    ({"action": "key", "keys": "ctrl+alt+Delete"}, "never sent"),
    ({"action": "left_click", "element": 99}, "not in the latest listing"),
    ({"action": "mouse_move"}, "mouse_move needs 'coordinate'"),
    ({"action": "teleport"}, "'action' must be one of"),
    ({"action": "type"}, "type needs 'text'"),
    ({"action": "zoom", "region": [50, 50, 10, 10]}, "is empty"),
    ({"action": "screenshot", "actions": [{"action": "wait"}]}, "either 'action' or 'actions'"),
    ({"actions": [{"action": "wait", "duration": 0}, {"action": "key", "keys": "nope"}]},
     "step 2 (key): unknown key name 'nope'"),
    ({"action": "type", "text": "rm -rf ~ "}, "a recursive delete"),
])
def test_malformed_actions_answer_clear_errors(board: tuple[Desk, Path], args: dict[str, Any], words: str) -> None:
    desk, _ = board
    assert words in desk.error(**args)
