"""requirement T-CLAR, TUI/CLI: the prompt_toolkit clarify engine and the approval prompt, driven by real key input.

The applications run for real; keys go in through prompt_toolkit's pipe input and the screen is a
DummyOutput, so no terminal is needed. An optional tmux test drives the prompt in a real terminal.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.input import PipeInput
from prompt_toolkit.output import DummyOutput

from hermes.agent.events import Notice, Request, TextDelta
from hermes.surfaces.clarify_cli import (
    ClarifyPrompt,
    line_approval,
    line_clarify,
    run_approval_prompt,
    run_clarify_prompt,
)
from hermes.surfaces.console import ConsoleSink
from hermes.tools.clarify.core import ClarifyRequest, ClarifySession, Question

UP, DOWN, ENTER, TAB, SHIFT_TAB, ESC, CTRL_C, SPACE = "\x1b[A", "\x1b[B", "\r", "\t", "\x1b[Z", "\x1b", "\x03", " "

QUESTIONS = [
    Question("Which database?", ("PostgreSQL", "SQLite", "DuckDB")),
    Question("Project name?"),
    Question("Features?", ("auth", "billing", "search"), multi_select=True),
]


def ask(pipe: PipeInput, keys: str, timeout: float = 5.0, questions: list[Question] = QUESTIONS) -> dict[str, Any]:
    pipe.send_text(keys)
    started = time.monotonic()
    state = run_clarify_prompt(ClarifySession(questions), timeout, input=pipe, output=DummyOutput())
    assert time.monotonic() - started < timeout + 3  # never hangs
    return state.result()


def statuses(result: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(r["status"], r["user_response"]) for r in result["responses"]]


# -- the clarify engine -----------------------------------------------------------------------------
def test_enter_confirms_each_answer_in_turn(pipe: PipeInput) -> None:
    out = ask(pipe, DOWN + DOWN + ENTER + "hermes" + ENTER + DOWN + SPACE + DOWN + DOWN + SPACE + ENTER)
    assert out["outcome"] == "submitted"
    assert statuses(out) == [("answered", "SQLite"), ("answered", "hermes"), ("answered", ["auth", "search"])]


def test_typed_numbers_and_own_words_answer_choice_questions(pipe: PipeInput) -> None:
    out = ask(pipe, "3" + ENTER + "x" + ENTER + "2, wiki" + ENTER)
    assert statuses(out) == [("answered", "DuckDB"), ("answered", "x"), ("answered", ["billing", "wiki"])]


def test_tab_answers_in_any_order(pipe: PipeInput) -> None:
    # Tab to question 3, answer it; Enter moves on to the next unanswered (wrapping to question 1), then
    # to question 2; Shift-Tab goes back to 1 and Tab forward again without changing anything
    keys = TAB + TAB + "1" + ENTER + DOWN + ENTER + SHIFT_TAB + TAB + "late" + ENTER
    out = ask(pipe, keys)
    assert out["outcome"] == "submitted"
    assert statuses(out) == [("answered", "PostgreSQL"), ("answered", "late"), ("answered", ["auth"])]


def test_empty_submit_skips_that_question(pipe: PipeInput) -> None:
    out = ask(pipe, ENTER + "name" + ENTER + ENTER)
    assert out["outcome"] == "submitted"
    assert statuses(out) == [("skipped", None), ("answered", "name"), ("skipped", None)]


def test_esc_cancels_everything(pipe: PipeInput) -> None:
    out = ask(pipe, DOWN + ENTER + "half typed" + ESC)
    assert out["outcome"] == "cancelled"
    assert statuses(out) == [("skipped", None)] * 3


def test_ctrl_c_cancels_too(pipe: PipeInput) -> None:
    assert ask(pipe, CTRL_C)["outcome"] == "cancelled"


def test_multi_select_space_toggles(pipe: PipeInput) -> None:
    q = [Question("Pick", ("a", "b", "c"), multi_select=True)]
    # tick a and b, untick a, tick c
    out = ask(pipe, DOWN + SPACE + DOWN + SPACE + UP + SPACE + DOWN + DOWN + SPACE + ENTER, questions=q)
    assert statuses(out) == [("answered", ["b", "c"])]


def test_timeout_keeps_confirmed_answers(pipe: PipeInput) -> None:
    out = ask(pipe, DOWN + ENTER + ENTER + "typed, never confirmed", timeout=0.4)
    assert out["outcome"] == "timed_out"
    assert statuses(out) == [("answered", "PostgreSQL"), ("skipped", None), ("unanswered", None)]


def test_revisiting_an_answered_question_keeps_or_changes_it(pipe: PipeInput) -> None:
    # answer 1 and 2; back to 2 (its answer is shown), change it; back to 1 (SQLite still highlighted),
    # Enter keeps it; each Enter goes on to question 3, the only one left
    keys = DOWN + DOWN + ENTER + "old" + ENTER + SHIFT_TAB + "\x7f" * 3 + "new" + ENTER
    keys += SHIFT_TAB + SHIFT_TAB + ENTER + "1" + ENTER
    out = ask(pipe, keys)
    assert statuses(out) == [("answered", "SQLite"), ("answered", "new"), ("answered", ["auth"])]


def test_keys_arriving_while_running(pipe: PipeInput) -> None:
    """Keys typed after the prompt is up (from another thread) are handled like a person typing."""
    def typist() -> None:
        for key in (DOWN, ENTER, "me", ENTER, ENTER):
            time.sleep(0.05)
            pipe.send_text(key)

    thread = threading.Thread(target=typist, daemon=True)
    thread.start()
    state = run_clarify_prompt(ClarifySession(QUESTIONS), 5, input=pipe, output=DummyOutput())
    thread.join(timeout=5)
    assert statuses(state.result()) == [("answered", "PostgreSQL"), ("answered", "me"), ("skipped", None)]


def test_status_list_markers_and_only_current_choices_open(pipe: PipeInput) -> None:
    prompt = ClarifyPrompt(ClarifySession(QUESTIONS), input=pipe, output=DummyOutput())

    def screen() -> str:
        return "".join(t for _style, t, *_ in prompt._render())

    first = screen()
    assert "▸ 1. Which database?" in first and "· 2. Project name?" in first and "· 3. Features?" in first
    assert "SQLite" in first and "billing" not in first  # only the current question's choices are open
    prompt.cursor[0] = 1
    prompt.confirm()
    second = screen()
    assert "✓ 1. Which database?  → SQLite" in second and "▸ 2. Project name?" in second
    assert "PostgreSQL" not in second
    prompt.confirm()  # empty: skipped
    third = screen()
    assert "(skipped)" in third and "▸ 3. Features?" in third and "[ ] 2) billing" in third


# -- the approval prompt ----------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "expected"), [("o", "once"), ("s", "session"), ("a", "always"), ("d", "deny"),
                                               ("A", "always"), (ESC, "deny"), (CTRL_C, "deny")])
def test_approval_keys(pipe: PipeInput, key: str, expected: str) -> None:
    pipe.send_text("x" + key)  # an unrelated key first is ignored
    assert run_approval_prompt("rm -rf build", "recursive delete", 5, input=pipe, output=DummyOutput()) == expected


def test_approval_timeout_means_nobody_answered(pipe: PipeInput) -> None:
    started = time.monotonic()
    assert run_approval_prompt("rm -rf build", "recursive delete", 0.2, input=pipe, output=DummyOutput()) is None
    assert time.monotonic() - started < 3


# -- line mode and the console sink ------------------------------------------------------------------
def test_line_clarify() -> None:
    out = io.StringIO()
    lines = iter(["2\n", "\n", "1,3\n"])
    state = line_clarify(ClarifySession(QUESTIONS), lambda: next(lines, ""), out.write)
    assert statuses(state.result()) == [("answered", "SQLite"), ("skipped", None),
                                        ("answered", ["auth", "search"])]
    assert "❓ (1/3) Which database?" in out.getvalue() and "   2) SQLite" in out.getvalue()
    lines = iter(["x\n", "/cancel\n"])
    assert line_clarify(ClarifySession(QUESTIONS), lambda: next(lines, ""), out.write).outcome == "cancelled"
    lines = iter(["x\n"])  # end of input: no reply
    state = line_clarify(ClarifySession(QUESTIONS), lambda: next(lines, ""), out.write)
    assert state.outcome == "timed_out" and statuses(state.result())[0] == ("answered", "x")


def test_line_approval() -> None:
    out = io.StringIO()
    assert line_approval("ls", "why", io.StringIO("maybe\nSession\n"), out.write) == "session"
    assert line_approval("ls", "why", io.StringIO(""), out.write) is None
    assert line_approval("ls", "why", io.StringIO("?\n?\n?\n"), out.write) == "deny"
    assert "$ ls" in out.getvalue() and "Allow? [o]nce / [s]ession / [a]lways / [d]eny" in out.getvalue()


def test_non_interactive_console_sink_answers_none() -> None:
    sink = ConsoleSink(out=io.StringIO(), activity=io.StringIO(), stdin=io.StringIO("1\n"))
    assert sink.ask(ClarifyRequest.build(QUESTIONS, 5)) is None
    assert sink.ask(Request("approval", {"command": "ls", "reason": "r"})) is None


def test_interactive_console_sink_dispatches_on_kind() -> None:
    out = io.StringIO()
    sink = ConsoleSink(out=out, activity=out, interactive=True, stdin=io.StringIO("1\nme\n\no\n"))
    sink.emit(TextDelta("thinking about it"))
    result = sink.ask(ClarifyRequest.build(QUESTIONS, 5))
    assert result["outcome"] == "submitted"
    assert statuses(result) == [("answered", "PostgreSQL"), ("answered", "me"), ("skipped", None)]
    assert out.getvalue().startswith("thinking about it\n❓")  # the prompt starts on a fresh line
    assert sink.ask(Request("approval", {"command": "rm -rf x", "reason": "recursive delete"})) == "once"
    assert sink.ask(Request("sudo_password", {})) is None
    json.dumps(result)


def test_events_during_a_prompt_are_held_until_it_ends() -> None:
    out = io.StringIO()
    sink = ConsoleSink(out=out, activity=out, interactive=True, stdin=io.StringIO())

    def slow_line() -> str:
        sink.emit(Notice("info", "background tool finished"))  # another thread would do this
        assert "background tool finished" not in out.getvalue()
        return ""

    sink._stdin = io.StringIO()
    sink._stdin.readline = slow_line  # type: ignore[method-assign]
    result = sink.ask(ClarifyRequest.build(QUESTIONS[:1], 5))
    assert result["outcome"] == "timed_out"
    assert out.getvalue().endswith("background tool finished\n")


# -- a real terminal (optional) -----------------------------------------------------------------------
TMUX_SCRIPT = """
import json, sys
from hermes.surfaces.clarify_cli import run_clarify_prompt
from hermes.tools.clarify.core import ClarifySession, Question
qs = [Question("Which database?", ("PostgreSQL", "SQLite")), Question("Project name?")]
state = run_clarify_prompt(ClarifySession(qs), 20)
import os
with open(sys.argv[1] + ".tmp", "w") as out:  # renamed when complete: the test never reads half a file
    out.write(json.dumps(state.result()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
"""


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_tmux_smoke(tmp_path: Path) -> None:
    script = tmp_path / "prompt.py"
    script.write_text(textwrap.dedent(TMUX_SCRIPT))
    result = tmp_path / "result.json"
    sock = f"hermes-test-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]

    def screen() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p", "-t", "t"], capture_output=True, text=True,
                              timeout=5).stdout

    def wait_for(text: str) -> str:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            shown = screen()
            if text in shown:
                time.sleep(0.3)  # let the application finish drawing before keys arrive (busy machines)
                return shown
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared:\n{screen()}")

    subprocess.run([*tmux, "new-session", "-d", "-s", "t", "-x", "100", "-y", "30",
                    f"{sys.executable} {script} {result}"], check=True, timeout=10)
    try:
        first = wait_for("Which database?")
        assert "▸ 1. Which database?" in first and "· 2. Project name?" in first
        subprocess.run([*tmux, "send-keys", "-t", "t", "Down", "Down", "Enter"], check=True, timeout=5)
        assert "✓ 1. Which database?" in wait_for("▸ 2. Project name?")
        subprocess.run([*tmux, "send-keys", "-t", "t", "-l", "demo"], check=True, timeout=5)
        subprocess.run([*tmux, "send-keys", "-t", "t", "Enter"], check=True, timeout=5)
        deadline = time.monotonic() + 10
        while not result.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        out = json.loads(result.read_text())
        assert out["outcome"] == "submitted"
        assert statuses(out) == [("answered", "SQLite"), ("answered", "demo")]
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=5)
