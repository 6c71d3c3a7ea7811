"""The ``memory`` tool: bounded MEMORY.md / USER.md files and their system-prompt snapshot (SPEC T-MEM)."""
