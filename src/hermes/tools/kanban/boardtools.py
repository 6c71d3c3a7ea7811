"""The 5 board tools of the ``kanban`` toolset, for orchestrators only.

A worker (``HERMES_KANBAN_TASK`` set) never sees them (their availability check fails) and a call from
one is refused by the handler too.
"""

from __future__ import annotations

from typing import Any

from hermes.errors import ToolError
from hermes.store.kanban.states import STATUSES
from hermes.tools.kanban import author, not_a_worker, open_board, require_orchestrator
from hermes.tools.registry import registry

TOOLSET = "kanban"
_ID = {"type": "string", "minLength": 1, "maxLength": 64}


def _list(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    require_orchestrator("kanban_list")
    limit = args.get("limit", 50)
    with open_board(kw) as board:
        tasks = board.tasks(status=args.get("status"), assignee=args.get("assignee"),
                            include_archived=bool(args.get("include_archived")), limit=limit + 1)
    shown = [t.to_dict() | {"body": t.body[:300]} for t in tasks[:limit]]
    return {"tasks": shown, "count": len(shown), "truncated": len(tasks) > limit}


def _workspace_path(args: dict[str, Any], kw: dict[str, Any]) -> str | None:
    """A model-given ``workspace_path`` (dir or worktree), resolved: refused inside HERMES_HOME (a worker
    there could plant a plugin loaded at start-up) and wherever the file tools may not write (a home
    dot-folder, a start-up or system location, outside ``file.allowed_roots``)."""
    raw = args.get("workspace_path")
    if not raw or args.get("workspace_kind", "scratch") == "scratch":
        return str(raw) if raw else None
    import os

    from hermes.config.paths import HermesPaths
    from hermes.tools.paths import check_write, resolve_path

    if not os.path.isabs(raw):
        raise ToolError("'workspace_path' must be an absolute path")
    path = resolve_path(raw, "workspace_path")
    home = resolve_path(str(HermesPaths.current().home), "HERMES_HOME")
    if path == home or home in path.parents:
        raise ToolError(f"'workspace_path': {path} lies inside HERMES_HOME ({home}), whose plugins and settings "
                        "hermes loads; give a project folder")
    check_write(path, kw, field="workspace_path")
    return str(path)


def _origin(kw: dict[str, Any]) -> str | None:
    """The creating session (``session:<id>``): the messaging gateway tells that chat about the task."""
    sid = getattr(kw.get("session"), "session_id", None)  # a ToolSession's stored session
    return f"session:{sid}" if isinstance(sid, str) and sid else None


def _create(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    require_orchestrator("kanban_create")
    workspace_path = _workspace_path(args, kw)
    with open_board(kw) as board:
        task, created = board.create(
            args["title"], created_by=author(), actor="orchestrator", assignee=args.get("assignee"),
            body=args.get("body", ""), priority=args.get("priority", 0), parents=args.get("parents", []),
            triage=bool(args.get("triage")), idempotency_key=args.get("idempotency_key"),
            workspace_kind=args.get("workspace_kind", "scratch"), workspace_path=workspace_path,
            origin=_origin(kw))
    return {"ok": True, "task_id": task.id, "status": task.status, "created": created}


def _link(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    require_orchestrator("kanban_link")
    with open_board(kw) as board:
        board.link(args["parent_id"], args["child_id"], actor="orchestrator", author=author())
        child = board.get(args["child_id"])
    return {"ok": True, "parent_id": args["parent_id"], "child_id": child.id, "child_status": child.status}


def _unblock(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    require_orchestrator("kanban_unblock")
    with open_board(kw) as board:
        task = board.move(args["task_id"], "ready", actor="orchestrator", author=author(), expected="blocked")
        if args.get("note"):
            board.comment(task.id, args["note"], author=author(), actor="orchestrator")
    return {"ok": True, "task_id": task.id, "status": task.status}


def _review(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    require_orchestrator("kanban_review")
    target = "done" if args["decision"] == "approve" else "ready"
    with open_board(kw) as board:
        task = board.move(args["task_id"], target, actor="orchestrator", author=author(),
                          reason=args.get("note"), expected="review")
        if args.get("note"):
            board.comment(task.id, args["note"], author=author(), actor="orchestrator")
    return {"ok": True, "task_id": task.id, "status": task.status}


LIST_SCHEMA: dict[str, Any] = {
    "name": "kanban_list",
    "description": "List tasks on the kanban board, highest priority first (archived ones only when asked).",
    "parameters": {"type": "object", "properties": {
        "status": {"type": "string", "enum": list(STATUSES), "description": "Only tasks in this status."},
        "assignee": {"type": "string", "maxLength": 64, "description": "Only tasks of this profile."},
        "include_archived": {"type": "boolean", "description": "Include archived tasks (default false)."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 200, "description": "At most this many (default 50)."},
    }, "additionalProperties": False},
}
CREATE_SCHEMA: dict[str, Any] = {
    "name": "kanban_create",
    "description": (
        "Create a kanban task for a profile to work on. It is ready at once, or todo until all its parents are "
        "done, or triage when asked. Reusing an idempotency_key returns the task created with it."),
    "parameters": {"type": "object", "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 300, "description": "What is to be done."},
        "assignee": {"type": "string", "minLength": 1, "maxLength": 64,
                     "description": "The profile that works on it (unassigned tasks are never dispatched)."},
        "body": {"type": "string", "maxLength": 100_000, "description": "Details, acceptance criteria."},
        "priority": {"type": "integer", "minimum": -100, "maximum": 100, "description": "Higher runs first (0)."},
        "parents": {"type": "array", "maxItems": 50, "items": _ID, "description": "Tasks that must finish first."},
        "triage": {"type": "boolean", "description": "Put it in triage for a person to accept first."},
        "idempotency_key": {"type": "string", "minLength": 1, "maxLength": 200,
                            "description": "Creating twice with the same key gives the same task."},
        "workspace_kind": {"type": "string", "enum": ["scratch", "dir", "worktree"],
                           "description": "scratch (a fresh folder, default), dir (workspace_path itself) or "
                                          "worktree (a git worktree of the repository at workspace_path)."},
        "workspace_path": {"type": "string", "maxLength": 4000,
                           "description": "Absolute path for dir/worktree: a folder the file tools may write "
                                          "(inside file.allowed_roots, never HERMES_HOME or a home dot-folder)."},
    }, "required": ["title"], "additionalProperties": False},
}
LINK_SCHEMA: dict[str, Any] = {
    "name": "kanban_link",
    "description": "Make one task a parent of another: the child waits until the parent is done. Cycles are refused.",
    "parameters": {"type": "object", "properties": {"parent_id": _ID, "child_id": _ID},
                   "required": ["parent_id", "child_id"], "additionalProperties": False},
}
UNBLOCK_SCHEMA: dict[str, Any] = {
    "name": "kanban_unblock",
    "description": "Unblock a blocked task: ready again (todo while a parent is open), with an optional note.",
    "parameters": {"type": "object", "properties": {
        "task_id": _ID, "note": {"type": "string", "maxLength": 20_000, "description": "Comment for the worker."}},
        "required": ["task_id"], "additionalProperties": False},
}
REVIEW_SCHEMA: dict[str, Any] = {
    "name": "kanban_review",
    "description": ("Decide on a task in review: approve (it becomes done and its children may start) or "
                    "request_changes (it goes back to ready for its worker, with your note as a comment)."),
    "parameters": {"type": "object", "properties": {
        "task_id": _ID,
        "decision": {"type": "string", "enum": ["approve", "request_changes"], "description": "The verdict."},
        "note": {"type": "string", "maxLength": 20_000, "description": "What to change, or why it is fine."}},
        "required": ["task_id", "decision"], "additionalProperties": False},
}

registry.register(name="kanban_list", toolset=TOOLSET, schema=LIST_SCHEMA, handler=_list, check_fn=not_a_worker)
registry.register(name="kanban_create", toolset=TOOLSET, schema=CREATE_SCHEMA, handler=_create, check_fn=not_a_worker)
registry.register(name="kanban_link", toolset=TOOLSET, schema=LINK_SCHEMA, handler=_link, check_fn=not_a_worker)
registry.register(name="kanban_unblock", toolset=TOOLSET, schema=UNBLOCK_SCHEMA, handler=_unblock,
                  check_fn=not_a_worker)
registry.register(name="kanban_review", toolset=TOOLSET, schema=REVIEW_SCHEMA, handler=_review, check_fn=not_a_worker)
