"""``desktop_ui`` — the desktop app's 11 tools (requirements TS-5, T-DESK), docs/tools/desktop_ui.md.

Each tool asks the desktop app's page to do something on screen and answers what the page reports
back. The request travels through the session's sink as a :class:`~hermes.tools.requests.Request` of
kind ``"ui"`` (``{"action": <tool name>, "args": {...}}``); the app server hands it to the desktop pages
showing the session and returns the first page's answer (appserver/ui_bridge.py). The toolset exists
only on the desktop surface; elsewhere, or with no app window open, a call is a clear error.

* :mod:`.terminals` — ``read_terminal``, ``close_terminal``;
* :mod:`.preview` — ``desktop_preview``, ``drive_preview``, ``annotate_preview``;
* :mod:`.panes` — ``read_window_below``, ``focus_pane``, ``react_to_message``, ``set_theme``;
* :mod:`.tour` — ``gui_tour``, ``show_tip`` (switched off by ``display.in_app_tours`` /
  ``display.in_app_tips``: absent from the next session's schema, refused by the page meanwhile).
"""
