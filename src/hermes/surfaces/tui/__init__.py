"""``hermes tui``: the full-screen terminal client of the app server (docs/tui.md), on Textual.

:mod:`~hermes.surfaces.tui.client` speaks the app server's JSON-RPC over a WebSocket;
:mod:`~hermes.surfaces.tui.app` is the Textual application. Textual is the ``tui`` extra and is
imported only when the TUI starts. Sessions it creates are on the ``tui`` surface (TS-2: no
``catalog`` or ``desktop_ui``).
"""
