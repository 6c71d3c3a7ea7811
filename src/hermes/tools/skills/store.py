"""Skills on disk: ``HERMES_HOME/skills/[<category>/]<name>/SKILL.md`` plus any supporting files.

A skill is a folder holding ``SKILL.md`` — YAML front matter between ``---`` lines, then Markdown
instructions — and optionally scripts, templates or references next to it (requirement REG-13, T-SK)::

    ---
    name: arxiv-search
    description: Search arXiv and summarise papers with curl and the web tools.
    tags: [research, papers]
    version: 1
    ---
    # Searching arXiv
    1. ...

``name`` (``^[a-z0-9][a-z0-9-]{0,63}$``, the folder's name) and ``description`` are required; ``tags``
(a list of strings) and ``version`` are optional; other keys are kept. A folder that holds no
``SKILL.md`` but skill folders is a category (one level). Front matter is read with ruamel.yaml's safe
loader, imported on first use. Every path a caller gives is resolved (symlinks included) and must stay
inside its skill folder; writes are atomic.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from hermes.config.atomic import atomic_write
from hermes.config.paths import HermesPaths
from hermes.errors import ToolError
from hermes.tools.skills import MAX_FILE_BYTES, MAX_SKILL_CHARS

logger = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
MAX_DESCRIPTION = 1024
MAX_LISTED_FILES = 200
INDEX_MAX_SKILLS = 100
INDEX_DESCRIPTION_CHARS = 200


class SkillError(ToolError):
    """A skill could not be read or written; the message says why and what to do."""


@dataclass(frozen=True)
class Skill:
    """One skill found on disk."""

    name: str
    description: str
    path: Path
    category: str | None = None
    tags: tuple[str, ...] = ()
    version: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.category:
            out["category"] = self.category
        return out


def skills_dir(home: Path | None = None) -> Path:
    """``HERMES_HOME/skills`` (of ``home`` when given)."""
    return (home or HermesPaths.current().home) / "skills"


def check_name(value: Any, field_name: str = "name") -> str:
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise SkillError(f"'{field_name}' must match ^[a-z0-9][a-z0-9-]{{0,63}}$ (lowercase letters, digits and "
                         f"hyphens, starting with a letter or digit), got {value!r}")
    return value


def parse_skill_text(text: str) -> tuple[dict[str, Any], str]:
    """Split ``SKILL.md`` text into validated front matter and the Markdown body."""
    text = text.lstrip("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SkillError("SKILL.md must start with YAML front matter: a '---' line, 'name:' and 'description:', "
                         "then a closing '---' line")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        raise SkillError("the front matter of SKILL.md has no closing '---' line")
    from ruamel.yaml import YAML

    try:
        data = YAML(typ="safe", pure=True).load("".join(lines[1:end]))
    except Exception as exc:
        raise SkillError(f"the front matter of SKILL.md is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SkillError("the front matter of SKILL.md must be a mapping with 'name' and 'description'")
    meta = {str(k): v for k, v in data.items()}
    check_name(meta.get("name"), "front matter name")
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillError("the front matter needs a non-empty 'description': one line saying when to use the skill")
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(f"the front matter 'description' must have at most {MAX_DESCRIPTION} characters")
    tags = meta.get("tags")
    if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
        raise SkillError("the front matter 'tags' must be a list of strings")
    version = meta.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, str | int | float)):
        raise SkillError("the front matter 'version' must be a string or a number")
    return meta, "".join(lines[end + 1:])


def safe_relative(base: Path, relative: Any, field_name: str) -> Path:
    """``base / relative`` after checking it cannot leave ``base`` (no absolute paths, no '..', no links out)."""
    if not isinstance(relative, str) or not relative.strip():
        raise SkillError(f"'{field_name}' must be a relative path inside the skill folder")
    pure = PurePosixPath(relative.strip().replace("\\", "/"))
    if pure.is_absolute() or any(part == ".." for part in pure.parts) or "\x00" in relative:
        raise SkillError(f"'{field_name}' {relative!r} must stay inside the skill folder (no absolute paths, no '..')")
    target = (base / pure).resolve()
    if not target.is_relative_to(base.resolve()) or target == base.resolve():
        raise SkillError(f"'{field_name}' {relative!r} points outside the skill folder")
    return target


class SkillStore:
    """The skills of one skills folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    # -- reading ----------------------------------------------------------------------------------
    def _folders(self) -> list[tuple[Path, str | None]]:
        if not self.root.is_dir():
            return []
        out: list[tuple[Path, str | None]] = []
        for child in sorted(self.root.iterdir()):
            if child.name.startswith(".") or not child.is_dir():
                continue
            if (child / SKILL_FILE).is_file():
                out.append((child, None))
                continue
            out.extend((sub, child.name) for sub in sorted(child.iterdir())
                       if not sub.name.startswith(".") and sub.is_dir() and (sub / SKILL_FILE).is_file())
        return out

    def _load(self, folder: Path, category: str | None) -> Skill:
        try:
            text = (folder / SKILL_FILE).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SkillError(f"cannot read {folder / SKILL_FILE}: {exc}") from None
        meta, _ = parse_skill_text(text)
        version = meta.get("version")
        return Skill(name=meta["name"], description=" ".join(str(meta["description"]).split()), path=folder,
                     category=category, tags=tuple(meta.get("tags") or ()),
                     version=None if version is None else str(version), meta=meta)

    def scan(self) -> tuple[list[Skill], list[dict[str, str]]]:
        """All valid skills (sorted by name; the first of a duplicated name wins) and the invalid ones."""
        skills: dict[str, Skill] = {}
        problems: list[dict[str, str]] = []
        for folder, category in self._folders():
            try:
                skill = self._load(folder, category)
            except SkillError as exc:
                problems.append({"path": str(folder), "error": str(exc)})
                continue
            if skill.name != folder.name:
                problems.append({"path": str(folder), "error": f"front matter name {skill.name!r} differs from "
                                 f"the folder name {folder.name!r}"})
            elif skill.name in skills:
                problems.append({"path": str(folder), "error": f"another skill is also named {skill.name!r}"})
            else:
                skills[skill.name] = skill
        return sorted(skills.values(), key=lambda s: s.name), problems

    def get(self, name: Any) -> Skill:
        wanted = check_name(name)
        for folder, category in self._folders():
            if folder.name == wanted:
                return self._load(folder, category)
        known = ", ".join(s.name for s in self.scan()[0]) or "none yet"
        raise SkillError(f"no skill named {wanted!r}. Available skills: {known}")

    def files(self, skill: Skill) -> list[str]:
        """The skill folder's other files, as relative paths (hidden files and caches left out)."""
        out: list[str] = []
        for path in sorted(skill.path.rglob("*")):
            rel = path.relative_to(skill.path)
            if any(p.startswith(".") or p == "__pycache__" for p in rel.parts) or rel.as_posix() == SKILL_FILE:
                continue
            if path.is_file():
                out.append(rel.as_posix())
                if len(out) >= MAX_LISTED_FILES:
                    break
        return out

    def read_file(self, skill: Skill, relative: Any) -> str:
        target = safe_relative(skill.path, relative, "file")
        if not target.is_file():
            raise SkillError(f"the skill {skill.name!r} has no file {relative!r}; its files: "
                             f"{', '.join(self.files(skill)) or 'none'}")
        data = target.read_bytes()
        if len(data) > MAX_FILE_BYTES:
            raise SkillError(f"{relative!r} is larger than {MAX_FILE_BYTES} bytes; read it with read_file instead")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SkillError(f"{relative!r} is a binary file; it cannot be shown as text") from None

    # -- writing ----------------------------------------------------------------------------------
    def _checked_content(self, name: str, content: Any) -> str:
        if not isinstance(content, str) or not content.strip():
            raise SkillError("'content' is required: the whole SKILL.md, front matter first")
        if len(content) > MAX_SKILL_CHARS:
            raise SkillError(f"'content' must have at most {MAX_SKILL_CHARS} characters")
        meta, _ = parse_skill_text(content)
        if meta["name"] != name:
            raise SkillError(f"the front matter name {meta['name']!r} must equal the skill name {name!r}")
        _refuse_secrets(content)
        return content if content.endswith("\n") else content + "\n"

    def create(self, name: Any, content: Any, category: Any = None) -> Skill:
        wanted = check_name(name)
        if category is not None and (self.root / check_name(category, "category") / SKILL_FILE).exists():
            raise SkillError(f"'category' {category!r} is a skill, not a category folder")
        if any(folder.name == wanted for folder, _ in self._folders()):
            raise SkillError(f"a skill named {wanted!r} already exists; use action 'update' to change it")
        text = self._checked_content(wanted, content)
        folder = self.root / (category or "") / wanted
        if folder.exists():
            raise SkillError(f"{folder} already exists and is not a skill; choose another name")
        self._write(folder / SKILL_FILE, text)
        return self._load(folder, category)

    def update(self, name: Any, content: Any) -> Skill:
        skill = self.get(name)
        self._write(skill.path / SKILL_FILE, self._checked_content(skill.name, content))
        return self._load(skill.path, skill.category)

    def delete(self, name: Any) -> Skill:
        skill = self.get(name)
        root = self.root.resolve()
        if skill.path.is_symlink():
            skill.path.unlink()
            return skill
        resolved = skill.path.resolve()
        if not resolved.is_relative_to(root) or resolved == root:
            raise SkillError(f"refusing to delete {skill.path}: it is not inside {self.root}")
        import shutil  # not at module level: discovery imports this module at every start-up

        shutil.rmtree(resolved)
        return skill

    def write_file(self, name: Any, relative: Any, content: Any) -> Path:
        skill = self.get(name)
        target = safe_relative(skill.path, relative, "file_path")
        if target == (skill.path / SKILL_FILE).resolve():
            raise SkillError("change SKILL.md with action 'update'")
        if not isinstance(content, str):
            raise SkillError("'file_content' is required: the text of the file")
        if len(content.encode("utf-8")) > MAX_FILE_BYTES:
            raise SkillError(f"'file_content' must be at most {MAX_FILE_BYTES} bytes")
        _refuse_secrets(content)
        self._write(target, content)
        return target

    def remove_file(self, name: Any, relative: Any) -> Path:
        skill = self.get(name)
        target = safe_relative(skill.path, relative, "file_path")
        if target == (skill.path / SKILL_FILE).resolve():
            raise SkillError("SKILL.md cannot be removed on its own; delete the whole skill instead")
        if not target.is_file():
            raise SkillError(f"the skill {skill.name!r} has no file {relative!r}")
        target.unlink()
        return target

    @staticmethod
    def _write(path: Path, text: str) -> None:
        try:
            atomic_write(path, text)
        except OSError as exc:
            raise SkillError(f"cannot write {path}: {exc}") from exc


def _refuse_secrets(text: str) -> None:
    from hermes.tools.guard import find_secret

    found = find_secret(text)
    if found:
        raise SkillError(f"refused: the content looks like it contains {found}. Skills must not hold "
                         "credentials; read them from the environment (e.g. $MY_API_KEY) instead.")


def skills_index_section(root: Path | None = None) -> str:
    """A short system-prompt section listing the available skills ('' when there are none).

    Never raises: a broken skills folder leaves the section out with a warning.
    """
    try:
        skills, _ = SkillStore(root or skills_dir()).scan()
    except Exception as exc:
        logger.warning("skills index left out of the system prompt: %s", exc)
        return ""
    if not skills:
        return ""
    lines = ["## Skills",
             "Skills are saved instructions for particular tasks. When a task matches one of these, load it "
             "with skill_view(name) first and follow it; do not load skills you do not need."]
    for skill in skills[:INDEX_MAX_SKILLS]:
        text = skill.description
        if len(text) > INDEX_DESCRIPTION_CHARS:
            text = text[: INDEX_DESCRIPTION_CHARS - 1] + "…"
        where = f" [{skill.category}]" if skill.category else ""
        lines.append(f"- {skill.name}{where}: {text}")
    if len(skills) > INDEX_MAX_SKILLS:
        lines.append(f"- … and {len(skills) - INDEX_MAX_SKILLS} more (see skills_list)")
    return "\n".join(lines)
