"""``gui_tour`` and ``show_tip``: guided tours and one-line tips on the desktop app (T-DESK).

``gui_tour(action='start')`` plays the built-in tour (``preset='quick'``: sessions, composer, new session,
model; ``'full'``, the default, adds the current screen's spots; missing targets are skipped; built-in
tours only on ``surface='app'``) or the given ``steps`` (each a selector, title and text, optionally
``navigate`` to a route or ``pane`` to show first; late targets are waited for); ``preset`` and ``steps``
are exclusive. Closing the tour (✕ or Esc) returns the app to where it started. ``action='targets'``
lists what can be pointed at: selector, label and ``stable``, stable ones first. ``show_tip`` is one
bubble with one arrow, no overlay; a new tip replaces the last. ``display.in_app_tours`` /
``display.in_app_tips`` off removes them from the next session's schema; the page refuses them meanwhile.
"""

from __future__ import annotations

from typing import Any

from hermes.errors import ToolError
from hermes.tools.desktop_ui.app import SELECTOR, SURFACE, TOOLSET, ask_app, schema
from hermes.tools.registry import registry

STEP = {
    "type": "object",
    "properties": {
        "selector": SELECTOR,
        "title": {"type": "string", "maxLength": 120},
        "text": {"type": "string", "maxLength": 1000},
        "navigate": {"type": "string", "pattern": "^/", "maxLength": 200,
                     "description": "A route to go to first, e.g. /settings"},
        "pane": {"type": "string", "enum": ["sessions", "chat", "preview", "terminal", "settings"],
                 "description": "A pane to show first"},
    },
    "required": ["selector"],
    "additionalProperties": False,
}

GUI_TOUR_SCHEMA = schema(
    "gui_tour",
    "Guide the person around the desktop app. action 'targets' lists pointable elements (selector, label, "
    "stable; prefer stable ones, they survive re-renders); 'start' plays the built-in tour (preset 'quick' or "
    "'full', default 'full'; app surface only) or your own steps (not together with preset); 'stop' ends it. "
    "The person can close a tour with ✕ or Esc; the app then returns to where it started.",
    {"action": {"type": "string", "enum": ["start", "targets", "stop"]},
     "preset": {"type": "string", "enum": ["quick", "full"]},
     "steps": {"type": "array", "items": STEP, "minItems": 1, "maxItems": 30},
     "surface": SURFACE},
    ("action",),
)

SHOW_TIP_SCHEMA = schema(
    "show_tip",
    "Point at one element of the desktop app with a one-line tip bubble (no overlay; a new tip replaces the "
    "previous one). Use a selector from gui_tour(action='targets').",
    {"selector": SELECTOR, "text": {"type": "string", "minLength": 1, "maxLength": 300},
     "title": {"type": "string", "maxLength": 120}, "surface": SURFACE},
    ("selector", "text"),
)


def gui_tour(args: dict[str, Any], **kw: Any) -> str:
    action = args["action"]
    surface = args.get("surface", "app")
    if action == "start":
        if "preset" in args and "steps" in args:
            raise ToolError("'preset' and 'steps' are exclusive: play the built-in tour or your own steps")
        if "steps" not in args and surface != "app":
            raise ToolError("the built-in tour plays only on surface 'app'; give 'steps' for the preview page")
        if "steps" not in args:
            args = {**args, "preset": args.get("preset", "full")}
    elif "preset" in args or "steps" in args:
        raise ToolError(f"'preset' and 'steps' belong to action 'start', not {action!r}")
    return ask_app("gui_tour", {**args, "surface": surface}, kw)


def show_tip(args: dict[str, Any], **kw: Any) -> str:
    return ask_app("show_tip", {**args, "surface": args.get("surface", "app")}, kw)


registry.register(name="gui_tour", toolset=TOOLSET, schema=GUI_TOUR_SCHEMA, handler=gui_tour, needs_session=True,
                  switch="display.in_app_tours", max_result_chars=20_000)
registry.register(name="show_tip", toolset=TOOLSET, schema=SHOW_TIP_SCHEMA, handler=show_tip, needs_session=True,
                  switch="display.in_app_tips")
