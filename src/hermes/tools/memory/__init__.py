"""The ``memory`` tool: bounded MEMORY.md / USER.md files and their system-prompt snapshot (requirement T-MEM).

The names the schema needs live here, so that discovery (which imports :mod:`.tool` at every start-up)
does not import :mod:`.store`.
"""

from __future__ import annotations

from typing import Literal

Target = Literal["memory", "user"]
TARGETS: tuple[Target, ...] = ("memory", "user")
DEFAULT_MEMORY_LIMIT = 2200
DEFAULT_USER_LIMIT = 1375
