"""The ``todo_list`` tool: a task list the model keeps for the current session (requirement T-TODO)."""
