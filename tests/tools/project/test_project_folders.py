"""A desktop project never makes a credential store or a swapped folder writable (real bwrap sandbox).

Each test has its own home folder (``HOME``, holding ``.ssh/authorized_keys``), a project folder
``proj`` in it with ``a`` and ``b`` inside, and HERMES_HOME beside it; the tools run in a real
:class:`ToolSession` whose person answers from a script.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.file.write
import hermes.tools.project.tool
import hermes.tools.terminal.tool
from fakes.tool_session import ScriptedSink
from hermes.config.paths import HermesPaths
from hermes.config.settings import Settings
from hermes.tools import sandbox, sandbox_pool
from hermes.tools.registry import registry
from hermes.tools.session import SessionContext, ToolSession
from hermes.tools.terminal.processes import manager
from hermes.tools.toolsets import Surface

assert hermes.tools.file.write and hermes.tools.project.tool and hermes.tools.terminal.tool  # registered so

pytestmark = pytest.mark.skipif(not sandbox.support().available,
                                reason=f"no sandbox here: {sandbox.support().missing}")

TASK, OTHER = "t-proj", "t-proj-other"


@dataclass
class Place:
    home: Path
    proj: Path
    hermes_home: Path

    @property
    def keys(self) -> Path:
        return self.home / ".ssh" / "authorized_keys"


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Place]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text("orig\n", encoding="utf-8")
    (home / ".config" / "chromium").mkdir(parents=True)
    proj = home / "proj"
    (proj / "a").mkdir(parents=True)
    (proj / "b").mkdir()
    hermes_home = tmp_path / "hh"
    hermes_home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(hermes_home))
    monkeypatch.chdir(proj)
    yield Place(home.resolve(), proj.resolve(), hermes_home.resolve())
    for task in (TASK, OTHER):
        manager.kill_session(task)
        sandbox_pool.drop(task)
        sandbox.drop_session_temp(task)


def _session(place: Place, sink: ScriptedSink, task: str = TASK) -> ToolSession:
    settings = Settings.load(HermesPaths(place.hermes_home))
    return ToolSession(registry, ["desktop_project", "terminal", "write_file"],
                       SessionContext(surface=Surface.CLI, task_id=task, settings=settings, sink=sink))


def _call(session: ToolSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = json.loads(session.dispatch(tool, args).text)
    assert isinstance(result, dict)
    return result


def test_a_folder_swapped_for_a_symlink_after_approval_is_never_writable(place: Place) -> None:
    session = _session(place, ScriptedSink("once"))
    b = place.proj / "b"
    assert "created" in _call(session, "desktop_project",
                              {"action": "create", "name": "p", "folders": [str(place.proj), str(b)]})
    assert _call(session, "desktop_project", {"action": "open", "name": "p"})["open"] == "p"
    # another session (the project not open there) swaps b for a link to ~/.ssh with a sandboxed command
    other = _session(place, ScriptedSink(), task=OTHER)
    swap = _call(other, "terminal", {"command": f"rmdir {b} && ln -s {place.home}/.ssh {b} && echo swapped"})
    assert swap["output"].strip() == "swapped" and b.is_symlink(), swap
    # the open project's next command resolves b again and leaves it read-only
    r = _call(session, "terminal", {"command": f"cd {place.proj} && echo attacker-key >> b/authorized_keys"})
    assert r["exit_code"] != 0, r
    assert "now leads to" in r["sandbox_note"] and str(place.home / ".ssh") in r["sandbox_note"], r
    # opened again (no approval asked): refused, naming the folder and why
    again = _call(session, "desktop_project", {"action": "open", "name": "p"})
    assert str(b) in again["error"] and "now leads to" in again["error"], again
    assert place.keys.read_text() == "orig\n"


def test_a_folder_moved_away_and_made_again_is_not_the_approved_one(place: Place) -> None:
    session = _session(place, ScriptedSink("once", "once"))  # (the second would let a write leave the sandbox's)
    extra = place.home / "extra"
    extra.mkdir()
    _call(session, "desktop_project", {"action": "create", "name": "p", "folders": [str(place.proj), str(extra)]})
    _call(session, "desktop_project", {"action": "open", "name": "p"})
    assert _call(session, "terminal", {"command": f"echo in > {extra}/f"})["exit_code"] == 0
    extra.rename(place.home / "extra-before")  # (kept, so the new folder cannot get its inode number)
    extra.mkdir()
    r = _call(session, "terminal", {"command": f"echo again > {extra}/g"})
    assert not (extra / "g").exists(), r  # (what the command wrote stayed in its private /tmp)
    assert f"{extra} stays read-only in the sandbox: it was replaced by another folder" in r["sandbox_note"], r
    # nor do the file tools write there: it is no longer one of the project's allowed roots
    written = _call(session, "write_file", {"path": str(extra / "h"), "content": "x"})
    assert "outside the allowed roots" in written["error"], written
    assert not (extra / "h").exists()
    assert "error" not in _call(session, "write_file", {"path": str(place.proj / "h"), "content": "x"})
    assert "replaced by another folder" in _call(session, "desktop_project", {"action": "open", "name": "p"})["error"]


@pytest.mark.parametrize(("folder", "why"), [
    ("~/.ssh", "credential store"),
    ("~/.config/chromium", "credential store"),  # a browser profile: cookies and logins
    ("~", "it is the home folder"),
    ("/etc", "system folder /etc"),
    ("HERMES_HOME", "inside HERMES_HOME"),
    ("/", "whole file system"),
])
def test_credential_stores_and_broad_folders_are_never_project_folders(place: Place, folder: str, why: str) -> None:
    folder = str(place.hermes_home) if folder == "HERMES_HOME" else folder
    session = _session(place, ScriptedSink("once", "once", "once"))
    made = _call(session, "desktop_project", {"action": "create", "name": "bad", "folders": [str(place.proj), folder]})
    assert "cannot be a project folder" in made["error"] and why in made["error"], made
    _call(session, "desktop_project", {"action": "create", "name": "p", "folders": [str(place.proj)]})
    added = _call(session, "desktop_project", {"action": "add_folders", "name": "p", "folders": [folder]})
    assert why in added["error"], added
    assert [p["folders"] for p in _call(session, "desktop_project", {"action": "list"})["projects"]] == \
        [[str(place.proj)]]


def test_a_credential_store_in_writable_paths_stays_read_only(place: Place) -> None:
    (place.hermes_home / "config.yaml").write_text(
        f"sandbox:\n  writable_paths: ['~/.ssh', '{place.proj / 'b'}']\n", encoding="utf-8")
    session = _session(place, ScriptedSink("once"))  # the person lets a command that names ~/.ssh run
    r = _call(session, "terminal", {"command": f"echo k >> {place.keys}; echo ok > {place.proj}/b/ok"})
    assert place.keys.read_text() == "orig\n" and (place.proj / "b" / "ok").exists(), r
    assert f"{place.home / '.ssh'} stays read-only in the sandbox" in r["sandbox_note"], r


def test_changing_a_projects_folders_asks_every_time(place: Place) -> None:
    sink = ScriptedSink("session", "session", "session", "session")
    session = _session(place, sink)
    _call(session, "desktop_project", {"action": "create", "name": "p", "folders": [str(place.proj)]})
    _call(session, "desktop_project", {"action": "add_folders", "name": "p", "folders": [str(place.proj / "a")]})
    _call(session, "desktop_project", {"action": "create", "name": "q", "folders": [str(place.proj / "b")]})
    assert len(sink.asked) == 3  # an answer "session" counts for its own call only
    assert all(r.payload["choices"] == ["once", "deny"] for r in sink.asked)
    _call(session, "desktop_project", {"action": "delete", "name": "q"})
    _call(session, "desktop_project", {"action": "delete", "name": "p"})
    assert len(sink.asked) == 4  # deleting may still be approved for the session


def test_a_project_saved_without_identities_is_approved_again_before_it_opens(place: Place) -> None:
    (place.hermes_home / "projects.json").write_text(json.dumps({"version": 1, "projects": [
        {"name": "old", "folders": [str(place.proj), str(place.proj / "b")], "created_at": 1, "updated_at": 1},
    ]}), encoding="utf-8")
    session = _session(place, ScriptedSink("once"))
    refused = _call(session, "desktop_project", {"action": "open", "name": "old"})
    assert "saved without the identity" in refused["error"] and "add_folders" in refused["error"], refused
    _call(session, "desktop_project", {"action": "add_folders", "name": "old",
                                       "folders": [str(place.proj), str(place.proj / "b")]})
    assert _call(session, "desktop_project", {"action": "open", "name": "old"})["open"] == "old"
    saved = json.loads((place.hermes_home / "projects.json").read_text())["projects"][0]
    b = os.stat(place.proj / "b")
    assert saved["identities"][1] == [b.st_dev, b.st_ino]
