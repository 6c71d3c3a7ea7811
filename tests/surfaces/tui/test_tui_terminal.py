"""``hermes tui`` driven in tmux (tests/fakes/terminal.py) against the scripted model server.

The TUI starts its own app server in-process (or connects to one by ``--url``); the test types keys and
reads the screen, and checks what the model was sent.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Reply, call
from fakes.terminal import TmuxTerminal, have_tmux
from hermes.store.sessions import SessionStore
from hermes.surfaces.appserver.auth import ensure_token, read_token
from surfaces.appserver.harness import Serve, serve

pytestmark = [pytest.mark.skipif(not have_tmux(), reason="needs tmux"),
              pytest.mark.timeout(240)]
pytest.importorskip("textual")

Open = Callable[..., TmuxTerminal]
READY = "new session — say something"
__all__ = ["serve"]  # the fixture


@pytest.fixture
def open_tui(hermes_home: Path) -> Iterator[Open]:
    opened: list[TmuxTerminal] = []

    def start(model_url: str, *args: str, extra_env: dict[str, str] | None = None) -> TmuxTerminal:
        (hermes_home / "config.yaml").write_text(
            f"model:\n  base_url: {model_url}\n  name: test-model\n  max_retries: 0\n")
        env = {"HERMES_HOME": str(hermes_home), "HOME": str(hermes_home), "LANG": "C.UTF-8",
               "PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(extra_env or {})}
        if os.environ.get("PYTHONPATH"):
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        term = TmuxTerminal([sys.executable, "-m", "hermes", "tui", *args], env=env, width=140, height=45)
        opened.append(term)
        term.wait_for(READY, timeout=60)
        return term

    yield start
    for term in opened:
        term.close()


def tool_result(model: Any) -> dict[str, Any]:
    return dict(json.loads([m for m in model.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"]))


def test_a_message_streams_and_a_tool_call_is_shown(open_tui: Open, model_server: Any, hermes_home: Path) -> None:
    model = model_server([call("todo_list", {"todos": [{"id": "1", "content": "buy paint", "status": "pending"}]}),
                          Reply(content="Your list has one item: buy paint.")])
    term = open_tui(model.url)
    term.line("plan my weekend")
    term.wait_for("Your list has one item: buy paint.")
    shown = term.wait_for("todo_list")
    assert "you › plan my weekend" in shown and "✓ todo_list" in shown
    assert "catalog" not in {t["function"]["name"] for t in model.requests[0]["tools"]}  # a TUI session (TS-4)
    with SessionStore(hermes_home / "state.db") as store:
        assert [s.surface for s in store.list_sessions()] == ["tui"]
    term.press("C-q")
    assert term.exit_status() == 0


def test_clarify_tab_edit_skip_and_confirm_then_esc_cancels(open_tui: Open, model_server: Any) -> None:
    questions = [{"question": "Which colour?", "choices": ["red", "blue", "green"]},
                 {"question": "Which room?"},
                 {"question": "Which day?", "choices": ["sat", "sun"]}]
    model = model_server([call("clarify", {"questions": questions}), Reply(content="noted"),
                          call("clarify", {"questions": questions[:1]}), Reply(content="fine, later")])
    term = open_tui(model.url)
    term.line("paint the hall")
    term.wait_for("3 questions from Hermes")
    screen = term.wait_for("3) green")
    assert "▸ 1. Which colour?" in screen and "· 2. Which room?" in screen
    assert "sat" not in screen  # only the current question's choices are open
    term.press("Down", "Down")  # highlight blue
    term.press("Enter")  # confirm, move on to the room
    term.wait_for("✓ 1. Which colour?  → blue")
    term.press("Tab")  # leave the room unanswered for now: to the day
    term.wait_for("▸ 3. Which day?")
    term.type("2")  # the number picks the second choice
    term.press("BTab", "BTab")  # back to the colour, still editable
    term.wait_for("▸ 1. Which colour?")
    term.press("Down")  # now green
    term.press("Enter")  # confirms green and moves to the next unanswered: the room
    term.wait_for("▸ 2. Which room?")
    term.press("Enter")  # empty: skipped → the day, whose draft "2" is kept
    term.wait_for("▸ 3. Which day?")
    term.press("Enter")
    term.wait_for("noted")
    answered = tool_result(model)
    assert answered["outcome"] == "submitted"
    assert [(r["status"], r["user_response"]) for r in answered["responses"]] == \
        [("answered", "green"), ("skipped", None), ("answered", "sun")]

    term.line("and now?")
    term.wait_for("1 question from Hermes")
    term.press("Escape")
    term.wait_for("fine, later")
    assert tool_result(model)["outcome"] == "cancelled"
    term.press("C-q")
    assert term.exit_status() == 0


def test_by_url_it_uses_a_running_server_and_its_token(open_tui: Open, serve: Serve, model_server: Any,
                                                       hermes_home: Path) -> None:
    ensure_token(hermes_home)
    token = read_token(hermes_home)
    assert token is not None
    model = model_server([Reply(content="from the shared server")])
    server = serve(model.url, host="0.0.0.0")  # beyond loopback: the token is required
    url = f"ws://127.0.0.1:{server.port}/rpc"
    refused = TmuxTerminal([sys.executable, "-m", "hermes", "tui", "--url", url],
                           env={"HERMES_HOME": str(hermes_home), "PATH": os.environ.get("PATH", ""),
                                **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {})},
                           width=160)
    try:
        refused.wait_for("refused the connection: HTTP 403 (a missing or wrong token)", timeout=60)
    finally:
        refused.close()
    term = open_tui(model.url, "--url", url, extra_env={"HERMES_SERVE_TOKEN": token})
    term.line("hello")
    term.wait_for("from the shared server")
    assert token not in term.screen(history=True)
    term.press("C-q")
    assert term.exit_status() == 0
