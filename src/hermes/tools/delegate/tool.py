"""``delegate_task`` — hand sub-tasks to child agents.

The tool needs the running agent (its model, tools and interrupt state). The agent layer lends its
sessions a ``delegate`` capability (:mod:`hermes.agent.delegation` runs the children); the handler
here hands the call to it. Registered with ``needs_session=True`` (docs/requirements.md#reg-7).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError
from hermes.tools.registry import registry

if TYPE_CHECKING:
    from hermes.tools.session import ToolSession

MAX_BATCH = 8

_TASK_PROPERTIES: dict[str, Any] = {
    "goal": {"type": "string", "minLength": 1, "description": "What the child agent must achieve."},
    "context": {"type": "string",
                "description": "Everything the child needs to know: it sees nothing of this conversation."},
    "toolsets": {"type": "array", "items": {"type": "string"},
                 "description": "Toolsets the child may use (a subset of this session's; default: all of them)."},
}

DELEGATE_SCHEMA: dict[str, Any] = {
    "name": "delegate_task",
    "description": (
        "Delegate work to child agents that run with their own fresh context and iteration budget, and "
        "return a summary each. Give either one `goal` (with `context`) or a batch of independent `tasks`, "
        "which run in parallel. Children cannot ask the person questions, and they see nothing of this "
        "conversation except what you put in `context`. Use it for independent, well-specified sub-tasks "
        "(research several topics, inspect several folders), not for one quick lookup."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            **_TASK_PROPERTIES,
            "tasks": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_BATCH,
                "description": "Several independent sub-tasks to run in parallel.",
                "items": {"type": "object", "properties": _TASK_PROPERTIES, "required": ["goal"]},
            },
            "max_iterations": {"type": "integer", "minimum": 1,
                               "description": "Tool-calling rounds per child (capped by delegation.max_iterations)."},
        },
    },
}

def handle_delegate(args: dict[str, Any], *, session: ToolSession, **kw: Any) -> str:
    """Run the children through the agent the session belongs to."""
    if session.context.delegate is None:
        raise ToolError("delegate_task needs an agent session that can start child agents")
    return session.context.delegate(args)


registry.register(
    name="delegate_task",
    toolset="delegation",
    schema=DELEGATE_SCHEMA,
    handler=handle_delegate,
    check_fn=None,
    requires_env=[],
    needs_session=True,
)
