"""``read_window_below``, ``focus_pane``, ``react_to_message``, ``set_theme``: the app's window itself."""

from __future__ import annotations

from hermes.tools.desktop_ui.app import TOOLSET, handler, schema
from hermes.tools.registry import registry

PANES = ["sessions", "chat", "preview", "terminal", "settings"]

READ_WINDOW_BELOW_SCHEMA = schema(
    "read_window_below",
    "Read the part of the desktop app's window below the chat (the dock: the preview or terminal pane, "
    "whichever is open) as the person sees it: which pane, its caption and its visible text.",
    {"max_chars": {"type": "integer", "minimum": 100, "maximum": 50000, "description": "Default 8000"}},
)

FOCUS_PANE_SCHEMA = schema(
    "focus_pane",
    "Bring one pane of the desktop app to the front and focus it. Returns the pane now shown.",
    {"pane": {"type": "string", "enum": PANES}},
    ("pane",),
)

REACT_TO_MESSAGE_SCHEMA = schema(
    "react_to_message",
    "Put a small emoji reaction on a message of the conversation the person sees (default: their last "
    "message), e.g. to acknowledge it without a reply. Returns which message got it.",
    {"emoji": {"type": "string", "minLength": 1, "maxLength": 16, "description": "One emoji, e.g. 👍"},
     "message": {"type": "string", "enum": ["last_user", "last_assistant"], "description": "Default last_user"}},
    ("emoji",),
)

SET_THEME_SCHEMA = schema(
    "set_theme",
    "Switch the desktop app's colour theme (light, dark, or follow the system). Returns the theme now shown.",
    {"theme": {"type": "string", "enum": ["light", "dark", "system"]}},
    ("theme",),
)

registry.register(name="read_window_below", toolset=TOOLSET, schema=READ_WINDOW_BELOW_SCHEMA,
                  handler=handler("read_window_below"), needs_session=True)
registry.register(name="focus_pane", toolset=TOOLSET, schema=FOCUS_PANE_SCHEMA, handler=handler("focus_pane"),
                  needs_session=True)
registry.register(name="react_to_message", toolset=TOOLSET, schema=REACT_TO_MESSAGE_SCHEMA,
                  handler=handler("react_to_message"), needs_session=True)
registry.register(name="set_theme", toolset=TOOLSET, schema=SET_THEME_SCHEMA, handler=handler("set_theme"),
                  needs_session=True)
