"""desktop_project and catalog in a desktop session on a real app server, against the scripted model."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from fakes.model_server import Reply, call
from hermes.tools.project.store import ProjectStore
from surfaces.appserver.harness import Rpc, Serve, serve, url_of

__all__ = ["serve"]  # the fixture


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def test_a_project_becomes_the_sessions_workspace_for_files_and_terminal(
        serve: Serve, model_server: Any, tmp_path: Path, hermes_home: Path) -> None:
    site, notes, outside = tmp_path / "site", tmp_path / "notes", tmp_path / "outside"
    for folder in (site, notes, outside):
        folder.mkdir()
    model = model_server([
        call("desktop_project", {"action": "create", "name": "Blog", "folders": [str(site), str(notes)]}),
        call("desktop_project", {"action": "open", "name": "Blog"}),
        call("write_file", {"path": str(notes / "todo.md"), "content": "write\n"}),
        call("write_file", {"path": str(outside / "x.md"), "content": "no\n"}),
        call("terminal", {"command": "pwd"}),
        call("desktop_project", {"action": "close"}),
        call("terminal", {"command": "pwd"}),
        call("desktop_project", {"action": "current"}),
        Reply(content="done"),
    ])
    rpc = Rpc(url_of(serve(model.url)))
    session = rpc.call("sessions.create")["session"]
    rpc.call("message.send", {"session": session, "text": "set up the blog project"})
    asked = rpc.wait_for(lambda n: n["method"] == "request")
    assert asked["kind"] == "approval" and "desktop_project" in asked["command"]  # creating widens the roots
    rpc.call("approval.answer", {"session": session, "choice": "once"})
    assert rpc.finished(session)["final"] == "done"
    created, opened, inside, refused, pwd, closed, pwd_after, current = tool_results(model.requests[-1])
    assert created["created"]["folders"] == [str(site.resolve()), str(notes.resolve())]
    assert opened["cwd"] == str(site.resolve())
    assert "error" not in inside and (notes / "todo.md").read_text() == "write\n"
    assert "outside the allowed roots" in refused["error"] and str(site.resolve()) in refused["error"]
    assert pwd["output"].strip() == str(site.resolve()), pwd
    assert closed["closed"] is True and current == {"open": None}
    assert pwd_after["output"].strip() != str(site.resolve()) and not (outside / "x.md").exists()
    saved = hermes_home / "projects.json"
    assert saved.stat().st_mode & 0o777 == 0o600
    assert [p["name"] for p in json.loads(saved.read_text())["projects"]] == ["Blog"]
    assert "config.yaml" not in {p.name for p in hermes_home.iterdir()} or \
        "allowed_roots" not in (hermes_home / "config.yaml").read_text()  # the layer is never saved
    rpc.close()


def test_projects_json_is_refused_to_the_file_tools_and_bad_input_is_named(
        serve: Serve, model_server: Any, hermes_home: Path, tmp_path: Path) -> None:
    model = model_server([
        call("write_file", {"path": str(hermes_home / "projects.json"), "content": "{}"}),
        call("desktop_project", {"action": "open", "name": "Nope"}),
        call("desktop_project", {"action": "rename", "name": "a/b", "new_name": "c"}),
        Reply(content="ok"),
    ])
    rpc = Rpc(url_of(serve(model.url)))
    session = rpc.call("sessions.create")["session"]
    rpc.call("message.send", {"session": session, "text": "try"})
    rpc.finished(session)
    protected, missing, bad_name = tool_results(model.requests[-1])
    assert "not allowed" in protected["error"] and "projects.json" in protected["error"]
    assert "no project named 'Nope'" in missing["error"]
    assert "'name' must be 1-64 characters" in bad_name["error"]
    rpc.close()


def test_two_writers_at_once_lose_no_project(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = tmp_path / "f"
    folder.mkdir()
    start = threading.Barrier(8)

    def make(i: int) -> None:
        start.wait()
        ProjectStore(home).create(f"p{i}", (str(folder),))

    threads = [threading.Thread(target=make, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(p.name for p in ProjectStore(home).list()) == [f"p{i}" for i in range(8)]


def test_catalog_tells_what_the_installation_has_and_how_to_turn_it_on(serve: Serve, model_server: Any) -> None:
    model = model_server([
        call("catalog", {"action": "search", "query": "video", "kind": "toolset"}),
        call("catalog", {"action": "show", "name": "video"}),
        call("catalog", {"action": "show", "name": "web_search"}),
        call("catalog", {"action": "search", "query": "max_iterations", "kind": "setting"}),
        call("catalog", {"action": "show", "name": "no_such_thing"}),
        Reply(content="ok"),
    ])
    rpc = Rpc(url_of(serve(model.url)))
    session = rpc.call("sessions.create")["session"]
    rpc.call("message.send", {"session": session, "text": "can you make videos?"})
    rpc.finished(session)
    assert "catalog" in {t["function"]["name"] for t in model.requests[0]["tools"]}
    search, video, web, setting, missing = tool_results(model.requests[-1])
    assert {"video", "video_gen"} <= {e["name"] for e in search["entries"]}
    assert video["in_session"] is False and "hermes tools enable video" in video["turn_on"]
    assert {t["name"] for t in video["tools"]} >= {"video_generate", "xai_video_edit"}
    assert web["kind"] == "tool" and web["in_session"] is True and "query" in web["parameters"]["properties"]
    assert [e["name"] for e in setting["entries"]] == ["agent.max_iterations", "delegation.max_iterations"]
    assert "nothing named 'no_such_thing'" in missing["error"]
    rpc.close()
