"""The ``catalog`` tool: what this installation can do, looked up by the desktop app's sessions (TS-4)."""
