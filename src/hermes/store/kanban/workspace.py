"""The folder a task's worker runs in: a scratch folder, a given folder, or a git worktree.

* ``scratch`` — ``<board files>/workspaces/<task id>``, made on first use;
* ``dir`` — the task's ``workspace_path``, which must be an existing folder;
* ``worktree`` — a git worktree of the repository at ``workspace_path``, checked out at
  ``<board files>/worktrees/<task id>`` on a new branch ``kanban/<task id>`` (reused when it exists).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from hermes.store.kanban.models import Task
from hermes.store.kanban.states import KanbanError


def workspace_for(task: Task, files: Path) -> Path:
    """Prepare and return the workspace of ``task``; :class:`KanbanError` when it cannot be made."""
    if task.workspace_kind == "scratch":
        folder = files / "workspaces" / task.id
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    given = Path(task.workspace_path or "")
    if task.workspace_kind == "dir":
        if not given.is_dir():
            raise KanbanError(f"workspace folder {given} of task {task.id} does not exist")
        return given
    if task.workspace_kind == "worktree":
        return _worktree(task, given, files / "worktrees" / task.id)
    raise KanbanError(f"task {task.id} has an unknown workspace kind {task.workspace_kind!r}")


def _worktree(task: Task, repo: Path, target: Path) -> Path:
    if (target / ".git").exists():
        return target
    if not (repo / ".git").exists():
        raise KanbanError(f"workspace_path {repo} of task {task.id} is not a git repository")
    target.parent.mkdir(parents=True, exist_ok=True)
    branch = f"kanban/{task.id}"
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), "worktree", "add", "-b", branch, str(target)],
            capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KanbanError(f"could not run git for task {task.id}'s worktree: {exc}") from exc
    if done.returncode != 0:
        raise KanbanError(f"git worktree add failed for task {task.id}: {done.stderr.strip()[:500]}")
    return target
