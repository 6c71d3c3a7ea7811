"""Skills: SKILL.md instruction folders the model lists, loads and manages (requirement T-SK, REG-13).

:func:`skills_index_section` builds the system-prompt section naming the available skills.

The size limits the schemas need live here; the names of :mod:`.store` are loaded on first access, so
that discovery (which imports :mod:`.tool` at every start-up) does not import the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.tools.skills.store import Skill, SkillError, SkillStore, skills_dir, skills_index_section

MAX_SKILL_CHARS = 100_000
MAX_FILE_BYTES = 256 * 1024

__all__ = ["MAX_FILE_BYTES", "MAX_SKILL_CHARS", "Skill", "SkillError", "SkillStore", "skills_dir",
           "skills_index_section"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from hermes.tools.skills import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
