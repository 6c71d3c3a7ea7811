"""Asking the person at the terminal: clarify questions and command approvals.

:func:`run_clarify_prompt` is the TUI/CLI engine of ``clarify`` (requirement T-CLAR): a prompt_toolkit
application drawn inline below the chat, showing a compact status list (``✓`` answered, ``▸``
answering, ``·`` unanswered) where only the current question's choices are open.

* ↑/↓ highlight a choice (Space ticks it on multi-select questions); typing gives an answer in your
  own words — a number or a choice's text picks that choice, commas separate several picks;
* Enter confirms the current answer and moves to the next unanswered question; Enter with nothing
  chosen or typed skips that question;
* Tab / Shift-Tab move between questions in any order (answers stay editable until all are done);
* Esc (or Ctrl-C) cancels everything;
* when every question is answered or skipped the answers are submitted; when ``timeout`` runs out,
  the confirmed answers are kept and the rest stay unanswered.

:func:`run_approval_prompt` asks ``Allow? [o]nce / [s]ession / [a]lways / [d]eny`` for a dangerous
command. Both take an optional prompt_toolkit ``Input``/``Output`` so tests can drive them through a
pipe; :func:`line_clarify` and :func:`line_approval` are the plain line-by-line versions used when
stdin is not a terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, TextIO

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import ConditionalContainer, HSplit, Layout, Window
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
from prompt_toolkit.output import Output
from prompt_toolkit.styles import Style

from hermes.surfaces.clarify_card import HINT, ClarifyCard
from hermes.tools.clarify.core import Answer, ClarifySession

__all__ = ["HINT", "ClarifyPrompt", "line_approval", "line_clarify", "run_approval_prompt", "run_clarify_prompt"]

APPROVAL_CHOICES = {"o": "once", "s": "session", "a": "always", "d": "deny"}
STYLE = Style.from_dict({
    "answered": "ansigreen", "current": "bold", "dim": "ansibrightblack", "hl": "reverse", "warn": "ansiyellow",
})
#: how long a lone Esc byte waits for the rest of an escape sequence (prompt_toolkit's default is 0.5 s)
ESC_WAIT = 0.05


class ClarifyPrompt:
    """The prompt_toolkit application around a :class:`~hermes.surfaces.clarify_card.ClarifyCard`."""

    def __init__(self, state: ClarifySession, *, timeout: float | None = None,
                 input: Input | None = None, output: Output | None = None) -> None:
        self.state = state
        self.card = ClarifyCard(state)
        self.cursor = self.card.cursor
        self.timeout = timeout
        self.buffer = Buffer(multiline=False)
        self.app: Application[None] = Application(
            layout=Layout(HSplit([
                Window(FormattedTextControl(self._render), dont_extend_height=True, wrap_lines=True),
                ConditionalContainer(
                    Window(BufferControl(self.buffer), height=1, get_line_prefix=lambda *_: [("bold", "› ")]),
                    filter=Condition(lambda: not self.state.done),
                ),
            ]), focused_element=self.buffer),
            key_bindings=self._bindings(),
            style=STYLE,
            full_screen=False,
            input=input,
            output=output,
        )
        self.app.ttimeoutlen = ESC_WAIT
        self._show(self.card.load(state.current))

    def _render(self) -> StyleAndTextTuples:
        return [(f"class:{style}" if style not in ("", "bold") else style, text) for style, text in self.card.lines()]

    def _show(self, text: str) -> None:
        self.buffer.set_document(Document(text), bypass_readonly=True)

    # -- keys ---------------------------------------------------------------------------------------
    def _bindings(self) -> KeyBindings:
        kb = KeyBindings()
        card = self.card
        has_choices = Condition(lambda: card.has_choices)
        can_tick = Condition(lambda: card.can_tick(self.buffer.text))

        kb.add("up", filter=has_choices)(lambda event: card.up())
        kb.add("down", filter=has_choices)(lambda event: card.down())
        kb.add("space", filter=can_tick)(lambda event: card.tick())
        kb.add("enter")(lambda event: self.confirm())
        kb.add("tab")(lambda event: self.go(1))
        kb.add("s-tab")(lambda event: self.go(-1))

        @kb.add("escape", eager=True)
        @kb.add("c-c")
        def _cancel(event: KeyPressEvent) -> None:
            card.cancel()
            self._exit()

        return kb

    # -- actions ------------------------------------------------------------------------------------
    def current_answer(self) -> Answer | None:
        """What Enter would confirm for the current question (None: skip)."""
        return self.card.current_answer(self.buffer.text)

    def confirm(self) -> None:
        """Enter: confirm (or skip) the current question and go on; exit when all are done."""
        self._show(self.card.confirm(self.buffer.text))
        if self.state.done:
            self._exit()

    def go(self, step: int) -> None:
        """Tab / Shift-Tab: keep the draft and move to another question."""
        self._show(self.card.go(step, self.buffer.text))

    # -- running ------------------------------------------------------------------------------------
    def _start_timer(self) -> None:
        self.app.create_background_task(self._timer())

    async def _timer(self) -> None:
        if self.timeout is None:
            return
        await asyncio.sleep(self.timeout)
        self.state.time_out()
        self._exit()

    def _exit(self) -> None:
        if not self.app.is_done:
            self.app.exit()

    def run(self) -> ClarifySession:
        """Run until submitted, cancelled or timed out; returns the session."""
        if self.state.done:
            return self.state
        self.app.pre_run_callables.append(self._start_timer)
        with contextlib.suppress(EOFError):  # the input went away: nobody is answering any more
            self.app.run()
        if not self.state.done:
            self.state.time_out()
        return self.state


def run_clarify_prompt(state: ClarifySession, timeout: float | None = None, *,
                       input: Input | None = None, output: Output | None = None) -> ClarifySession:
    """Ask the questions of ``state`` at the terminal (see the module docstring)."""
    return ClarifyPrompt(state, timeout=timeout, input=input, output=output).run()


def run_approval_prompt(command: str, reason: str, timeout: float | None = None, *,
                        input: Input | None = None, output: Output | None = None) -> str | None:
    """``once`` / ``session`` / ``always`` / ``deny`` for a dangerous command; None when nobody answered.

    The keys o, s, a, d answer; Esc and Ctrl-C deny.
    """
    answer: list[str] = []
    kb = KeyBindings()

    def choose(value: str) -> Callable[[KeyPressEvent], None]:
        def handler(event: KeyPressEvent) -> None:
            if not answer:
                answer.append(value)
                event.app.exit()
        return handler

    for key, value in APPROVAL_CHOICES.items():
        kb.add(key)(choose(value))
        kb.add(key.upper())(choose(value))
    kb.add("escape", eager=True)(choose("deny"))
    kb.add("c-c")(choose("deny"))

    def render() -> StyleAndTextTuples:
        chosen = f" {answer[0]}" if answer else ""
        return [("class:warn bold", f"⚠ {reason or 'this command needs your approval'}\n"),
                ("", f"  $ {command}\n"), ("bold", f"Allow? [o]nce / [s]ession / [a]lways / [d]eny{chosen}")]

    app: Application[None] = Application(
        layout=Layout(Window(FormattedTextControl(render, focusable=True), dont_extend_height=True,
                             wrap_lines=True)),
        key_bindings=kb, style=STYLE, full_screen=False, input=input, output=output,
    )
    app.ttimeoutlen = ESC_WAIT

    async def timer() -> None:
        if timeout is not None:
            await asyncio.sleep(timeout)
            if not app.is_done:
                app.exit()

    def start_timer() -> None:
        app.create_background_task(timer())

    app.pre_run_callables.append(start_timer)
    try:
        app.run()
    except EOFError:
        return None
    return answer[0] if answer else None


# -- line mode (stdin is not a terminal) ----------------------------------------------------------------
CANCEL_WORD = "/cancel"


def line_clarify(state: ClarifySession, read_line: Callable[[], str], write: Callable[[str], Any]) -> ClarifySession:
    """Ask one question per line: a blank line skips, ``/cancel`` cancels all, end of input = no reply."""
    while not state.done:
        i = state.current
        q = state.questions[i]
        write(f"❓ ({i + 1}/{len(state.questions)}) {q.text}\n")
        for n, choice in enumerate(q.choices, 1):
            write(f"   {n}) {choice}\n")
        multi = " (several: 1,3)" if q.multi_select else ""
        write(f"   answer{multi}; empty line skips, {CANCEL_WORD} cancels all › ")
        line = read_line()
        if not line:
            state.time_out()
        elif line.strip() == CANCEL_WORD:
            state.cancel()
        else:
            value = q.interpret(line)
            if value is None:
                state.skip(i)
            else:
                state.answer(i, value)
    return state


def line_approval(command: str, reason: str, stream: TextIO, write: Callable[[str], Any]) -> str | None:
    """The approval question answered by a line (``o``/``once``, ...); None at end of input."""
    write(f"⚠ {reason or 'this command needs your approval'}\n  $ {command}\n")
    for _ in range(3):
        write("Allow? [o]nce / [s]ession / [a]lways / [d]eny › ")
        line = stream.readline()
        if not line:
            return None
        word = line.strip().lower()
        for key, value in APPROVAL_CHOICES.items():
            if word in (key, value):
                return value
    return "deny"
