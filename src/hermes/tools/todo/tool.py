"""``todo_list`` — a per-session task list.

The tool keeps its list in the session's state, so it is registered with ``needs_session=True``
(docs/requirements.md#reg-7): the handler gets the calling session, and a call outside one (the
catalog's ``registry.dispatch``) gets one clear error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hermes.errors import ToolArgumentError
from hermes.tools.context import SessionView
from hermes.tools.registry import registry

STATE_KEY = "todo_list"

STATUSES = ("pending", "in_progress", "completed", "cancelled")
MAX_ITEMS = 100
MAX_CONTENT = 500

TODO_SCHEMA: dict[str, Any] = {
    "name": "todo_list",
    "description": (
        "Keep a task list for the current session. Call with no arguments to read it. Pass `todos` to "
        "write it: with merge=false (default) the list is replaced; with merge=true items are updated by "
        "id and new ids appended. Keep exactly one item in_progress while working; use it for tasks of "
        "three or more steps."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "Items to write.",
                "maxItems": MAX_ITEMS,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "Stable identifier, e.g. '1'"},
                        "content": {"type": "string", "description": "What to do", "maxLength": MAX_CONTENT},
                        "status": {"type": "string", "enum": list(STATUSES)},
                    },
                    "required": ["id"],
                },
            },
            "merge": {"type": "boolean", "description": "Update by id instead of replacing", "default": False},
        },
    },
}


@dataclass
class TodoItem:
    """One entry of the todo list."""

    id: str
    content: str
    status: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "content": self.content, "status": self.status}


class TodoList:
    """The task list of one session."""

    def __init__(self) -> None:
        self.items: list[TodoItem] = []

    def apply(self, args: dict[str, Any]) -> str:
        todos = args.get("todos")
        if todos is not None:
            if args.get("merge"):
                self._merge(todos)
            else:
                self._replace(todos)
        return json.dumps(self.snapshot(), ensure_ascii=False)

    def _replace(self, todos: list[dict[str, Any]]) -> None:
        items: list[TodoItem] = []
        seen: set[str] = set()
        for i, raw in enumerate(todos):
            item_id = str(raw["id"])
            if item_id in seen:
                raise ToolArgumentError(f"'todos[{i}].id' {item_id!r} appears twice")
            seen.add(item_id)
            content = str(raw.get("content") or "").strip()
            if not content:
                raise ToolArgumentError(f"'todos[{i}].content' is required when replacing the list")
            items.append(TodoItem(item_id, content, str(raw.get("status") or "pending")))
        self.items = items

    def _merge(self, todos: list[dict[str, Any]]) -> None:
        by_id = {item.id: item for item in self.items}
        for i, raw in enumerate(todos):
            item_id = str(raw["id"])
            existing = by_id.get(item_id)
            if existing is None:
                content = str(raw.get("content") or "").strip()
                if not content:
                    raise ToolArgumentError(f"'todos[{i}].content' is required for the new item {item_id!r}")
                if len(self.items) >= MAX_ITEMS:
                    raise ToolArgumentError(f"the list already holds {MAX_ITEMS} items")
                new = TodoItem(item_id, content, str(raw.get("status") or "pending"))
                self.items.append(new)
                by_id[item_id] = new
                continue
            if raw.get("content"):
                existing.content = str(raw["content"]).strip()
            if raw.get("status"):
                existing.status = str(raw["status"])

    def snapshot(self) -> dict[str, Any]:
        counts = {s: sum(1 for i in self.items if i.status == s) for s in STATUSES}
        return {"todos": [i.as_dict() for i in self.items], "summary": {"total": len(self.items), **counts}}

    def render(self) -> str:
        marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]", "cancelled": "[-]"}
        return "\n".join(f"{marks[i.status]} {i.content}" for i in self.items)


def handle_todo(args: dict[str, Any], *, session: SessionView, **kw: Any) -> str:
    """The session's list (made on first use), changed or read by ``args``."""
    todo = session.state.get(STATE_KEY)
    if not isinstance(todo, TodoList):
        todo = TodoList()
        session.state[STATE_KEY] = todo
    return todo.apply(args)


registry.register(
    name="todo_list",
    toolset="todo",
    schema=TODO_SCHEMA,
    handler=handle_todo,
    check_fn=None,
    requires_env=[],
    needs_session=True,
)
