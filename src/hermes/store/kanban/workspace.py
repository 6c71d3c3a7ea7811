"""The folder a task's worker runs in: a scratch folder, a given folder, or a git worktree.

* ``scratch`` — ``<board files>/workspaces/<task id>``, made on first use;
* ``dir`` — the task's ``workspace_path``, which must be an existing folder;
* ``worktree`` — a git worktree of the repository at ``workspace_path``, checked out at
  ``<board files>/worktrees/<task id>`` on a new branch ``kanban/<task id>`` (reused when it exists).
  git runs with the system and global config ignored and every setting that names a program switched
  off (fsmonitor, hooks, content filters, …): the repository's ``.git/config`` may have been written by
  a model, and nothing it names runs from here.

A ``dir`` or ``worktree`` path inside HERMES_HOME is refused: a worker there could write the plugins
and settings that hermes loads at start-up.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hermes.config.paths import hermes_home
from hermes.store.kanban.models import Task
from hermes.store.kanban.states import KanbanError

#: configuration that makes git run a program, set off for every git this module runs (the repository's
#: own .git/config and hooks are writable by a model: what they name must never run from here)
_SAFE_CONFIG = (
    "core.fsmonitor=false", "core.hooksPath=/dev/null", "core.sshCommand=false", "core.askPass=",
    "core.editor=false", "core.pager=cat", "diff.external=", "credential.helper=", "protocol.allow=never",
    "protocol.file.allow=always", "submodule.recurse=false", "gc.auto=0", "maintenance.auto=false",
    "core.untrackedCache=false", "core.splitIndex=false",
)  # fmt: skip


def _git_env() -> dict[str, str]:
    """This process's environment without GIT_* variables, ignoring the system and global config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0",
               GIT_OPTIONAL_LOCKS="0")
    return env


def _git(repo: Path, *args: str, config: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    options = [item for pair in (("-c", c) for c in (*_SAFE_CONFIG, *config)) for item in pair]
    return subprocess.run(["git", *options, "-C", str(repo), *args], capture_output=True, text=True, timeout=60,
                          check=False, env=_git_env(), stdin=subprocess.DEVNULL)


def _filters_off(repo: Path) -> tuple[str, ...]:
    """``-c`` values that switch off every content filter the repository's config names (a filter's
    smudge/process command would run at checkout)."""
    done = _git(repo, "config", "--name-only", "-z", "--get-regexp", r"^filter\.")
    names = {key.rsplit(".", 1)[0] for key in done.stdout.split("\0") if key.count(".") >= 2}
    return tuple(f"{name}.{part}=" for name in sorted(names) for part in ("smudge", "clean", "process")) + tuple(
        f"{name}.required=false" for name in sorted(names))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def workspace_for(task: Task, files: Path) -> Path:
    """Prepare and return the workspace of ``task``; :class:`KanbanError` when it cannot be made."""
    if task.workspace_kind == "scratch":
        folder = files / "workspaces" / task.id
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    given = Path(task.workspace_path or "")
    home = Path(os.path.realpath(hermes_home()))
    if _inside(Path(os.path.realpath(given)), home):
        raise KanbanError(f"workspace folder {given} of task {task.id} lies inside HERMES_HOME ({home}), whose "
                          "plugins and settings hermes loads: a worker may not run there")
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
        done = _git(repo, "worktree", "add", "-b", branch, str(target), config=_filters_off(repo))
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KanbanError(f"could not run git for task {task.id}'s worktree: {exc}") from exc
    if done.returncode != 0:
        raise KanbanError(f"git worktree add failed for task {task.id}: {done.stderr.strip()[:500]}")
    return target
