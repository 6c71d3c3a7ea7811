"""``read_terminal`` and ``close_terminal``: the terminal pane's tabs as the person sees them."""

from __future__ import annotations

from hermes.tools.desktop_ui.app import TOOLSET, handler, schema
from hermes.tools.registry import registry

READ_TERMINAL_SCHEMA = schema(
    "read_terminal",
    "Read what a terminal tab of the desktop app shows (the person's integrated terminal, or a background "
    "process's read-only tab). Returns {terminal, total_lines, start, end, viewport_rows, cursor_row, text}. "
    "Without start_line you get the last `count` lines.",
    {"terminal": {"type": "string", "minLength": 1, "description": "Tab id (default: the active tab)"},
     "start_line": {"type": "integer", "minimum": 0, "description": "First line to read (0 = the oldest kept)"},
     "count": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "Lines to read (default 200)"}},
)

CLOSE_TERMINAL_SCHEMA = schema(
    "close_terminal",
    "Close a terminal tab of the desktop app. A background process's read-only tab is closed without "
    "stopping the process (use process_manage to kill it); a shell tab's shell is ended.",
    {"process_id": {"type": "string", "minLength": 1,
                    "description": "The tab's id: a background process_id or a shell tab id (term-...)"}},
    ("process_id",),
)

registry.register(name="read_terminal", toolset=TOOLSET, schema=READ_TERMINAL_SCHEMA, handler=handler("read_terminal"),
                  needs_session=True)
registry.register(name="close_terminal", toolset=TOOLSET, schema=CLOSE_TERMINAL_SCHEMA,
                  handler=handler("close_terminal"), needs_session=True)
