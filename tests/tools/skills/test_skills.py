"""Skills (requirement T-SK, REG-13): SKILL.md folders, CRUD, front matter, path safety, the prompt index —
and a fuzz test of malformed arguments for every tool of the memory, session_search and skills families."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hermes.tools.memory.tool  # registers the memory, session_search and skills schemas
import hermes.tools.sessions.tool
import hermes.tools.skills.tool  # noqa: F401
from hermes.agent.events import NullSink
from hermes.agent.loop import Agent
from hermes.agent.provider import CallOptions, Completion
from hermes.agent.session import new_agent
from hermes.config.settings import Settings
from hermes.store.sessions import SessionStore
from hermes.tools.registry import registry
from hermes.tools.skills import SkillStore, skills_index_section
from hermes.tools.toolsets import Surface


def skill_md(name: str, description: str = "Does a thing.", body: str = "# Steps\n1. run it\n", **extra: Any) -> str:
    meta = "".join(f"{k}: {json.dumps(v)}\n" for k, v in extra.items())
    return f"---\nname: {name}\ndescription: {description}\n{meta}---\n{body}"


def call(tool: str, **args: Any) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(registry.dispatch(tool, args))
    return result


@pytest.fixture
def skills(hermes_home: Path) -> Path:
    return hermes_home / "skills"


def test_create_list_view_update_delete(skills: Path) -> None:
    created = call("skill_manage", action="create", name="pdf-tools", content=skill_md(
        "pdf-tools", "Extract text from PDFs with pdftotext.", tags=["pdf"], version="1.2"))
    assert created["ok"] and (skills / "pdf-tools" / "SKILL.md").is_file()
    call("skill_manage", action="create", name="docker-clean", category="devops",
         content=skill_md("docker-clean", "Free disk space used by Docker."))
    assert call("skills_list") == {"skills": [
        {"name": "docker-clean", "description": "Free disk space used by Docker.", "category": "devops"},
        {"name": "pdf-tools", "description": "Extract text from PDFs with pdftotext."}], "count": 2}
    assert call("skills_list", category="devops")["count"] == 1
    written = call("skill_manage", action="write_file", name="pdf-tools", file_path="scripts/run.sh",
                   file_content="pdftotext \"$1\" -\n")
    assert written["ok"] and (skills / "pdf-tools" / "scripts" / "run.sh").is_file()
    view = call("skill_view", name="pdf-tools")
    assert view["content"].startswith("---\nname: pdf-tools") and "1. run it" in view["content"]
    assert view["files"] == ["scripts/run.sh"] and view["tags"] == ["pdf"] and view["version"] == "1.2"
    assert call("skill_view", name="pdf-tools", file="scripts/run.sh")["content"].startswith("pdftotext")
    updated = call("skill_manage", action="update", name="pdf-tools",
                   content=skill_md("pdf-tools", "Extract text and images from PDFs."))
    assert updated["ok"] and "images" in call("skills_list")["skills"][1]["description"]
    assert call("skill_manage", action="remove_file", name="pdf-tools", file_path="scripts/run.sh")["ok"]
    assert call("skill_manage", action="delete", name="pdf-tools")["ok"]
    assert not (skills / "pdf-tools").exists() and (skills / "devops" / "docker-clean").exists()
    assert "no skill named 'pdf-tools'" in call("skill_view", name="pdf-tools")["error"]
    assert "already exists" in call("skill_manage", action="create", name="docker-clean",
                                    content=skill_md("docker-clean"))["error"]


@pytest.mark.parametrize("name", ["Bad", "-lead", "a" * 65, "../x", "with space", "x/y", ""])
def test_invalid_names_are_refused(skills: Path, name: str) -> None:
    result = call("skill_manage", action="create", name=name, content=skill_md("ok"))
    assert "name" in result["error"] and not (skills / name).exists()


@pytest.mark.parametrize("content, message", [
    ("# no front matter\n", "must start with YAML front matter"),
    ("---\nname: a\ndescription: d\n", "no closing"),
    ("---\nname: a\n---\nbody", "'description'"),
    ("---\ndescription: d\n---\nbody", "front matter name"),
    ("---\nname: other\ndescription: d\n---\n", "must equal the skill name"),
    ("---\nname: a\ndescription: [unclosed\n---\n", "not valid YAML"),
    ("---\n- a list\n---\n", "must be a mapping"),
    ("---\nname: a\ndescription: d\ntags: pdf\n---\n", "'tags'"),
    ("---\nname: a\ndescription: d\n---\nkey sk-abcdefghijklmnopqrstuvwxyz123\n", "credentials"),
])
def test_front_matter_is_validated(skills: Path, content: str, message: str) -> None:
    assert message in call("skill_manage", action="create", name="a", content=content)["error"]
    assert not (skills / "a").exists()


def test_paths_cannot_leave_the_skill_folder(skills: Path, tmp_path: Path) -> None:
    call("skill_manage", action="create", name="one", content=skill_md("one"))
    call("skill_manage", action="create", name="two", content=skill_md("two"))
    outside = tmp_path / "outside.txt"
    outside.write_text("secret plans")
    (skills / "one" / "link.txt").symlink_to(outside)
    for bad in ("../two/SKILL.md", "/etc/passwd", "link.txt", "a/../../two/SKILL.md", ".", "..\\two\\SKILL.md"):
        assert "error" in call("skill_view", name="one", file=bad), bad
        assert "error" in call("skill_manage", action="write_file", name="one", file_path=bad, file_content="x"), bad
        assert "error" in call("skill_manage", action="remove_file", name="one", file_path=bad), bad
    assert outside.read_text() == "secret plans" and (skills / "two" / "SKILL.md").exists()
    assert "'action' must be one of" in call("skill_manage", action="delete_all", name="one")["error"]
    assert "update" in call("skill_manage", action="write_file", name="one", file_path="SKILL.md",
                            file_content="x")["error"]
    (skills / "elsewhere").symlink_to(tmp_path, target_is_directory=True)
    assert "name" in call("skill_manage", action="delete", name="../outside")["error"]
    assert outside.exists()


def test_a_linked_skill_is_unlinked_not_followed(skills: Path, tmp_path: Path) -> None:
    real = tmp_path / "shared" / "linked"
    real.mkdir(parents=True)
    (real / "SKILL.md").write_text(skill_md("linked"))
    skills.mkdir(parents=True, exist_ok=True)
    (skills / "linked").symlink_to(real, target_is_directory=True)
    assert call("skill_manage", action="delete", name="linked")["ok"]
    assert (real / "SKILL.md").exists() and not (skills / "linked").exists()


def test_index_section_and_invalid_skills(hermes_home: Path, skills: Path) -> None:
    assert skills_index_section(skills) == ""
    store = SkillStore(skills)
    store.create("git-flow", skill_md("git-flow", "Release branches the team's way."))
    (skills / "broken").mkdir()
    (skills / "broken" / "SKILL.md").write_text("no front matter")
    (skills / "misnamed").mkdir()
    (skills / "misnamed" / "SKILL.md").write_text(skill_md("other-name"))
    section = skills_index_section(skills)
    assert section.startswith("## Skills") and "skill_view" in section
    assert "- git-flow: Release branches the team's way." in section and "broken" not in section
    listing = call("skills_list")
    assert [s["name"] for s in listing["skills"]] == ["git-flow"] and len(listing["invalid"]) == 2
    (hermes_home / "config.yaml").write_text("model:\n  base_url: http://127.0.0.1:9/v1\n  name: m\n")
    agent = new_agent(Settings.load(), Surface.CLI, NullSink(), provider=_Silent())
    assert "- git-flow: Release branches" in agent.messages[0]["content"]
    assert "1. run it" not in agent.messages[0]["content"]  # only names and descriptions, never the body


# -- fuzz: malformed arguments never escape, nothing outside the temporary folders changes -----------


class _Silent:
    name = "silent"
    model = "m"

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 options: CallOptions) -> Completion:
        return Completion("ok")


TOOLS = ("memory", "session_search", "skills_list", "skill_view", "skill_manage")
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
                    st.text(max_size=40), st.sampled_from(["../../outside/x", "/etc/passwd", "..", "§", "a\x00b",
                                                          "add", "read", "create", "write_file", "user", "memory"]))
_value = st.one_of(_scalar, st.lists(_scalar, max_size=2), st.dictionaries(st.text(max_size=3), _scalar, max_size=2))
_KEYS = sorted({k for t in TOOLS for k in registry.get(t).schema["parameters"]["properties"]} | {"bogus"})  # type: ignore[union-attr]
_CALLS = st.tuples(st.sampled_from(TOOLS), st.one_of(
    st.dictionaries(st.sampled_from(_KEYS), _value, max_size=5), st.text(max_size=20), _scalar))


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_fuzz_malformed_arguments(hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x").write_text("keep me")
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    (hermes_home / "config.yaml").write_text("model:\n  base_url: http://127.0.0.1:9/v1\n  name: m\n")
    cfg = Settings.load()
    store = SessionStore(cfg.paths.database)
    sid = store.create_session(surface="cli", model="m", toolsets=[], tools=[])
    store.append_message(sid, {"role": "user", "content": "read add create memory user"})
    agent = Agent(provider=_Silent(), registry=registry, sink=NullSink(), surface=Surface.CLI, tools=TOOLS,
                  messages=[], store=store, session_id=sid, settings=cfg)
    before_outside = _tree(outside)
    real_home = Path(os.path.expanduser("~")) / ".hermes"
    before_real = _tree(real_home) if real_home.is_dir() else {}

    @settings(max_examples=1200, deadline=None, suppress_health_check=list(HealthCheck))
    @given(call=_CALLS)
    def check(call: tuple[str, Any]) -> None:
        tool, payload = call
        raw = payload if isinstance(payload, str) else json.dumps(payload)
        result = agent.session.dispatch(tool, raw).text
        assert isinstance(json.loads(result), dict)

    check()

    assert _tree(outside) == before_outside
    assert list(work.iterdir()) == []
    assert (_tree(real_home) if real_home.is_dir() else {}) == before_real
    for path in tmp_path.rglob("*"):
        assert path.is_relative_to(hermes_home) or path.is_relative_to(outside) or path.is_relative_to(work) \
            or path == hermes_home, path
    store.close()
