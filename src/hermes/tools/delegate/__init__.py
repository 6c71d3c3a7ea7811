"""The ``delegate_task`` tool: child agents working on sub-tasks (requirement T-DEL)."""
