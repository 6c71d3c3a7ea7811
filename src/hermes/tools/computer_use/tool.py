"""Schema and registration of ``computer_use`` (toolset ``computer_use``, opt-in; docs/tools/computer-use.md).

Available only when a display can be opened here (:func:`~.config.display_ready`, offline). The first
call of a session starts its display — a private Xvfb, or the person's own ``DISPLAY`` with
``computer_use.display: own`` — which ends with the session. On the person's own display every call
needs their approval (once, or for the session); on hermes's private display it does not.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError, ToolArgumentError, ToolError
from hermes.tools.computer_use import ACTIONS
from hermes.tools.context import on_session_end
from hermes.tools.registry import registry
from hermes.tools.results import ToolResult

if TYPE_CHECKING:
    from hermes.tools.computer_use.actions import DesktopState

logger = logging.getLogger(__name__)
STATE_KEY = "computer_use"
#: seconds between the steps of a sequence
STEP_PAUSE = 0.05

_POINT = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}
_STEP: dict[str, Any] = {
    "action": {"type": "string", "enum": list(ACTIONS),
               "description": "What to do (see the tool description)."},
    "coordinate": {**_POINT, "description": "[x, y] in the pixels of the latest screenshot."},
    "element": {"type": "integer", "minimum": 1,
                "description": "Act at the centre of this element of the latest accessibility listing."},
    "start_coordinate": {**_POINT, "description": "left_click_drag: where the drag starts (default: the cursor)."},
    "button": {"type": "string", "enum": ["left", "right", "middle"], "description": "click: the button."},
    "count": {"type": "integer", "minimum": 1, "maximum": 3, "description": "click: 2 double, 3 triple."},
    "hold_keys": {"type": "string", "maxLength": 60,
                  "description": "Clicks: modifier keys held during the click, e.g. 'shift' or 'ctrl'."},
    "text": {"type": "string", "maxLength": 10_000, "description": "type: the text to type."},
    "keys": {"type": "string", "maxLength": 100,
             "description": "key: a key or combination, e.g. 'Return', 'ctrl+s', 'alt+Tab', 'Page_Down'."},
    "repeat": {"type": "integer", "minimum": 1, "maximum": 50, "description": "key: presses (default 1)."},
    "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
    "scroll_amount": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Wheel notches (default 3)."},
    "duration": {"type": "number", "minimum": 0, "maximum": 30, "description": "wait: seconds (default 1)."},
    "region": {"type": "array", "items": {"type": "integer"}, "minItems": 4, "maxItems": 4,
               "description": "zoom: [left, top, right, bottom] in screenshot pixels."},
}
SCHEMA: dict[str, Any] = {
    "name": "computer_use",
    "description": (
        "Operate a desktop with screenshots, the mouse and the keyboard. Actions: screenshot; zoom (region, a "
        "closer look at part of the screen); accessibility (the active window's elements: role, name, bounds, "
        "state — act on one with element=N); mouse_move; left_click, right_click, middle_click, double_click, "
        "triple_click, or click with button and count (at coordinate or element; hold_keys for modifiers); "
        "left_click_drag (start_coordinate to coordinate); left_mouse_down / left_mouse_up; type (text; with a "
        "coordinate or element it clicks there first); key (keys such as 'ctrl+s', repeat); scroll "
        "(scroll_direction, scroll_amount, at coordinate); wait (duration); cursor_position. Coordinates are "
        "pixels of the latest screenshot. Set screenshot=true to get a screenshot after the action(s). Several "
        "steps can go in one call as actions=[{...}, ...]; they run in order and stop at the first error."),
    "parameters": {
        "type": "object",
        "properties": {
            **_STEP,
            "screenshot": {"type": "boolean", "description": "Take a screenshot after the action(s)."},
            "actions": {"type": "array", "minItems": 1, "maxItems": 20,
                        "items": {"type": "object", "properties": _STEP, "required": ["action"],
                                  "additionalProperties": False},
                        "description": "A sequence of steps (each with its own action) instead of one action."},
        },
        "additionalProperties": False,
    },
}


def computer_use_available() -> tuple[bool, str | None]:
    """Offline: the Python packages and a display that can be opened (Xvfb on PATH, or own DISPLAY)."""
    try:
        from hermes.config.settings import Settings
        from hermes.tools.computer_use.config import display_ready

        ready, why = display_ready(Settings.load())
    except HermesError as exc:
        return False, str(exc)
    return ready, None if ready else why


def _settings(session: Any) -> Any:
    settings = getattr(session, "settings", None)
    if settings is None:
        from hermes.config.settings import Settings

        settings = Settings.load()
    return settings


def needs_approval(args: dict[str, Any], session: Any) -> bool:
    """On the person's own display every call needs their approval; on hermes's private one none does."""
    from hermes.tools.computer_use.config import computer_use_config

    try:
        return computer_use_config(_settings(session)).own
    except HermesError:
        return True


def _desktop_state(session: Any, cfg: Any) -> DesktopState:
    from hermes.tools.computer_use import actions
    from hermes.tools.computer_use.display import Desktop

    existing = session.state.get(STATE_KEY)
    if isinstance(existing, actions.DesktopState):
        return existing
    desktop = Desktop.open_own(cfg) if cfg.own else Desktop.start_xvfb(cfg)
    state = actions.DesktopState(desktop)
    session.state[STATE_KEY] = state
    on_session_end({"session": session}, STATE_KEY, lambda: _end(session))
    _arm_hotkey(desktop)
    return state


def _arm_hotkey(desktop: Any) -> None:
    from hermes.tools.computer_use.display import open_x
    from hermes.tools.computer_use.killswitch import Hotkey

    hotkey = desktop.cfg.kill_hotkey
    if not hotkey or hotkey == "none":
        return
    try:
        desktop.hotkey = Hotkey(open_x(desktop.name, desktop.xauthority), hotkey,
                                lambda: desktop.kill(f"the person pressed the kill hotkey ({hotkey})"))
    except (ValueError, ToolError, HermesError) as exc:
        logger.warning("computer_use: the kill hotkey %s is not armed: %s", hotkey, exc)


def _end(session: Any) -> None:
    from hermes.tools.computer_use import actions

    state = session.state.pop(STATE_KEY, None)
    if isinstance(state, actions.DesktopState):
        state.desktop.stop()


def computer_use(args: dict[str, Any], *, session: Any, **kw: Any) -> ToolResult:
    from hermes.tools.computer_use import actions  # the desktop machinery: on the first call, not at start-up
    from hermes.tools.computer_use.config import computer_use_config
    from hermes.tools.computer_use.xinput import Stopped

    cfg = computer_use_config(_settings(session))
    steps = args.get("actions")
    if steps is None:
        if "action" not in args:
            raise ToolArgumentError("give 'action' (e.g. 'screenshot') or 'actions' [{action: ...}, ...]")
        steps = [{k: v for k, v in args.items() if k not in ("screenshot", "actions")}]
    elif "action" in args:
        raise ToolArgumentError("give either 'action' or 'actions', not both")
    state = _desktop_state(session, cfg)
    context = getattr(session, "context", None)
    cancelled = getattr(context, "cancelled", None) or (lambda: False)
    outcome = actions.Outcome()
    done: list[dict[str, Any]] = []
    with state.lock:
        desktop = state.desktop
        desktop.cancelled = cancelled
        try:
            for i, step in enumerate(steps):
                if i:
                    time.sleep(STEP_PAUSE)  # programs see a click before the keys that follow it
                try:
                    done.append(actions.run_step(step, state, cfg, outcome, cancelled))
                except (ToolError, ToolArgumentError) as exc:
                    if len(steps) == 1:
                        raise
                    raise type(exc)(f"step {i + 1} ({step.get('action')}): {exc}; the steps before it ran") from None
            if args.get("screenshot"):
                done.append(actions.run_step({"action": "screenshot"}, state, cfg, outcome, cancelled))
        except Stopped as exc:
            raise ToolError(str(exc)) from None
        finally:
            desktop.cancelled = None
    assert desktop.scale is not None
    result: dict[str, Any] = {"display": desktop.name, "own_display": desktop.own,
                              "screen": list(desktop.scale.model)}
    if len(done) == 1 and args.get("actions") is None:
        result.update(done[0])
    else:
        result["steps"] = done
    metadata: dict[str, Any] = {}
    if outcome.shots:
        metadata["images"] = [shot.data_url() for shot in outcome.shots]
    return ToolResult(json.dumps(result, ensure_ascii=False), metadata=metadata)

registry.register(name="computer_use", toolset="computer_use", schema=SCHEMA, handler=computer_use,
                  check_fn=computer_use_available, needs_session=True, requires_approval=needs_approval,
                  parallel_safe=False, max_result_chars=60_000)
