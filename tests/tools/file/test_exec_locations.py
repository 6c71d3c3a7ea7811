"""The file tools never write what git or hermes later runs: a repository's .git/config and hooks,
HERMES_HOME's plugins, skills, cron jobs, memories and databases — even when the working directory (an
allowed root) is HERMES_HOME itself."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.file.patch
import hermes.tools.file.write  # noqa: F401  (registers the tools)
from hermes.tools.registry import registry


def call(tool: str, **args: Any) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(registry.dispatch(tool, args, task_id="t1"))
    return result


@pytest.mark.parametrize("rel", [".git/config", ".git/hooks/post-checkout", ".git/hooks/pre-commit.sample",
                                 ".git/config.worktree", ".git/worktrees/w/config.worktree",
                                 ".git/modules/sub/hooks/post-checkout", "sub/.git"])
def test_git_config_and_hooks_are_never_written(ws: Path, rel: str) -> None:
    subprocess.run(["git", "init", "-q", str(ws / "repo")], check=True)
    target = ws / "repo" / rel
    refused = call("write_file", path=str(target), content="[core]\n\tfsmonitor = touch /tmp/x\n")
    assert "git runs" in refused.get("error", ""), refused
    assert call("write_file", path=str(ws / "repo" / "src" / "main.py"), content="print(1)\n").get("ok", True)
    assert (ws / "repo" / "src" / "main.py").exists()


def test_git_config_is_not_patched(ws: Path) -> None:
    subprocess.run(["git", "init", "-q", str(ws / "repo")], check=True)
    config = ws / "repo" / ".git" / "config"
    before = config.read_text()
    refused = call("patch", path=str(config), old_string="bare = false", new_string="bare = false\n\tfsmonitor = x")
    assert "git runs" in refused.get("error", "") and config.read_text() == before


@pytest.mark.parametrize("rel", ["plugins/evil/__init__.py", "plugins/evil/plugin.yaml", "kanban.db",
                                 "kanban.db-wal", "state.db", "cron/jobs.json", "skills/x/SKILL.md",
                                 "memories/MEMORY.md", "kanban/logs/t_1.log"])
def test_hermes_state_is_never_written_even_from_inside_hermes_home(
        ws: Path, hermes_home: Path, monkeypatch: pytest.MonkeyPatch, rel: str) -> None:
    monkeypatch.chdir(hermes_home)  # the working directory is an allowed root
    refused = call("write_file", path=str(hermes_home / rel), content="x")
    assert "HERMES_HOME" in refused.get("error", ""), refused
    assert not (hermes_home / rel).exists()


def test_a_scratch_workspace_inside_hermes_home_is_writable(ws: Path, hermes_home: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    folder = hermes_home / "kanban" / "workspaces" / "t_1"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    assert "error" not in call("write_file", path="notes.md", content="x")
    assert (folder / "notes.md").read_text() == "x"
