"""Skills: SKILL.md instruction folders the model lists, loads and manages (SPEC T-SK, REG-13).

:func:`skills_index_section` builds the system-prompt section naming the available skills.
"""

from hermes.tools.skills.store import Skill, SkillError, SkillStore, skills_dir, skills_index_section

__all__ = ["Skill", "SkillError", "SkillStore", "skills_dir", "skills_index_section"]
