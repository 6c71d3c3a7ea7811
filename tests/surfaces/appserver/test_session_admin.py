"""``sessions.rename`` / ``sessions.delete`` over a real WebSocket, against the stored sessions."""

from __future__ import annotations

import threading
from typing import Any

from fakes.model_server import Reply
from hermes.store.sessions import SessionStore
from surfaces.appserver.harness import Rpc, Serve, last_user, url_of


def test_a_session_is_renamed_before_and_after_its_first_turn(serve: Serve, model_server: Any,
                                                               hermes_home: Any) -> None:
    rpc = Rpc(url_of(serve(model_server(lambda body: Reply(content="ok")).url)))
    fresh = rpc.call("sessions.create")["session"]
    renamed = rpc.call("sessions.rename", {"session": fresh, "title": "  Kitchen\nplans\t "})
    assert renamed == {"session": fresh, "session_id": None, "title": "Kitchen plans"}  # one line
    rpc.call("message.send", {"session": fresh, "text": "hi"})
    session_id = rpc.finished(fresh)["session_id"]
    listed = {s["session_id"]: s for s in rpc.call("sessions.list")["sessions"]}
    assert listed[session_id]["title"] == "Kitchen plans"
    rpc.call("sessions.rename", {"session_id": session_id, "title": "Hall colours"})
    assert SessionStore(hermes_home / "state.db").get_session(session_id).title == "Hall colours"
    assert rpc.call("sessions.resume", {"session_id": session_id})["title"] == "Hall colours"

    assert "blank" in rpc.request("sessions.rename", {"session": fresh, "title": " \n "})["error"]["message"]
    too_long = rpc.request("sessions.rename", {"session": fresh, "title": "x" * 201})
    assert "at most 200" in too_long["error"]["message"]
    nobody = rpc.request("sessions.rename", {"session_id": "nothing", "title": "t"})
    assert "no stored session 'nothing'" in nobody["error"]["message"]
    assert "name the session" in rpc.request("sessions.rename", {"title": "t"})["error"]["message"]
    rpc.close()


def test_deleting_a_session_removes_it_closes_it_and_tells_the_other_followers(
        serve: Serve, model_server: Any, hermes_home: Any) -> None:
    gate = threading.Event()

    def script(body: dict[str, Any]) -> Reply:
        if last_user(body) == "wait":
            gate.wait(20)
        return Reply(content="done")

    server = serve(model_server(script).url)
    rpc, other = Rpc(url_of(server)), Rpc(url_of(server))
    key = rpc.call("sessions.create")["session"]
    rpc.call("message.send", {"session": key, "text": "hi"})
    session_id = rpc.finished(key)["session_id"]
    assert other.call("sessions.resume", {"session_id": session_id})["session"] == key

    rpc.call("message.send", {"session": key, "text": "wait"})
    busy = rpc.request("sessions.delete", {"session_id": session_id})
    assert "running a turn; stop it first" in busy["error"]["message"]
    gate.set()
    rpc.wait_turns(key, 2)

    assert rpc.call("sessions.delete", {"session_id": session_id[:8]}) == {
        "deleted": True, "session": key, "session_id": session_id}
    note = other.wait_for(lambda n: n["method"] == "session.deleted")
    assert note["session"] == key and note["session_id"] == session_id
    assert session_id not in [s["session_id"] for s in rpc.call("sessions.list")["sessions"]]
    assert SessionStore(hermes_home / "state.db").list_sessions() == []
    assert "no session" in rpc.request("message.send", {"session": key, "text": "hi"})["error"]["message"]
    assert "no stored session" in rpc.request("sessions.delete", {"session_id": session_id})["error"]["message"]

    # a session never stored is closed here and nothing else
    fresh = rpc.call("sessions.create")["session"]
    assert rpc.call("sessions.delete", {"session": fresh})["session_id"] is None
    assert fresh not in [o["session"] for o in rpc.call("sessions.list")["open"]]
    rpc.close()
    other.close()




def test_only_the_apps_own_idle_sessions_are_deleted(serve: Serve, model_server: Any, hermes_home: Any) -> None:
    import contextlib
    import sqlite3
    import time

    store = SessionStore(hermes_home / "state.db")
    chat = store.create_session(surface="messaging", model="m", toolsets=[], tools=[], title="a family chat")
    tui = store.create_session(surface="tui", model="m", toolsets=[], tools=[], title="running in a TUI")
    rpc = Rpc(url_of(serve(model_server(lambda body: Reply(content="ok")).url)))
    refused = rpc.request("sessions.delete", {"session_id": chat})["error"]["message"]
    assert "started on the messaging surface" in refused and f"hermes sessions delete {chat}" in refused
    busy = rpc.request("sessions.delete", {"session_id": tui})["error"]["message"]
    assert "another process may be running it" in busy  # written just now, and not open in this server
    assert {s.id for s in store.list_sessions()} == {chat, tui}
    with contextlib.closing(sqlite3.connect(hermes_home / "state.db")) as conn:  # as if written a minute ago
        conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time() - 60, tui))
        conn.commit()
    assert rpc.call("sessions.delete", {"session_id": tui})["deleted"] is True
    assert [s.id for s in store.list_sessions()] == [chat]
    rpc.close()
