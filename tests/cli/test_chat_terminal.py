"""The interactive chat in a real terminal (tmux), against the scripted model server, driven by keys.

Each test types what a person would type and waits for what they would see: an endpoint error that
leaves the chat running, Ctrl-C at the prompt and during an answer, keys typed while an answer
streams, and the slash commands (docs/cli.md); the last test pipes stdin (no terminal).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Reply, call, error, text
from fakes.terminal import TmuxTerminal, have_tmux
from hermes.agent.loop import INTERRUPTED_ANSWER_MARK
from hermes.store.sessions import SessionStore
from hermes.surfaces.chat_commands import COMMANDS

pytestmark = [
    pytest.mark.skipif(not have_tmux(), reason="tmux is not installed"),
    pytest.mark.skipif(sys.platform == "win32", reason="a POSIX terminal"),
]

PROMPT = "you ›"
SAVED = "saved. Resume with: hermes chat --resume"

Open = Callable[..., TmuxTerminal]


@pytest.fixture
def open_chat(hermes_home: Path) -> Iterator[Open]:
    """``open_chat(server)`` starts ``hermes chat`` on that server in tmux and waits for its first prompt."""
    opened: list[TmuxTerminal] = []

    def start(server: Any, *args: str) -> TmuxTerminal:
        env = {"HERMES_HOME": str(hermes_home), "HOME": str(hermes_home), "LANG": "C.UTF-8",
               "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        if os.environ.get("PYTHONPATH"):
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        term = TmuxTerminal([sys.executable, "-m", "hermes", "chat", "--base-url", server.url,
                             "--model", "test-model", *args], env=env)
        opened.append(term)
        term.wait_for_prompt(PROMPT, 1)
        return term

    yield start
    for term in opened:
        term.close()


def stored(home: Path) -> list[list[dict[str, Any]]]:
    """Every stored session's messages, oldest session first."""
    with SessionStore(home / "state.db") as store:
        return [store.messages(s.id) for s in reversed(store.list_sessions())]


def said(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [(m["role"], m.get("content")) for m in messages if m["role"] != "system"]


def slow(words: int, delay: float) -> Reply:
    """An answer of ``words`` numbered words, streamed one word every ``delay`` seconds."""
    return Reply(content=" ".join(f"w{i}" for i in range(words)), chunk_delay=delay)


# -- item 4: the endpoint fails ----------------------------------------------------------------------
def test_model_error_keeps_the_chat_and_retry_sends_again(open_chat: Open, model_server: Any,
                                                          hermes_home: Path) -> None:
    server = model_server([error(404, "model test-model not found"), text("it works now")])
    term = open_chat(server)
    term.line("hello")
    shown = term.wait_for_prompt(PROMPT, 2)
    error_lines = [ln for ln in shown.splitlines() if "model test-model not found" in ln]
    assert len(error_lines) == 1 and "/retry" in shown, shown  # one line (the pane may wrap it)
    assert SAVED not in shown and "[exit status" not in shown and "Traceback" not in shown
    term.line("/retry")
    term.wait_for("it works now")
    term.wait_for_prompt(PROMPT, 3)
    term.line("/exit")
    assert term.exit_status() == 0
    assert SAVED in term.screen(history=True)
    # the second request carries the message once: the retry replaced it, it did not repeat it
    assert said(server.requests[1]["messages"]) == [("user", "hello")]
    assert [said(m) for m in stored(hermes_home)] == [[("user", "hello"), ("assistant", "it works now")]]


# -- item 11: Ctrl-C ---------------------------------------------------------------------------------
def test_ctrl_c_clears_a_typed_line_and_leaves_at_an_empty_prompt(open_chat: Open, model_server: Any) -> None:
    server = model_server([])
    term = open_chat(server)
    term.type("half a thought")
    term.wait_for(f"{PROMPT} half a thought")
    term.press("C-c")
    term.wait_until(lambda s: s.splitlines()[-1].rstrip() == PROMPT and "half a thought" not in s,
                    "the cleared prompt")
    term.press("C-c")
    assert term.exit_status() == 0
    shown = term.screen(history=True)
    assert SAVED in shown and "Traceback" not in shown
    assert server.requests == []


def test_ctrl_c_during_an_answer_keeps_what_it_said_marked(open_chat: Open, model_server: Any,
                                                           hermes_home: Path) -> None:
    server = model_server([slow(40, 0.4)])
    term = open_chat(server)
    term.line("tell me a long story")
    term.wait_for("w2 ")
    term.press("C-c")
    term.wait_for("interrupted")
    term.wait_for_prompt(PROMPT, 2)
    term.line("/history")
    term.wait_for(INTERRUPTED_ANSWER_MARK)
    term.wait_for_prompt(PROMPT, 3)
    term.press("C-c")
    assert term.exit_status() == 0
    (messages,) = stored(hermes_home)
    (user, answer) = said(messages)
    assert user == ("user", "tell me a long story")
    assert answer[0] == "assistant" and answer[1].startswith("w0 w1 w2")
    assert answer[1].endswith(INTERRUPTED_ANSWER_MARK) and "w39" not in answer[1]
    # `--continue` sends the interrupted answer along
    later = model_server([text("continuing")])
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    proc = subprocess.run([sys.executable, "-m", "hermes", "chat", "--continue", "-q", "go on", "--base-url",
                           later.url, "--model", "test-model"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert said(later.requests[0]["messages"]) == [user, (answer[0], answer[1]), ("user", "go on")]


# -- item 11: keys typed while an answer streams -----------------------------------------------------
def test_keys_typed_during_an_answer_are_not_echoed_and_wait_for_the_next_prompt(
        open_chat: Open, model_server: Any) -> None:
    server = model_server([slow(20, 0.3), text("got your zebra")])
    term = open_chat(server)
    term.line("hi")
    term.wait_for("w1 ")
    term.type("zebra")
    assert "w19" not in term.screen(history=True)  # typed while the answer was still streaming
    shown = term.wait_for_prompt(f"{PROMPT} zebra", 1)
    answer = shown[shown.index(f"{PROMPT} hi"):shown.rindex(f"{PROMPT} zebra")]
    assert "w19" in answer and "zebra" not in answer and "zeb" not in answer
    term.press("Enter")
    term.wait_for("got your zebra")
    assert said(server.requests[1]["messages"])[-1] == ("user", "zebra")


# -- item 11: slash commands -------------------------------------------------------------------------
def test_help_lists_every_command(open_chat: Open, model_server: Any) -> None:
    term = open_chat(model_server([]))
    term.line("/help")
    shown = term.wait_for_prompt(PROMPT, 2)
    listed = shown[shown.index("Commands:"):]
    for name in ("/model", "/history", "/retry", "/undo", "/new", "/clear", "/tools", "/todo", "/session",
                 "/exit"):
        assert name in COMMANDS and f"  {name}" in listed, name


def test_model_shows_and_switches_the_model(open_chat: Open, model_server: Any) -> None:
    server = model_server([text("answer from the other model")])
    term = open_chat(server)
    term.line("/model")
    term.wait_for(f"model test-model at {server.url}")
    term.line("/model other-model")
    term.wait_for("model switched to other-model")
    term.line("hi")
    term.wait_for("answer from the other model")
    assert server.requests[0]["model"] == "other-model"


def test_history_shows_the_turns_of_this_session(open_chat: Open, model_server: Any) -> None:
    server = model_server([
        call("todo_list", {"todos": [{"id": "1", "content": "boil water", "status": "pending"}]}),
        text("The plan is ready."),
        text("Nothing else."),
    ])
    term = open_chat(server)
    term.line("plan tea")
    term.wait_for("The plan is ready.")
    term.line("anything else?")
    term.wait_for_prompt(PROMPT, 3)
    term.line("/history")
    shown = term.wait_for_prompt(PROMPT, 4)
    history = shown[shown.rindex(f"{PROMPT} /history"):].splitlines()[1:-1]
    assert history[0] == "you: plan tea"
    assert history[1].startswith("  ⚙ todo_list(todos=") and "boil water" in history[1]
    assert history[2:] == ["hermes: The plan is ready.", "you: anything else?", "hermes: Nothing else."]


def test_undo_drops_the_last_exchange(open_chat: Open, model_server: Any, hermes_home: Path) -> None:
    server = model_server([text("first answer"), text("second answer"), text("third answer")])
    term = open_chat(server)
    term.line("alpha")
    term.wait_for("first answer")
    term.line("beta")
    term.wait_for("second answer")
    term.line("/undo")
    term.wait_for("removed the last exchange (2 messages): you: beta")
    term.line("gamma")
    term.wait_for("third answer")
    term.wait_for_prompt(PROMPT, 5)  # the turn is over (and stored)
    assert said(server.requests[2]["messages"]) == [("user", "alpha"), ("assistant", "first answer"),
                                                    ("user", "gamma")]
    (messages,) = stored(hermes_home)
    assert said(messages)[-2:] == [("user", "gamma"), ("assistant", "third answer")]
    assert len(messages) == 5


def test_retry_replaces_the_last_answer(open_chat: Open, model_server: Any, hermes_home: Path) -> None:
    server = model_server([text("a poor answer"), text("a better answer")])
    term = open_chat(server)
    term.line("alpha")
    term.wait_for("a poor answer")
    term.line("/retry")
    term.wait_for("a better answer")
    term.wait_for_prompt(PROMPT, 3)  # the turn is over (and stored)
    assert said(server.requests[1]["messages"]) == [("user", "alpha")]
    assert [said(m) for m in stored(hermes_home)] == [[("user", "alpha"), ("assistant", "a better answer")]]


def test_new_saves_the_session_and_starts_a_fresh_one(open_chat: Open, model_server: Any,
                                                      hermes_home: Path) -> None:
    server = model_server([text("first answer"), text("fresh answer")])
    term = open_chat(server)
    term.line("alpha")
    term.wait_for("first answer")
    term.line("/new")
    term.wait_for("new session ")
    term.line("beta")
    term.wait_for("fresh answer")
    term.wait_for_prompt(PROMPT, 4)  # the turn is over (and stored)
    assert said(server.requests[1]["messages"]) == [("user", "beta")]
    assert [said(m) for m in stored(hermes_home)] == [
        [("user", "alpha"), ("assistant", "first answer")], [("user", "beta"), ("assistant", "fresh answer")]]
    term.line("/exit")
    assert term.exit_status() == 0
    shown = term.screen(history=True)
    with SessionStore(hermes_home / "state.db") as store:
        first, second = (s.id for s in reversed(store.list_sessions()))
    assert f"Session {first} {SAVED}" in shown and f"Session {second} {SAVED}" in shown


def test_clear_clears_the_screen_and_starts_a_fresh_session(open_chat: Open, model_server: Any,
                                                            hermes_home: Path) -> None:
    server = model_server([text("first answer"), text("fresh answer")])
    term = open_chat(server)
    term.line("alpha")
    term.wait_for("first answer")
    term.line("/clear")
    term.wait_for("new session ")
    term.wait_until(lambda s: "first answer" not in s, "a cleared screen")
    term.line("beta")
    term.wait_for("fresh answer")
    assert said(server.requests[1]["messages"]) == [("user", "beta")]
    assert len(stored(hermes_home)) == 2


def test_retry_after_a_tool_budget_summary_resends_the_person_s_message(model_server: Any,
                                                                         hermes_home: Path) -> None:
    """The budget note the loop adds as a user message is not what /retry sends (piped stdin, no terminal)."""
    server = model_server([call("todo_list", {"todos": []}), text("summary"), text("second try")])
    env = {**os.environ, "HERMES_HOME": str(hermes_home)}
    proc = subprocess.run([sys.executable, "-m", "hermes", "chat", "--max-iterations", "1", "--base-url",
                           server.url, "--model", "test-model"], input="plan it\n/retry\n/history\n",
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "sending again: plan it" in proc.stdout and "second try" in proc.stdout
    assert said(server.requests[2]["messages"]) == [("user", "plan it")]
    assert "you: plan it\nhermes: second try" in proc.stdout  # /history: the budget note is not a turn
