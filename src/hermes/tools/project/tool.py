"""``desktop_project`` — desktop projects: named workspaces grouping several folders (TS-6).

Projects live in ``HERMES_HOME/projects.json`` (:mod:`.store`), shared by every session and the app.
Opening one in a session lays it over the session's configuration (:mod:`.workspace`): the file tools
write only inside its folders and terminal commands start in its first folder, until it is closed or
the session ends. Creating a project, adding folders to one and deleting one ask the person first: they
change where the agent may write (creating and adding folders every time; an answer "for the session"
counts for that call only). A folder swapped for a symlink or another folder since it was approved keeps
the project from opening, and is never made writable while it is open (:meth:`Project.problems`).
"""

from __future__ import annotations

import json
import os
from typing import Any

from hermes.errors import ToolError
from hermes.tools.context import session_of
from hermes.tools.project.store import ProjectStore, check_name, resolve_folders
from hermes.tools.registry import registry
from hermes.tools.wrappers import EVERY_CALL

STATE_KEY = "desktop_project"
ACTIONS = ("list", "current", "create", "add_folders", "remove_folders", "rename", "delete", "open", "close")
#: actions that widen where the agent may write or drop the person's work: the person approves each
ASKING = frozenset({"create", "add_folders", "delete"})
#: of those, the ones that change a project's folders: asked every time (no approval for the session)
ASKING_EVERY_TIME = frozenset({"create", "add_folders"})

SCHEMA: dict[str, Any] = {
    "name": "desktop_project",
    "description": (
        "Desktop projects: named workspaces grouping several folders. 'list' shows them, 'current' the one "
        "open in this session. 'open' makes a project this session's workspace: file tools then write only "
        "inside its folders and terminal commands start in its first folder; 'close' goes back to the "
        "configured folders. 'create' (name, folders), 'add_folders', 'remove_folders', 'rename' "
        "(new_name) and 'delete' change the saved projects; create, add_folders and delete ask the person."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "name": {"type": "string", "description": "The project's name (all actions but list, current, close)"},
            "folders": {"type": "array", "items": {"type": "string"}, "maxItems": 32,
                        "description": "Folder paths (create, add_folders, remove_folders); the first one "
                                       "of a new project is where terminal commands start"},
            "new_name": {"type": "string", "description": "The new name (rename)"},
        },
        "required": ["action"],
    },
}


def _store(session: Any) -> ProjectStore:
    from hermes.config.paths import HermesPaths

    settings = session.settings if session is not None else None
    return ProjectStore(settings.paths.home if settings is not None else HermesPaths.current().home)


def open_project(session: Any, name: str | None) -> dict[str, Any]:
    """Lay project ``name`` over the session's settings (None: take the layer off)."""
    from hermes.tools.project.workspace import project_settings

    state: dict[str, Any] = session.state.setdefault(STATE_KEY, {})
    base = state.setdefault("base", session.settings)
    if name is None:
        if base is not None:
            session.use_settings(base)
        state.pop("open", None)
        return {"closed": True, "note": "the file tools and terminal use the configured folders again"}
    if base is None:
        raise ToolError("this session has no settings to lay a project over")
    project = _store(session).get(name)
    problems = project.problems()
    if problems:
        raise ToolError(f"project {name!r} cannot be opened: {'; '.join(problems)}. Remove such a folder with "
                        "action='remove_folders', or approve it again as it is now with action='add_folders'")
    session.use_settings(project_settings(base, project))
    state["open"] = project.name
    return {"open": project.name, "folders": list(project.folders), "cwd": project.primary,
            "note": "file tools now write only inside these folders; terminal commands start in "
                    f"{project.primary}"}


def desktop_project(args: dict[str, Any], **kw: Any) -> str:
    session = session_of(kw)
    if session is None:
        raise ToolError("desktop_project works inside a session")
    action = args["action"]
    store = _store(session)
    current = session.state.get(STATE_KEY, {}).get("open")
    out: dict[str, Any]
    if action == "list":
        out = {"projects": [{**p.as_dict(), "open": p.name == current} for p in store.list()]}
    elif action == "current":
        out = {"open": current, **({"folders": list(store.get(current).folders)} if current else {})}
    elif action == "close":
        out = open_project(session, None)
    else:
        name = check_name(args.get("name"))
        if action == "open":
            out = open_project(session, name)
        elif action == "create":
            out = {"created": store.create(name, resolve_folders(args.get("folders"))).as_dict()}
        elif action == "add_folders":
            out = {"changed": store.change(name, add=resolve_folders(args.get("folders"))).as_dict()}
        elif action == "remove_folders":
            given = args.get("folders") or []
            gone = tuple(os.path.realpath(os.path.abspath(os.path.expanduser(str(f)))) for f in given)
            out = {"changed": store.change(name, remove=gone).as_dict()}
        elif action == "rename":
            out = {"changed": store.change(name, rename=check_name(args.get("new_name"))).as_dict()}
        else:
            out = {"deleted": store.delete(name)}
        if name == current and action != "open":
            out["note"] = "the open project changed: open it again for the change to apply here" \
                if action != "delete" else "the deleted project stays this session's workspace until closed"
    return json.dumps(out, ensure_ascii=False)


def _asks(args: dict[str, Any], session: Any) -> bool | str:
    action = args.get("action")
    return EVERY_CALL if action in ASKING_EVERY_TIME else action in ASKING


registry.register(name="desktop_project", toolset="project", schema=SCHEMA, handler=desktop_project,
                  needs_session=True, parallel_safe=False, requires_approval=_asks)
