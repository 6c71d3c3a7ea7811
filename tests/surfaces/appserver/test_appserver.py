"""The app server over a real WebSocket on 127.0.0.1, against the scripted model server."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from fakes.model_server import Reply, call
from hermes.config.settings import Settings
from hermes.errors import ConfigError
from hermes.surfaces.appserver.auth import Gate, ensure_token, read_token
from hermes.surfaces.appserver.rpc import AppApi
from hermes.surfaces.appserver.server import AppServer
from surfaces.appserver.harness import Rpc, Serve, last_user, url_of


def test_a_message_streams_its_deltas_in_order_then_the_answer_and_the_session_resumes(
        serve: Serve, model_server: Any) -> None:
    answer = "The quick brown fox jumps over the lazy dog, " * 6
    server = serve(model_server(lambda body: Reply(content=answer if last_user(body) == "hello" else "again")).url)
    rpc = Rpc(url_of(server))
    session = rpc.call("sessions.create", {"title": "first"})["session"]
    assert rpc.call("message.send", {"session": session, "text": "hello"}) == {"status": "started"}
    final = rpc.finished(session)
    deltas = rpc.events(session, "text_delta")
    assert len(deltas) > 1 and "".join(d["text"] for d in deltas) == answer
    assert final["final"] == answer and final["reason"] == "answered" and final["session_id"]
    rpc.close()

    other = Rpc(url_of(server))
    listed = other.call("sessions.list")
    stored = next(s for s in listed["sessions"] if s["session_id"] == final["session_id"])
    assert stored["title"] == "first" and stored["surface"] == "desktop"
    resumed = other.call("sessions.resume", {"session_id": final["session_id"]})
    assert resumed["session"] == session  # the live conversation, not a second agent on the same session
    assert [m["content"] for m in resumed["messages"]] == ["hello", answer]
    other.call("message.send", {"session": session, "text": "more"})
    assert other.finished(session)["final"] == "again"
    other.close()


def test_a_tool_call_is_shown_as_started_and_finished_events(serve: Serve, model_server: Any) -> None:
    model = model_server([call("todo_list", {"todos": [{"id": "1", "content": "paint", "status": "pending"}]}),
                          Reply(content="listed")])
    rpc = Rpc(url_of(serve(model.url)))
    session = rpc.call("sessions.create", {"toolsets": ["todo"]})["session"]
    rpc.call("message.send", {"session": session, "text": "plan it"})
    assert rpc.finished(session)["final"] == "listed"
    kinds = [e["type"] for e in rpc.events(session) if e["type"] in ("tool_started", "tool_finished", "turn_finished")]
    assert kinds == ["tool_started", "tool_finished", "turn_finished"]
    started, done = rpc.events(session, "tool_started")[0], rpc.events(session, "tool_finished")[0]
    assert started["name"] == done["name"] == "todo_list" and started["call_id"] == done["call_id"]
    assert json.loads(started["arguments"])["todos"][0]["content"] == "paint"
    assert "paint" in done["result"] and done["is_error"] is False
    rpc.close()


def test_an_interrupt_stops_the_answer_mid_stream(serve: Serve, model_server: Any) -> None:
    model = model_server(lambda body: Reply(content="word " * 400, chunk_delay=0.05))
    rpc = Rpc(url_of(serve(model.url)))
    session = rpc.call("sessions.create")["session"]
    rpc.call("message.send", {"session": session, "text": "talk"})
    rpc.wait_for(lambda n: n.get("type") == "text_delta")
    assert rpc.call("turn.interrupt", {"session": session}) == {"interrupted": True}
    final = rpc.finished(session)
    assert final["reason"] == "interrupted"
    assert len("".join(d["text"] for d in rpc.events(session, "text_delta"))) < len("word " * 400)
    assert rpc.call("turn.interrupt", {"session": session}) == {"interrupted": False}
    rpc.close()


def test_clarify_questions_come_as_a_request_and_the_answer_goes_back(serve: Serve, model_server: Any) -> None:
    model = model_server([
        call("clarify", {"questions": [{"question": "Which colour?", "choices": ["red", "blue"]},
                                       {"question": "Which room?"}]}),
        Reply(content="blue it is"),
    ])
    server = serve(model.url)
    rpc = Rpc(url_of(server))
    session = rpc.call("sessions.create", {"toolsets": ["clarify"]})["session"]
    rpc.call("message.send", {"session": session, "text": "paint it"})
    asked = rpc.wait_for(lambda n: n["method"] == "request")
    assert asked["kind"] == "clarify"
    assert [q["question"] for q in asked["questions"]] == ["Which colour?", "Which room?"]
    refused = rpc.request("message.send", {"session": session, "text": "hi"})
    assert "clarify.answer" in refused["error"]["message"]
    wrong = rpc.request("approval.answer", {"session": session, "choice": "once"})
    assert "no approval request" in wrong["error"]["message"]
    bad = rpc.request("clarify.answer", {"session": session, "answers": "blue"})
    assert bad["error"]["code"] == -32602 and "'answers'" in bad["error"]["message"]
    later = Rpc(url_of(server))  # a client connecting now learns what waits, and may answer it
    waiting = later.call("sessions.resume", {"session_id": asked["session_id"]})["waiting"]
    assert waiting == {k: v for k, v in asked.items() if k != "method"}
    assert later.call("clarify.answer", {"session": session, "request_id": asked["request_id"],
                                         "answers": ["blue", None]}) == {"accepted": True}
    assert rpc.finished(session)["final"] == "blue it is"
    assert later.finished(session)["final"] == "blue it is"
    later.close()
    result = json.loads(next(m for m in model.requests[1]["messages"] if m["role"] == "tool")["content"])
    assert result["outcome"] == "submitted"
    assert [(r["status"], r["user_response"]) for r in result["responses"]] == [("answered", "blue"), ("skipped", None)]
    rpc.close()


def test_a_dangerous_command_waits_for_approval_denied_then_approved(
        serve: Serve, model_server: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "build").mkdir(parents=True)

    def script(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(content="result: " + body["messages"][-1]["content"][:200])
        return call("terminal", {"command": "rm -rf build", "workdir": str(work)})

    model = model_server(script)
    rpc = Rpc(url_of(serve(model.url, extra_config=f"terminal:\n  cwd: {work}\n")))
    session = rpc.call("sessions.create", {"toolsets": ["terminal"]})["session"]
    seen: set[str] = set()
    for turns, choice in enumerate(("deny", "once"), start=1):
        rpc.call("message.send", {"session": session, "text": "clean up"})
        asked = rpc.wait_for(lambda note: note["method"] == "request" and note["request_id"] not in seen)
        seen.add(asked["request_id"])
        assert asked["kind"] == "approval" and asked["command"].startswith("rm -rf build")
        assert "once" in asked["choices"]
        assert (work / "build").exists()
        bad = rpc.request("approval.answer", {"session": session, "choice": "maybe"})
        assert "'choice' must be one of once, session, always, deny" in bad["error"]["message"]
        assert rpc.call("approval.answer", {"session": session, "choice": choice})["accepted"]
        rpc.wait_turns(session, turns)
        result = json.loads([m for m in model.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"])
        if choice == "deny":
            assert "denied" in result["error"] and (work / "build").exists()
        else:
            assert result.get("exit_code") == 0 and not (work / "build").exists(), result
    rpc.close()


def test_two_clients_on_two_sessions_run_at_once_and_see_only_their_own_events(
        serve: Serve, model_server: Any) -> None:
    both_asked = threading.Barrier(2, timeout=20)

    def script(body: dict[str, Any]) -> Reply:
        both_asked.wait()  # neither answer comes before both turns reached the model
        return Reply(content=f"re: {last_user(body)}")

    server = serve(model_server(script).url)
    first, second = Rpc(url_of(server)), Rpc(url_of(server))
    one = first.call("sessions.create")["session"]
    two = second.call("sessions.create")["session"]
    first.call("message.send", {"session": one, "text": "one"})
    second.call("message.send", {"session": two, "text": "two"})
    assert first.finished(one)["final"] == "re: one"
    assert second.finished(two)["final"] == "re: two"
    assert not first.events(two) and not second.events(one)
    assert first.finished(one)["session_id"] != second.finished(two)["session_id"]
    first.close()
    second.close()


def test_bad_requests_get_errors_naming_the_problem(serve: Serve, model_server: Any) -> None:
    rpc = Rpc(url_of(serve(model_server([], models=["m", "other"]).url)))
    rpc.ws.send("{not json")
    assert json.loads(rpc.ws.recv(timeout=10))["error"]["code"] == -32700
    missing = rpc.request("sessions.archive")
    assert missing["error"]["code"] == -32601 and "sessions.create" in missing["error"]["message"]
    unknown = rpc.request("message.send", {"session": "app:nope", "text": "hi"})
    assert "no session 'app:nope'" in unknown["error"]["message"]
    toolsets = rpc.request("sessions.create", {"toolsets": ["no_such"]})
    assert "unknown toolset(s): no_such" in toolsets["error"]["message"]
    gone = rpc.request("sessions.resume", {"session_id": "nothing"})
    assert "no stored session 'nothing'" in gone["error"]["message"]
    names = {t["name"] for t in rpc.call("toolsets.list")["toolsets"]}
    assert {"desktop_ui", "catalog", "clarify"} <= names and "discord" not in names
    models = rpc.call("models.list")
    assert models["current"]["model"] == "m" and models["models"] == ["m", "other"]
    rpc.close()


def test_beyond_loopback_a_missing_or_wrong_token_is_refused(
        serve: Serve, model_server: Any, hermes_home: Path) -> None:
    with pytest.raises(ConfigError, match="needs a bearer token"):
        Gate("0.0.0.0", None)
    path = ensure_token(hermes_home)
    assert path.stat().st_mode & 0o777 == 0o600
    token = read_token(hermes_home)
    server = serve(model_server([]).url, host="0.0.0.0")
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        with pytest.raises(InvalidStatus) as refused:
            Rpc(url_of(server), additional_headers=headers)
        assert refused.value.response.status_code == 403
    with pytest.raises(InvalidStatus):
        Rpc(url_of(server) + "?token=wrong")
    rpc = Rpc(url_of(server), additional_headers={"Authorization": f"Bearer {token}"})
    assert rpc.call("toolsets.list")["toolsets"]
    rpc.close()
    rpc = Rpc(f"{url_of(server)}?token={token}")
    assert rpc.call("toolsets.list")["toolsets"]
    rpc.close()


def test_on_loopback_no_token_is_needed_but_a_foreign_web_page_is_refused(
        serve: Serve, model_server: Any, hermes_home: Path) -> None:
    ensure_token(hermes_home)
    token = read_token(hermes_home)
    server = serve(model_server([]).url)
    for client in (Rpc(url_of(server)), Rpc(url_of(server), additional_headers={"Authorization": f"Bearer {token}"}),
                   Rpc(url_of(server), origin="http://localhost:5173")):  # type: ignore[arg-type]
        assert client.call("toolsets.list")["toolsets"]
        client.close()
    with pytest.raises(InvalidStatus):
        Rpc(url_of(server), origin="https://evil.example")  # type: ignore[arg-type]
    with pytest.raises(InvalidStatus):
        Rpc(url_of(server), additional_headers={"Authorization": "Bearer wrong"})


def test_on_a_shared_machine_loopback_can_require_the_token(model_server: Any, hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(f"model:\n  base_url: {model_server([]).url}\n  name: m\n")
    token = read_token(ensure_token(hermes_home).parent)
    server = AppServer(AppApi(Settings.load()), Gate("127.0.0.1", token, require_token=True), "127.0.0.1", 0)
    server.start()
    try:
        with pytest.raises(InvalidStatus) as refused:
            Rpc(url_of(server))  # another local user, without the token
        assert refused.value.response.status_code == 403
        rpc = Rpc(url_of(server), additional_headers={"Authorization": f"Bearer {token}"})
        assert rpc.call("toolsets.list")["toolsets"]
        rpc.close()
    finally:
        server.stop()


def test_keys_sent_back_to_back_reach_the_terminal_in_order(serve: Serve, model_server: Any, tmp_path: Path) -> None:
    """A terminal's keys come one message each, as fast as a person (or a paste) types: the server answers
    messages concurrently, but the keys must reach the shell in the order they were sent."""
    import time

    server = serve(model_server([Reply(content="unused")]).url)
    rpc = Rpc(url_of(server))
    terminal = rpc.call("terminal.open", {"cwd": str(tmp_path)})["terminal"]
    out = tmp_path / "typed.txt"
    rpc.call("terminal.input", {"terminal": terminal, "data": f"stty -echo; cat > {out}\n"})
    time.sleep(0.5)  # the shell runs cat; the keys below go to cat's standard input
    typed = "".join(f"{i:03d}," for i in range(400))
    for n, key in enumerate(typed, 1000):  # no waiting for answers: like keydown events, back to back
        rpc.ws.send(json.dumps({"jsonrpc": "2.0", "id": n, "method": "terminal.input",
                                "params": {"terminal": terminal, "data": key}}))
    rpc.call("terminal.input", {"terminal": terminal, "data": "\n\x04"})
    deadline = time.monotonic() + 30
    while (not out.exists() or out.read_text().strip() != typed) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert out.read_text().strip() == typed
    rpc.call("terminal.close", {"terminal": terminal})
    rpc.close()
