"""A worktree workspace is made by a git that runs nothing the repository names: no fsmonitor, no hooks,
no filters — a model that wrote the repository's .git/config cannot run a command through the dispatcher."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hermes.store.kanban.board import Board
from hermes.store.kanban.states import KanbanError
from hermes.store.kanban.workspace import workspace_for


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a", *args], check=True,
                   capture_output=True)


@pytest.fixture
def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose config and hooks each try to run a command leaving a mark in ``marks/``."""
    marks = tmp_path / "marks"
    marks.mkdir()
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("plain\n")
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "init")
    hooks = tmp_path / "elsewhere-hooks"
    hooks.mkdir()
    for folder in (repo / ".git" / "hooks", hooks):
        for hook in ("post-checkout", "reference-transaction", "post-index-change"):
            script = folder / hook
            script.write_text(f"#!/bin/sh\ntouch {marks}/{folder.name}-{hook}\n")
            script.chmod(0o755)
    _git(repo, "config", "core.fsmonitor", f"touch {marks}/fsmonitor; false")
    _git(repo, "config", "filter.evil.smudge", f"sh -c 'touch {marks}/smudge; cat'")
    _git(repo, "config", "filter.evil.process", f"sh -c 'touch {marks}/process'")
    (tmp_path / "extra.cfg").write_text(f"[filter \"other\"]\n\tsmudge = touch {marks}/included\n")
    _git(repo, "config", "include.path", str(tmp_path / "extra.cfg"))
    return repo, marks


def test_a_worktree_runs_no_command_of_the_repository(tmp_path: Path, hostile_repo: tuple[Path, Path]) -> None:
    repo, marks = hostile_repo
    board = Board(tmp_path / "kanban.db", files=tmp_path / "files")
    task, _ = board.create("w", created_by="me", workspace_kind="worktree", workspace_path=str(repo))
    folder = workspace_for(task, board.files)
    assert (folder / "a.txt").read_text() == "plain\n"  # checked out, unfiltered
    assert sorted(os.listdir(marks)) == []
    # hooksPath pointing elsewhere is ignored as well
    _git(repo, "config", "core.hooksPath", str(tmp_path / "elsewhere-hooks"))
    second, _ = board.create("w2", created_by="me", workspace_kind="worktree", workspace_path=str(repo))
    workspace_for(second, board.files)
    assert sorted(os.listdir(marks)) == []


def test_a_dir_workspace_inside_hermes_home_is_refused(tmp_path: Path, hermes_home: Path) -> None:
    board = Board(hermes_home / "kanban.db")
    (hermes_home / "plugins").mkdir()
    for path in (hermes_home, hermes_home / "plugins"):
        task, _ = board.create("d", created_by="me", workspace_kind="dir", workspace_path=str(path))
        with pytest.raises(KanbanError, match="HERMES_HOME"):
            workspace_for(task, board.files)
