"""The ``desktop_project`` tool and the projects it keeps: named workspaces of several folders (TS-6)."""
