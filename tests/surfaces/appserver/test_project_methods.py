"""``projects.*`` over a real WebSocket: the app edits the projects the desktop_project tool keeps, and
``projects.open`` lays one over a session (before its first turn and while it is open), for real commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes.model_server import Reply, call
from surfaces.appserver.harness import Rpc, Serve, url_of


def _results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _script(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(content="ok")
    return call("terminal", {"command": "pwd"}) if last["content"] == "where" else \
        call("desktop_project", {"action": "current"})


def test_projects_are_edited_from_the_app_and_opened_in_a_session(
        serve: Serve, model_server: Any, tmp_path: Path, hermes_home: Path) -> None:
    site, notes = tmp_path / "site", tmp_path / "notes"
    site.mkdir()
    notes.mkdir()
    model = model_server(_script)
    rpc = Rpc(url_of(serve(model.url)))
    created = rpc.call("projects.create", {"name": "Blog", "folders": [str(site)]})["created"]
    assert created["folders"] == [str(site.resolve())]  # no approval: the person made it in the app
    assert rpc.call("projects.change", {"name": "Blog", "add": [str(notes)]})["changed"]["folders"] == [
        str(site.resolve()), str(notes.resolve())]
    refused = rpc.request("projects.create", {"name": "Home", "folders": [str(hermes_home)]})
    assert "cannot be a project folder" in refused["error"]["message"]
    assert "not an existing folder" in rpc.request(
        "projects.create", {"name": "X", "folders": [str(tmp_path / "nope")]})["error"]["message"]
    listed = rpc.call("projects.list")["projects"]
    assert [(p["name"], p["opens"]) for p in listed] == [("Blog", True)]

    # chosen before the first turn: laid over the agent when it opens
    session = rpc.call("sessions.create")["session"]
    assert rpc.call("projects.open", {"session": session, "name": "Blog"})["open"] == "Blog"
    rpc.call("message.send", {"session": session, "text": "where"})
    rpc.wait_turns(session, 1)
    assert _results(model.requests[-1])[-1]["output"].strip() == str(site.resolve())
    rpc.call("message.send", {"session": session, "text": "which project"})
    rpc.wait_turns(session, 2)
    assert _results(model.requests[-1])[-1]["open"] == "Blog"
    assert rpc.call("projects.list", {"session": session})["open"] == "Blog"

    # closed while the agent is open: at once
    closed = rpc.call("projects.open", {"session": session, "name": None})
    assert closed["open"] is None and closed["closed"] is True
    rpc.call("message.send", {"session": session, "text": "where"})
    rpc.wait_turns(session, 3)
    assert _results(model.requests[-1])[-1]["output"].strip() != str(site.resolve())

    assert "no project named 'Nope'" in rpc.request(
        "projects.open", {"session": session, "name": "Nope"})["error"]["message"]
    assert rpc.call("projects.change", {"name": "Blog", "new_name": "Writing"})["changed"]["name"] == "Writing"
    assert rpc.call("projects.delete", {"name": "Writing"}) == {"deleted": True}
    assert rpc.call("projects.list")["projects"] == []
    rpc.close()
