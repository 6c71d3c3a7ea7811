"""The one way a desktop_ui tool reaches the app's page: a ``ui`` request through the session's sink."""

from __future__ import annotations

import json
from typing import Any

from hermes.tools.context import session_of
from hermes.tools.requests import Request

TOOLSET = "desktop_ui"
NO_APP = ("no desktop app window to act on: the desktop_ui tools work only in sessions of the desktop app "
          "(`hermes desktop`)")


def ask_app(action: str, args: dict[str, Any], kw: dict[str, Any]) -> str:
    """Ask the page to do ``action`` with ``args``; its answer (what happened on screen) as JSON."""
    session = session_of(kw)
    if session is None:
        return json.dumps({"error": NO_APP})
    answer = session.sink.ask(Request("ui", {"action": action, "args": args}))
    if answer is None:
        return json.dumps({"error": NO_APP})
    return json.dumps(answer, ensure_ascii=False)


def handler(action: str) -> Any:
    """A registry handler that forwards its validated arguments to the page as ``action``."""

    def forward(args: dict[str, Any], **kw: Any) -> str:
        return ask_app(action, dict(args), kw)

    return forward


def schema(name: str, description: str, properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(required),
                           "additionalProperties": False}}


SURFACE = {"type": "string", "enum": ["app", "preview"],
           "description": "'app' (default): the app's own window; 'preview': the page shown in the preview pane"}
SELECTOR = {"type": "string", "minLength": 1, "maxLength": 500,
            "description": "A CSS selector, best a stable one from gui_tour(action='targets'), "
                           "e.g. [data-tour=\"composer\"]"}
