"""``skills_list``, ``skill_view`` and ``skill_manage`` (requirement T-SK, toolset ``skills``).

Skills are instructions, not code (requirement REG-13): a ``SKILL.md`` the model reads when a task calls for
it. The system prompt lists skills by name and description only (:func:`skills_index_section`), so a
skill's full text costs context only once it is loaded with ``skill_view``. The layout and rules are
in :mod:`hermes.tools.skills.store`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.config.paths import HermesPaths
from hermes.tools.context import session_of
from hermes.tools.registry import registry
from hermes.tools.skills import MAX_FILE_BYTES, MAX_SKILL_CHARS

if TYPE_CHECKING:
    from hermes.tools.skills.store import SkillStore

_NAME = {"type": "string", "maxLength": 64, "description": "The skill's name, e.g. 'arxiv-search'."}


def _store(kw: dict[str, Any]) -> SkillStore:
    from hermes.tools.skills.store import SkillStore  # on first use: discovery imports this module at start-up

    session = session_of(kw)
    settings = session.settings if session is not None else None
    home: Path = settings.paths.home if settings is not None else HermesPaths.current().home
    return SkillStore(home / "skills")


def skills_list(args: dict[str, Any], **kw: Any) -> str:
    """Every skill's name and description (and category)."""
    store = _store(kw)
    skills, problems = store.scan()
    payload: dict[str, Any] = {"skills": [s.summary() for s in skills], "count": len(skills)}
    category = args.get("category")
    if isinstance(category, str) and category:
        payload["skills"] = [s.summary() for s in skills if s.category == category]
        payload["count"] = len(payload["skills"])
    if problems:
        payload["invalid"] = problems
    if not skills:
        payload["note"] = f"No skills yet. Create one with skill_manage (they live in {store.root})."
    return json.dumps(payload, ensure_ascii=False)


def skill_view(args: dict[str, Any], **kw: Any) -> str:
    """A skill's whole SKILL.md and its file list, or one of its files."""
    store = _store(kw)
    skill = store.get(args.get("name"))
    file = args.get("file")
    if file is not None:
        return json.dumps({"name": skill.name, "file": file, "content": store.read_file(skill, file)},
                          ensure_ascii=False)
    text = (skill.path / "SKILL.md").read_text(encoding="utf-8")
    payload: dict[str, Any] = {"name": skill.name, "description": skill.description, "path": str(skill.path),
                               "content": text, "files": store.files(skill)}
    if skill.category:
        payload["category"] = skill.category
    if skill.tags:
        payload["tags"] = list(skill.tags)
    if skill.version is not None:
        payload["version"] = skill.version
    if payload["files"]:
        payload["note"] = "Read a listed file with skill_view(name, file='<relative path>')."
    return json.dumps(payload, ensure_ascii=False)


def skill_manage(args: dict[str, Any], **kw: Any) -> str:
    """Create, update or delete a skill, or write / remove one of its supporting files."""
    store = _store(kw)
    action, name = args.get("action"), args.get("name")
    if action == "create":
        skill = store.create(name, args.get("content"), args.get("category"))
        result: dict[str, Any] = {"created": skill.name, "path": str(skill.path / "SKILL.md")}
    elif action == "update":
        skill = store.update(name, args.get("content"))
        result = {"updated": skill.name, "path": str(skill.path / "SKILL.md")}
    elif action == "delete":
        skill = store.delete(name)
        result = {"deleted": skill.name, "path": str(skill.path)}
    elif action == "write_file":
        target = store.write_file(name, args.get("file_path"), args.get("file_content"))
        result = {"written": str(target)}
    elif action == "remove_file":
        target = store.remove_file(name, args.get("file_path"))
        result = {"removed": str(target)}
    else:
        from hermes.tools.skills.store import SkillError

        raise SkillError("'action' must be one of create, update, delete, write_file, remove_file")
    result["ok"] = True
    return json.dumps(result, ensure_ascii=False)


SKILLS_LIST_SCHEMA: dict[str, Any] = {
    "name": "skills_list",
    "description": "List the available skills (saved instructions for particular tasks) by name and description. "
                   "Load one with skill_view when a task matches it.",
    "parameters": {"type": "object", "properties": {
        "category": {"type": "string", "maxLength": 64, "description": "Only skills of this category folder."},
    }},
}

SKILL_VIEW_SCHEMA: dict[str, Any] = {
    "name": "skill_view",
    "description": "Load a skill: its whole SKILL.md (instructions to follow) and the list of its other files. "
                   "Pass `file` (a relative path from that list) to read one of those files instead.",
    "parameters": {"type": "object", "properties": {
        "name": _NAME,
        "file": {"type": "string", "maxLength": 500, "description": "A file of the skill, relative to its folder."},
    }, "required": ["name"]},
}

SKILL_MANAGE_SCHEMA: dict[str, Any] = {
    "name": "skill_manage",
    "description": (
        "Create, update or delete a skill: a reusable SKILL.md of instructions (plus optional helper files) for a "
        "task you will do again. `content` is the whole SKILL.md: YAML front matter between '---' lines with "
        "`name` (equal to the skill name) and `description` (when to use it), optional `tags` and `version`, "
        "then Markdown steps. 'write_file' / 'remove_file' manage helper files inside the skill folder."
    ),
    "parameters": {"type": "object", "properties": {
        "action": {"type": "string", "enum": ["create", "update", "delete", "write_file", "remove_file"]},
        "name": {**_NAME, "description": "Lowercase letters, digits and hyphens, e.g. 'docker-cleanup'."},
        "content": {"type": "string", "maxLength": MAX_SKILL_CHARS,
                    "description": "The whole SKILL.md for 'create' and 'update'."},
        "category": {"type": "string", "maxLength": 64,
                     "description": "Optional category folder for 'create' (e.g. 'devops')."},
        "file_path": {"type": "string", "maxLength": 500,
                      "description": "For 'write_file' / 'remove_file': a path relative to the skill folder."},
        "file_content": {"type": "string", "maxLength": MAX_FILE_BYTES, "description": "For 'write_file'."},
    }, "required": ["action", "name"]},
}

registry.register(name="skills_list", toolset="skills", schema=SKILLS_LIST_SCHEMA, handler=skills_list,
                  check_fn=None, requires_env=[])
registry.register(name="skill_view", toolset="skills", schema=SKILL_VIEW_SCHEMA, handler=skill_view,
                  check_fn=None, requires_env=[])
registry.register(name="skill_manage", toolset="skills", schema=SKILL_MANAGE_SCHEMA, handler=skill_manage,
                  check_fn=None, requires_env=[], parallel_safe=False)
