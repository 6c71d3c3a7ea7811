"""The app server's ``projects.*`` methods: the desktop app's project picker over the projects the
``desktop_project`` tool keeps (``HERMES_HOME/projects.json``, docs/tools/project.md).

* ``projects.list`` — every project (and, with ``session``, the one open in it);
* ``projects.create`` / ``projects.change`` / ``projects.delete`` — the person edits them in the app (so
  no approval is asked: the tool asks because there the *agent* widens where it may write); folders are
  checked exactly as the tool checks them (they must exist and be folders that may become writable);
* ``projects.open`` — make a project the workspace of one session (``name: null`` closes it). It is laid
  over the session when its agent opens (its first turn, or again after the server let it go while
  idle), or at once when the agent is open and no turn runs; the agent's own ``desktop_project`` action
  ``current`` then names it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError

if TYPE_CHECKING:
    from hermes.agent.loop import Agent
    from hermes.surfaces.appserver.rpc import AppApi, Client, Conversation
    from hermes.surfaces.host import LiveSession
    from hermes.tools.project.store import ProjectStore


class ProjectMethods:
    def __init__(self, api: AppApi) -> None:
        self.api = api

    def methods(self) -> dict[str, Callable[[Client, dict[str, Any]], Any]]:
        return {"projects.list": self.list_projects, "projects.create": self.create, "projects.change": self.change,
                "projects.delete": self.delete, "projects.open": self.open}

    def _store(self) -> ProjectStore:
        from hermes.tools.project.store import ProjectStore

        return ProjectStore(self.api.settings.paths.home)

    def list_projects(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"projects": []}
        for project in self._store().list():
            problems = project.problems()
            out["projects"].append({**project.as_dict(), "opens": not problems, "problems": problems})
        if params.get("session") is not None:
            conversation = self.api.conversation(params)
            out["session"], out["open"] = conversation.key, conversation.project
        return out

    def create(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.tools.project.store import check_name, resolve_folders

        name = check_name(params.get("name"))
        return {"created": self._store().create(name, resolve_folders(params.get("folders"))).as_dict()}

    def change(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        import os

        from hermes.tools.project.store import check_name, resolve_folders

        name = check_name(params.get("name"))
        add = resolve_folders(params["add"]) if params.get("add") else ()
        remove = params.get("remove") or []
        if not isinstance(remove, list) or not all(isinstance(f, str) for f in remove):
            from hermes.surfaces.appserver.rpc import INVALID_PARAMS, RpcError

            raise RpcError(INVALID_PARAMS, "'remove' must be a list of folder paths")
        gone = tuple(os.path.realpath(os.path.abspath(os.path.expanduser(f))) for f in remove)
        rename = check_name(params["new_name"]) if params.get("new_name") else None
        return {"changed": self._store().change(name, add=add, remove=gone, rename=rename).as_dict()}

    def delete(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.tools.project.store import check_name

        return {"deleted": self._store().delete(check_name(params.get("name")))}

    def open(self, client: Client, params: dict[str, Any]) -> dict[str, Any]:
        from hermes.surfaces.appserver.rpc import APP_ERROR, RpcError
        from hermes.tools.project.store import check_name

        conversation = self.api.conversation(params)
        name = None if params.get("name") is None else check_name(params.get("name"))
        if name is not None:
            project = self._store().get(name)
            problems = project.problems()
            if problems:
                raise RpcError(APP_ERROR, f"project {name!r} cannot be opened: {'; '.join(problems)}")
        live = self.api.host.get(conversation.key)
        out: dict[str, Any] = {"session": conversation.key, "open": name}
        if live is not None and live.agent is not None:
            with live.lock:
                if live.running:
                    raise RpcError(APP_ERROR, f"session {conversation.key} is running a turn; pick the project "
                                              "when it has finished")
                out.update(open_in(live.agent, name))
            conversation.project = name
            return out
        conversation.project = name
        out["note"] = "laid over the session when its first turn begins"
        return out


def open_in(agent: Agent, name: str | None) -> dict[str, Any]:
    """Open project ``name`` (None: close it) in ``agent``'s tool session; what the tool reports."""
    from hermes.tools.project.tool import open_project

    return open_project(agent.session, name)


def agent_opened(conversation: Conversation, session: LiveSession, agent: Agent) -> None:
    """The host opened the conversation's agent: lay its chosen project over it (a project that can no
    longer be opened is dropped, and its followers are told why)."""
    if conversation.project is None:
        return
    try:
        open_in(agent, conversation.project)
    except HermesError as exc:
        name, conversation.project = conversation.project, None
        conversation.api.broadcast(conversation.key, "event", {
            "session": conversation.key, "session_id": session.session_id, "type": "notice", "level": "warning",
            "message": f"project {name!r} was not opened: {exc}"})
