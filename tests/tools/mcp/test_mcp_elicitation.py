"""Servers asking the person for input mid-call (MCP elicitation), through the session's clarify engine:
answered, cancelled, a wrong answer, nobody there, and a server not allowed to ask."""

from __future__ import annotations

import json
from typing import Any

from tools.mcp.conftest import McpHome, flaky_command, stdio, unwrap


class Person:
    """The surface's sink: answers each clarify request with ``reply`` (a result dict); records them."""

    def __init__(self) -> None:
        self.reply: Any = None
        self.requests: list[Any] = []

    def emit(self, event: Any) -> None:
        return None

    def ask(self, request: Any) -> Any:
        self.requests.append(request)
        return self.reply


def answered(*values: Any, outcome: str = "submitted") -> dict[str, Any]:
    responses = [{"status": "answered", "user_response": v} if v is not None else {"status": "skipped"}
                 for v in values]
    return {"responses": responses, "outcome": outcome}


def book(reg: Any, session: Any, tool: str = "mcp_flaky_book") -> str:
    """The server's answer, or ``refused: <error>`` when the call ended in an error."""
    data = json.loads(session.dispatch(tool, {}).text)
    if "error" in data:
        return f"refused: {data['error']}"
    return unwrap(data["result"])


def test_a_server_asks_the_person_through_clarify(mcp_home: McpHome) -> None:
    from hermes.tools.session import SessionContext, ToolSession
    from hermes.tools.toolsets import Surface

    mcp_home.configure({"flaky": stdio(flaky_command()),
                        "quiet": {**stdio(flaky_command()), "elicitation": False}})
    mcp_home.load()
    mcp_home.settle("flaky", "quiet")
    reg = mcp_home.load()
    person = Person()
    with_person = ToolSession(reg, None, SessionContext.from_settings(mcp_home.settings(), surface=Surface.CLI,
                                                                      sink=person))

    person.reply = answered("3", "yes", None)
    assert book(reg, with_person) == "booked 3 guests, terrace=True, note=''"
    (request,) = person.requests
    assert request.kind == "clarify"
    first, terrace, note = request.payload["questions"]
    assert first["question"].startswith("MCP server 'flaky' asks: Booking a table for tonight\n")
    assert "How many people" in first["question"]
    assert terrace["choices"] == ["yes", "no"] and "Sit outside?" in terrace["question"]
    assert "Anything the restaurant" in note["question"]

    person.reply = answered(None, None, None, outcome="cancelled")
    assert book(reg, with_person) == "cancel"
    person.reply = answered("three", "no", "")  # not a number: declined, never sent on as text
    assert book(reg, with_person) == "decline"
    person.reply = answered(None, "no", "x")  # a required field skipped
    assert book(reg, with_person) == "decline"
    person.reply = answered("2", "no", None, outcome="timed_out")  # nobody answered in time: refused
    assert "hermes refused the request for input: nobody answered" in book(reg, with_person)

    # a surface that breaks while asking refuses this request; the server keeps serving the next call
    class Broken(Person):
        def ask(self, request: Any) -> Any:
            raise RuntimeError("the terminal went away")

    broken = ToolSession(reg, None, SessionContext.from_settings(mcp_home.settings(), surface=Surface.CLI,
                                                                 sink=Broken()))
    assert "asking the person failed" in book(reg, broken)
    person.reply = answered("4", "no", None)
    assert book(reg, with_person) == "booked 4 guests, terrace=False, note=''"

    # no person on the session (a one-shot run): refused without asking anyone
    asked = len(person.requests)
    assert "nobody can answer on this surface" in book(reg, mcp_home.session(reg))
    # a server whose entry says elicitation: false cannot ask even a person who is there
    assert "did not declare the form elicitation capability" in book(reg, with_person, "mcp_quiet_book")
    assert len(person.requests) == asked


def test_two_sessions_asked_at_once_each_get_their_own_question(mcp_home: McpHome) -> None:
    import threading

    from hermes.tools.session import SessionContext, ToolSession
    from hermes.tools.toolsets import Surface

    mcp_home.configure({"flaky": stdio(flaky_command())})
    mcp_home.load()
    mcp_home.settle("flaky")
    reg = mcp_home.load()
    both_asked = threading.Barrier(2, timeout=30)

    class Waiting(Person):
        def ask(self, request: Any) -> Any:
            both_asked.wait()  # the two calls are in flight together when each person answers
            return super().ask(request)

    people = [Waiting(), Waiting()]
    people[0].reply, people[1].reply = answered("2", "no", None), answered("5", "yes", None)
    sessions = [ToolSession(reg, None, SessionContext.from_settings(mcp_home.settings(), surface=Surface.CLI,
                                                                    sink=p)) for p in people]
    results: dict[int, str] = {}
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, book(reg, sessions[i]))) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == {0: "booked 2 guests, terrace=False, note=''", 1: "booked 5 guests, terrace=True, note=''"}
    assert [len(p.requests) for p in people] == [1, 1]
