"""Desktop projects: named workspaces grouping several folders, kept in ``HERMES_HOME/projects.json``.

A project is a name and one or more existing folders (absolute, resolved); its first folder is the
primary one (the terminal's working directory). No folder may be one that never becomes writable
(:func:`hermes.tools.sandbox.writable_refusal`: ``/``, the home folder, HERMES_HOME, system folders,
credential stores, browser profiles, start-up folders, dot-folders of the home folder). Each folder's
(device, inode) is kept from when the person approved it: :meth:`Project.problems` names a folder that
has been swapped for a symlink or another folder since, and an open project's sandbox never binds one.
Changes are read-modify-write under an exclusive ``flock`` on ``projects.json.lock`` (two sessions or
the app and a session never lose an update) and land atomically (a crash leaves the old file). The
file tools never write it (it is hermes's state, :data:`hermes.tools.sensitive.HERMES_STATE_FILES`): a
folder only becomes a project's through ``desktop_project`` (with the person's approval) or the app.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.errors import ToolError

FILE_NAME = "projects.json"
MAX_PROJECTS = 200
MAX_FOLDERS = 32
_NAME = re.compile(r"^[^\x00-\x1f/\\]{1,64}$")


#: a folder's (st_dev, st_ino) when the person approved it (None: saved by an older hermes, never approved so)
Identity = tuple[int, int] | None


def identity_of(folder: str) -> tuple[int, int]:
    found = os.stat(folder)
    return found.st_dev, found.st_ino


@dataclass(frozen=True)
class Project:
    name: str
    folders: tuple[str, ...]
    created_at: float
    updated_at: float
    #: per folder (same order), its identity when approved
    identities: tuple[Identity, ...] = ()

    @property
    def primary(self) -> str:
        return self.folders[0]

    def pins(self) -> dict[str, tuple[int, int]]:
        """Each folder approved with an identity: the folder's (device, inode) then."""
        return {f: i for f, i in zip(self.folders, self.identities, strict=False) if i is not None}

    def problems(self) -> list[str]:
        """What keeps this project from being opened: per folder, why it is not the folder approved or may
        not become writable (an empty list: none)."""
        from hermes.tools.sandbox import changed_folder, writable_refusal

        pins = self.pins()
        out = []
        for folder in self.folders:
            why = None if folder in pins else "it was saved without the identity taken when it was approved"
            why = why or changed_folder(folder, pins)
            if why is None:
                why = writable_refusal(os.path.realpath(folder)) if os.path.isdir(folder) else "it is gone"
            if why is not None:
                out.append(f"{folder}: {why}")
        return out

    def stored(self) -> dict[str, Any]:
        return {**self.as_dict(), "identities": [list(i) if i is not None else None for i in self.identities]}

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "folders": list(self.folders), "created_at": self.created_at,
                "updated_at": self.updated_at}


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name.strip()) or not name.strip():
        raise ToolError("'name' must be 1-64 characters without '/', '\\' or control characters")
    return name.strip()


def resolve_folders(folders: Any, base: str | None = None) -> tuple[str, ...]:
    """Each folder expanded (``~``), made absolute against ``base`` and resolved; all must exist and none
    may be a folder that never becomes writable (:func:`hermes.tools.sandbox.writable_refusal`)."""
    from hermes.tools.sandbox import writable_refusal

    if isinstance(folders, str):
        folders = [folders]
    if not isinstance(folders, list) or not folders or not all(isinstance(f, str) and f.strip() for f in folders):
        raise ToolError("'folders' must be a non-empty list of folder paths")
    if len(folders) > MAX_FOLDERS:
        raise ToolError(f"a project holds at most {MAX_FOLDERS} folders")
    out: list[str] = []
    for raw in folders:
        path = Path(os.path.expanduser(raw.strip()))
        if not path.is_absolute():
            path = Path(base or os.getcwd()) / path
        real = path.resolve()
        if not real.is_dir():
            raise ToolError(f"'folders': {raw!r} is not an existing folder")
        why = writable_refusal(str(real))
        if why is not None:
            raise ToolError(f"'folders': {raw!r} ({real}) cannot be a project folder: {why}")
        if str(real) not in out:
            out.append(str(real))
    return tuple(out)


def _identity(raw: Any) -> Identity:
    if isinstance(raw, list) and len(raw) == 2 and all(isinstance(n, int) for n in raw):
        return raw[0], raw[1]
    return None


def _approved(folders: tuple[str, ...]) -> list[tuple[int, int]]:
    """The identities of ``folders`` (resolved) as the person approves them now."""
    out = []
    for folder in folders:
        try:
            if os.path.realpath(folder) != folder:
                raise ToolError(f"'folders': {folder} changed while it was being approved; try again")
            out.append(identity_of(folder))
        except OSError as exc:
            raise ToolError(f"'folders': {folder} is gone ({exc.strerror})") from None
    return out


class ProjectStore:
    """The projects of one HERMES_HOME (see the module docstring)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / FILE_NAME

    def _read(self) -> dict[str, Project]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ToolError(f"{self.path} cannot be read ({exc}); fix or remove it") from None
        items = raw.get("projects") if isinstance(raw, dict) else None
        if not isinstance(items, list):
            raise ToolError(f"{self.path} holds no 'projects' list; fix or remove it")
        out: dict[str, Project] = {}
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("folders"), list):
                folders = tuple(str(f) for f in item["folders"])
                raw_ids = item.get("identities")
                ids = [_identity(i) for i in raw_ids] if isinstance(raw_ids, list) else []
                ids = (ids + [None] * len(folders))[: len(folders)]
                out[item["name"]] = Project(item["name"], folders, float(item.get("created_at") or 0),
                                            float(item.get("updated_at") or 0), tuple(ids))
        return out

    def _write(self, projects: dict[str, Project]) -> None:
        from hermes.config.atomic import atomic_write

        body = {"version": 1, "projects": [p.stored() for p in projects.values()]}
        atomic_write(self.path, json.dumps(body, indent=2, ensure_ascii=False) + "\n", mode=0o600)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Project]]:
        """The projects, under the lock; what the block leaves in the dict is written when it changed."""
        self.home.mkdir(parents=True, exist_ok=True)
        handle = open(self.home / f"{FILE_NAME}.lock", "a")  # noqa: SIM115 - closed below, which unlocks
        try:
            if sys.platform != "win32":
                import fcntl

                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            projects = self._read()
            before = dict(projects)
            yield projects
            if projects != before:
                self._write(projects)
        finally:
            handle.close()

    def list(self) -> list[Project]:
        return sorted(self._read().values(), key=lambda p: p.name.lower())

    def get(self, name: str) -> Project:
        project = self._read().get(check_name(name))
        if project is None:
            known = ", ".join(p.name for p in self.list()) or "none yet"
            raise ToolError(f"no project named {name!r} (projects: {known})")
        return project

    def create(self, name: str, folders: tuple[str, ...]) -> Project:
        name = check_name(name)
        with self._locked() as projects:
            if name in projects:
                raise ToolError(f"a project named {name!r} exists already; change it with action='add_folders'")
            if len(projects) >= MAX_PROJECTS:
                raise ToolError(f"at most {MAX_PROJECTS} projects; delete one first")
            now = time.time()
            projects[name] = project = Project(name, folders, now, now, tuple(_approved(folders)))
        return project

    def change(self, name: str, *, add: tuple[str, ...] = (), remove: tuple[str, ...] = (),
               rename: str | None = None) -> Project:
        """``add`` (approved by the person now: a folder already in the project is approved again, with
        its identity of now), ``remove``, ``rename``."""
        name = check_name(name)
        with self._locked() as projects:
            old = projects.get(name)
            if old is None:
                raise ToolError(f"no project named {name!r}")
            ids = dict(zip(old.folders, old.identities, strict=False))
            ids.update(zip(add, _approved(add), strict=True))
            folders = [f for f in old.folders if f not in remove] + [f for f in add if f not in old.folders]
            if not folders:
                raise ToolError("a project keeps at least one folder; delete the project instead")
            if len(folders) > MAX_FOLDERS:
                raise ToolError(f"a project holds at most {MAX_FOLDERS} folders")
            new_name = check_name(rename) if rename else name
            if new_name != name and new_name in projects:
                raise ToolError(f"a project named {new_name!r} exists already")
            del projects[name]
            projects[new_name] = project = Project(new_name, tuple(folders), old.created_at, time.time(),
                                                   tuple(ids.get(f) for f in folders))
        return project

    def delete(self, name: str) -> bool:
        name = check_name(name)
        with self._locked() as projects:
            return projects.pop(name, None) is not None
