"""The ``session_search`` tool: ranked full-text search over past sessions and reading them (requirement T-SS)."""
