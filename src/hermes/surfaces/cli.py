"""The interactive command-line chat.

Line editing and history come from prompt_toolkit (history kept in ``HERMES_HOME/chat_history``);
answers stream as they arrive; tool activity is shown one line per call; slash commands are in
:mod:`hermes.surfaces.chat_commands`.

* Ctrl-C during a turn stops that turn and keeps the session (with what the answer had said so far,
  marked as interrupted); at the prompt it clears the line, and at an empty prompt it leaves, like
  Ctrl-D, with the "session saved" line.
* While a turn runs the terminal does not echo keys, so nothing typed lands in the answer; what was
  typed waits, and shows up at the next prompt (Enter included: a whole line typed ahead is sent).
* A failing model endpoint ends the turn, not the chat: the error is shown in one line and the
  prompt comes back with the session kept (``/retry`` sends the message again, ``/model`` switches).

When stdin is not a terminal, lines are read from it plainly, one message per line.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from hermes.agent.events import Notice
from hermes.errors import HermesError
from hermes.surfaces.chat_commands import COMMANDS, Chat, run_command, saved_line

PROMPT = "you › "


def _lines_from_prompt(history: Path) -> Iterator[str]:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import WordCompleter
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    bindings = KeyBindings()

    @bindings.add("c-c")
    def _ctrl_c(event: KeyPressEvent) -> None:
        buffer = event.app.current_buffer
        if buffer.text:
            buffer.reset()  # a line being typed is dropped, as in a shell
        else:
            event.app.exit(exception=EOFError())  # at an empty prompt: leave

    history.parent.mkdir(parents=True, exist_ok=True)
    commands = WordCompleter(list(COMMANDS), sentence=True)
    session: PromptSession[str] = PromptSession(history=FileHistory(str(history)), key_bindings=bindings,
                                                completer=commands, complete_while_typing=False)
    while True:
        try:
            yield session.prompt(PROMPT)
        except (EOFError, KeyboardInterrupt):
            return


def _lines_from_stdin() -> Iterator[str]:
    for line in sys.stdin:
        yield line.rstrip("\n")


@contextlib.contextmanager
def keys_held(enabled: bool) -> Iterator[None]:
    """While a turn runs: keys typed are not echoed and stay queued for the next prompt.

    Echo and line buffering are switched off on the terminal (signals stay on, so Ctrl-C still stops
    the turn), and carriage returns are left as typed; the saved settings come back afterwards.
    """
    if not enabled:
        yield
        return
    try:
        import termios

        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError):
        yield
        return
    quiet = [*saved[:6], list(saved[6])]
    quiet[0] &= ~termios.ICRNL
    quiet[3] &= ~(termios.ECHO | termios.ICANON)
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


def _turn(chat: Chat, text: str, terminal: bool) -> None:
    try:
        with keys_held(terminal):
            chat.agent.run_turn(text)
    except KeyboardInterrupt:
        chat.say("\n(interrupted)")
    except HermesError as exc:  # the endpoint failed for good: this turn ends, the chat goes on
        chat.agent.sink.emit(Notice("error", f"✗ {exc} (session kept: /retry sends your message again, "
                                             "/model NAME switches the model)"))


def run_interactive(chat: Chat, history: Path, banner: str) -> int:
    chat.say(banner)
    terminal = sys.stdin.isatty()
    chat.terminal = terminal and sys.stdout.isatty()
    lines = _lines_from_prompt(history) if terminal else _lines_from_stdin()
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if text.startswith("/"):
            action = run_command(chat, text)
            if action.leave:
                break
            if action.send is None:
                continue
            text = action.send
        _turn(chat, text, terminal)
    chat.say(saved_line(chat.agent))
    return 0
