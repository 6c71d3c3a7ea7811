"""Running ``computer_use`` actions on a session's desktop.

One call is one action, or a sequence of them (``actions=[...]``, approved and run as one). Coordinates
are the model's (the scaled screenshot's) and are mapped to real pixels here; ``element=N`` acts at the
centre of element N of the latest accessibility listing. Before every step the kill switch and the
turn's interrupt are checked.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hermes.errors import ToolArgumentError, ToolError
from hermes.tools.computer_use import ACTIONS, INPUT_ACTIONS
from hermes.tools.computer_use.a11y import Element, atspi_elements, x11_windows
from hermes.tools.computer_use.config import ComputerUseConfig
from hermes.tools.computer_use.display import Desktop
from hermes.tools.computer_use.screen import Shot

_CLICKS = {"left_click": ("left", 1), "right_click": ("right", 1), "middle_click": ("middle", 1),
           "double_click": ("left", 2), "triple_click": ("left", 3)}
#: text that is never typed, whatever the display (a shell on it would run it unasked)
_BLOCKED_TEXT = (
    (re.compile(r"\brm\s+(-[a-zA-Z]*[rR][a-zA-Z]*\s+)+(-[a-zA-Z]+\s+)*(/|~|\$HOME|\*)(\s|$)"), "a recursive delete"),
    (re.compile(r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:"), "a fork bomb"),
    (re.compile(r"\b(curl|wget)\b[^\n|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b"), "a download piped into a shell"),
    (re.compile(r"\bmkfs(\.\w+)?\s+/dev/|\bdd\b[^\n]*\bof=/dev/(sd|nvme|hd|vd)"), "a disk overwrite"),
)
_TYPED_TAIL = 256
MAX_ELEMENTS = 200


@dataclass
class DesktopState:
    """What one session keeps: its desktop, the latest element listing, the tail of what it typed."""

    desktop: Desktop
    elements: list[Element] = field(default_factory=list)
    typed: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Outcome:
    """What a call answers: a JSON object for the model and screenshots attached for it."""

    result: dict[str, Any] = field(default_factory=dict)
    shots: list[Shot] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check_text(text: str, state: DesktopState) -> None:
    """Refuse text that holds a stored secret (also when typed in pieces) or a blocked command."""
    from hermes.tools.guard import find_secret

    secret = find_secret(text) or find_secret(state.typed + text)
    if secret:
        raise ToolError(f"refused: the text to type looks like it contains {secret}; computer_use never types "
                        "stored secrets. Ask the person to type it themselves.")
    for pattern, what in _BLOCKED_TEXT:
        if pattern.search(text):
            raise ToolError(f"refused: the text to type holds {what}, which computer_use never types")


def _point(step: dict[str, Any], state: DesktopState, key: str = "coordinate") -> tuple[int, int] | None:
    desktop = state.desktop
    assert desktop.scale is not None
    if key == "coordinate" and step.get("element") is not None:
        index = int(step["element"])
        if not state.elements:
            raise ToolArgumentError("'element' needs an element listing first: call action='accessibility'")
        if not 1 <= index <= len(state.elements):
            raise ToolArgumentError(f"'element' {index} is not in the latest listing (1..{len(state.elements)})")
        return state.elements[index - 1].centre()
    value = step.get(key)
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)):
        raise ToolArgumentError(f"'{key}' must be [x, y] in screenshot pixels")
    return desktop.scale.to_real(value[0], value[1])


def _needs_point(step: dict[str, Any], state: DesktopState, action: str) -> tuple[int, int]:
    point = _point(step, state)
    if point is None:
        assert state.desktop.input is not None
        if action == "mouse_move":
            raise ToolArgumentError("mouse_move needs 'coordinate' [x, y] or 'element'")
        return state.desktop.input.cursor()
    return point


def run_step(step: dict[str, Any], state: DesktopState, cfg: ComputerUseConfig, out: Outcome,
             cancelled: Callable[[], bool]) -> dict[str, Any]:
    """Run one action; its part of the answer."""
    desktop = state.desktop
    inp, scale = desktop.input, desktop.scale
    assert inp is not None and scale is not None
    action = str(step.get("action"))
    if desktop.killed:
        raise ToolError(f"computer_use is stopped for this session: {desktop.killed}")
    if cancelled():
        raise ToolError("the turn was interrupted; no further input is sent")
    done: dict[str, Any] = {"action": action}
    if action == "screenshot":
        done.update(_screenshot(state, cfg, out, None))
    elif action == "zoom":
        region = step.get("region")
        if not (isinstance(region, list) and len(region) == 4):
            raise ToolArgumentError("zoom needs 'region' [left, top, right, bottom] in screenshot pixels")
        done.update(_screenshot(state, cfg, out, scale.region_to_real(*region)))
    elif action == "cursor_position":
        done["coordinate"] = list(scale.to_model(*inp.cursor()))
    elif action == "accessibility":
        done.update(list_elements(state, cfg))
    elif action == "wait":
        seconds = float(step.get("duration", 1.0))
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not desktop.killed and not cancelled():
            time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
    elif action == "mouse_move":
        inp.move(*_needs_point(step, state, action))
    elif action in _CLICKS or action == "click":
        button, count = _CLICKS.get(action, (str(step.get("button", "left")), int(step.get("count", 1))))
        inp.click(*_needs_point(step, state, action), button=button, count=count, hold=step.get("hold_keys"))
    elif action == "left_click_drag":
        end = _point(step, state)
        if end is None:
            raise ToolArgumentError("left_click_drag needs 'coordinate' (where to drop) or 'element'")
        start = _point(step, state, "start_coordinate") or inp.cursor()
        inp.drag([start, end], str(step.get("button", "left")))
    elif action in ("left_mouse_down", "left_mouse_up"):
        point = _point(step, state)
        if point is not None:
            inp.move(*point)
        inp.mouse("left", action == "left_mouse_down")
    elif action == "scroll":
        direction = step.get("scroll_direction")
        if direction is None:
            raise ToolArgumentError("scroll needs 'scroll_direction' (up, down, left or right)")
        inp.scroll(*_needs_point(step, state, action), str(direction), int(step.get("scroll_amount", 3)))
    elif action == "type":
        text = step.get("text")
        if not isinstance(text, str) or not text:
            raise ToolArgumentError("type needs 'text'")
        check_text(text, state)
        if _point(step, state) is not None:
            inp.click(*_needs_point(step, state, action))
        inp.type(text)
        state.typed = (state.typed + text)[-_TYPED_TAIL:]
        done["typed_characters"] = len(text)
    elif action == "key":
        keys = step.get("keys")
        if not isinstance(keys, str) or not keys.strip():
            raise ToolArgumentError("key needs 'keys', e.g. 'Return' or 'ctrl+s'")
        if len(keys.strip()) == 1:
            check_text(keys.strip(), state)
            state.typed = (state.typed + keys.strip())[-_TYPED_TAIL:]
        inp.key(keys, int(step.get("repeat", 1)))
    else:
        raise ToolArgumentError(f"unknown action {action!r}; known actions: {', '.join(ACTIONS)}")
    if action in INPUT_ACTIONS:
        done["cursor"] = list(scale.to_model(*inp.cursor()))
    return done


def _screenshot(state: DesktopState, cfg: ComputerUseConfig, out: Outcome,
                region: tuple[int, int, int, int] | None) -> dict[str, Any]:
    desktop = state.desktop
    assert desktop.scale is not None
    scale = desktop.scale
    if region is None:
        box, size = (0, 0, *scale.real), scale.model
    else:
        box = region
        limit = cfg.screenshot_size
        factor = min(limit[0] / region[2], limit[1] / region[3], 8.0)
        size = (max(1, round(region[2] * factor)), max(1, round(region[3] * factor)))
    info: dict[str, Any] = {"width": size[0], "height": size[1]}
    if region is not None:
        info["note"] = ("a zoomed view for reading only: its pixels are not screen coordinates; click with the "
                        "coordinates of the full screenshot")
    if not cfg.model_sees_images:
        info["image"] = ("not attached: the session's model is not marked as accepting images (model.vision: "
                         "false). Read the screen with action='accessibility', or set model.vision: true.")
        return info
    out.shots.append(desktop.camera.shot(box, size, cfg.image_format))
    info["image"] = "attached below for you (only the session's model sees it)"
    return info


def list_elements(state: DesktopState, cfg: ComputerUseConfig) -> dict[str, Any]:
    """The accessibility listing of the active window (AT-SPI), else the window list (X11)."""
    desktop = state.desktop
    assert desktop.scale is not None
    source, title, why = "x11-windows", None, ""
    elements: list[Element] = []
    bus = desktop.env.get("DBUS_SESSION_BUS_ADDRESS")
    if cfg.accessibility and bus:
        try:
            elements, title = atspi_elements(bus, MAX_ELEMENTS)
            source = "at-spi"
        except Exception as exc:  # no accessibility bus on this session: say so, fall back to windows
            why = f"AT-SPI unavailable ({type(exc).__name__}: {str(exc)[:120]})"
    elif not cfg.accessibility:
        why = "computer_use.accessibility is off"
    else:
        why = "no D-Bus session bus on this display"
    if not elements:
        if source == "at-spi":
            why = "no program on this display publishes an accessibility tree"
        source = "x11-windows"
        elements, title = x11_windows(desktop.x, desktop.client_windows(), MAX_ELEMENTS)
    state.elements = elements
    shown: dict[str, Any] = {"source": source, "active_window": title,
                             "elements": [e.shown(desktop.scale) for e in elements]}
    if why and source == "x11-windows":
        shown["note"] = f"only top-level windows are listed: {why}"
    return shown
