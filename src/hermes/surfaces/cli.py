"""The interactive command-line chat.

Line editing and history come from prompt_toolkit (history kept in ``HERMES_HOME/chat_history``);
answers stream as they arrive; tool activity is shown one line per call. Ctrl-C during a turn stops
that turn and keeps the session; Ctrl-C or Ctrl-D at the prompt leaves. When stdin is not a terminal,
lines are read from it plainly, one message per line.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from hermes.agent.loop import Agent

HELP = """Commands:
  /help           this list
  /tools          the tools of this session
  /todo           the session's task list
  /session        the session id (resume it later with: hermes chat --resume ID)
  /exit, /quit    leave (Ctrl-D works too)
Ctrl-C stops the current answer; the conversation is kept."""


def _lines_from_prompt(history: Path) -> Iterator[str]:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    history.parent.mkdir(parents=True, exist_ok=True)
    session: PromptSession[str] = PromptSession(history=FileHistory(str(history)))
    while True:
        try:
            yield session.prompt("you › ")
        except KeyboardInterrupt:
            continue
        except EOFError:
            return


def _lines_from_stdin() -> Iterator[str]:
    for line in sys.stdin:
        yield line.rstrip("\n")


def _command(agent: Agent, line: str, say: Callable[[str], None]) -> bool:
    """Handle a slash command; returns False when the chat should end."""
    cmd = line.strip().split()[0].lower()
    if cmd in ("/exit", "/quit"):
        return False
    if cmd == "/help":
        say(HELP)
    elif cmd == "/tools":
        say(", ".join(agent.tools) or "(no tools in this session)")
    elif cmd == "/todo":
        todo = agent.state.get("todo_list")
        say(todo.render() if todo is not None and todo.items else "(the task list is empty)")
    elif cmd == "/session":
        say(f"session {agent.session_id}")
    else:
        say(f"unknown command {cmd}; /help lists the commands")
    return True


def run_interactive(agent: Agent, history: Path, banner: str) -> int:
    say = print
    say(banner)
    lines = _lines_from_prompt(history) if sys.stdin.isatty() else _lines_from_stdin()
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if text.startswith("/"):
            if not _command(agent, text, say):
                break
            continue
        try:
            agent.run_turn(text)
        except KeyboardInterrupt:
            say("\n(interrupted)")
    say(f"Session {agent.session_id} saved. Resume with: hermes chat --resume {agent.session_id}")
    return 0
