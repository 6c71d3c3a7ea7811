"""``memory`` — durable notes across sessions (requirement T-MEM).

The tool needs the session (docs/requirements.md#reg-7): :func:`handle_memory` gets the parsed arguments
and the running session. The schema is registered here like any other tool's; a call that reaches
``dispatch()`` directly gets the registry's fallback error. The files and their rules are described in
:mod:`hermes.tools.memory.store`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from hermes.errors import ToolError
from hermes.tools.memory import DEFAULT_MEMORY_LIMIT, DEFAULT_USER_LIMIT, TARGETS, Target
from hermes.tools.registry import registry

if TYPE_CHECKING:
    from hermes.tools.context import SessionView
    from hermes.tools.memory.store import MemoryStore

ACTIONS = ("add", "replace", "remove", "read")

MEMORY_SCHEMA: dict[str, Any] = {
    "name": "memory",
    "description": (
        "Long-term memory that persists across sessions, in two small files: target 'user' (USER.md) for "
        "what you learn about the person — name, role, preferences, habits — and target 'memory' "
        "(MEMORY.md) for your own notes: environment facts, project conventions, lessons learned. Save "
        "facts that will matter in future sessions, not task progress. Actions: 'add' a new entry "
        "(`content`); 'replace' the one entry containing `old_text` with `content`; 'remove' the one entry "
        f"containing `old_text`; 'read' the current entries. Each file is bounded ({DEFAULT_MEMORY_LIMIT} "
        f"and {DEFAULT_USER_LIMIT} characters by default): when full, condense or remove entries first. "
        "Never store secrets. Changes are saved at once but appear in the system prompt from the next session."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS), "description": "What to do."},
            "target": {"type": "string", "enum": list(TARGETS),
                       "description": "'user' for facts about the person, 'memory' for your own notes. "
                                      "Required except for 'read' (which then shows both)."},
            "content": {"type": "string", "maxLength": 4000,
                        "description": "The entry text for 'add' and 'replace'. One fact per entry; be concise."},
            "old_text": {"type": "string", "maxLength": 4000,
                         "description": "For 'replace' and 'remove': a part of the entry that appears in no other."},
        },
        "required": ["action"],
    },
}


def run_memory(args: dict[str, Any], store: MemoryStore) -> str:
    """Carry out one memory call on ``store``; a refused change raises :class:`ToolError` (``MemoryRefused``
    carries extra fields for the error result)."""
    action = args.get("action")
    target = args.get("target")
    if action not in ACTIONS:
        raise ToolError(f"'action' must be one of {', '.join(ACTIONS)}")
    if target is not None and target not in TARGETS:
        raise ToolError(f"'target' must be one of {', '.join(TARGETS)}")
    if action == "read":
        targets = (cast(Target, target),) if target else TARGETS
        return json.dumps({"memories": [store.read(t) for t in targets]}, ensure_ascii=False)
    if target is None:
        raise ToolError("'target' is required: 'user' (facts about the person) or 'memory' (your notes)")
    tgt = cast(Target, target)
    if action == "add":
        change = store.add(tgt, args.get("content"))
    elif action == "replace":
        change = store.replace(tgt, args.get("old_text"), args.get("content"))
    else:
        change = store.remove(tgt, args.get("old_text"))
    return json.dumps(change.as_result(store.path(tgt)), ensure_ascii=False)


def handle_memory(args: dict[str, Any], session: SessionView) -> str:
    """The handler of ``memory`` (arguments already validated against the schema)."""
    from hermes.tools.memory.store import MemoryStore, memory_enabled  # not at start-up: see the package

    settings = session.settings
    if not memory_enabled(settings):
        raise ToolError("memory is turned off (memory.enabled: false in config.yaml)")
    return run_memory(args, MemoryStore.from_settings(settings))


registry.register(
    name="memory",
    toolset="memory",
    schema=MEMORY_SCHEMA,
    handler=lambda args, *, session, **kw: handle_memory(args, session),
    check_fn=None,
    requires_env=[],
    needs_session=True,
)
