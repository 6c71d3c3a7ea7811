"""The slash commands of the interactive chat (``/help`` lists them; docs/cli.md describes each).

A command gets the :class:`Chat` (the current session and how to open a fresh one) and the words
after its name, and answers with an :class:`Action`: carry on, leave the chat, or send a message as a
turn (``/retry``). Commands that edit the conversation (``/undo``, ``/retry``) change the stored session
too, so ``--continue`` later sees the same history; what tools did in the world stays done.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes.agent.loop import Agent, from_the_person
from hermes.agent.provider import ChatProvider, OpenAICompatProvider
from hermes.surfaces.console import preview_arguments

#: ANSI: cursor home, clear the screen and the scrollback
CLEAR_SCREEN = "\033[H\033[2J\033[3J"


@dataclass(frozen=True)
class Action:
    leave: bool = False
    #: a message to run as a turn now
    send: str | None = None


@dataclass
class Chat:
    """What the chat loop and its commands share."""

    agent: Agent
    #: opens a fresh stored session that talks to the given provider (``/new``, ``/clear``)
    new_session: Callable[[ChatProvider], Agent]
    say: Callable[[str], None] = print
    #: whether stdout is a terminal (``/clear`` clears the screen only there)
    terminal: bool = False


def saved_line(agent: Agent) -> str:
    return f"Session {agent.session_id} saved. Resume with: hermes chat --resume {agent.session_id}"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _last_user_message(agent: Agent) -> tuple[int, str] | None:
    """Where the last user message is in the history, and its text (None before the first)."""
    for index in range(len(agent.messages) - 1, -1, -1):
        message = agent.messages[index]
        if from_the_person(message):
            return index, _text(message.get("content"))
    return None


def _short(text: str, width: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


# -- the commands ----------------------------------------------------------------------------------
def _help(chat: Chat, arg: str) -> Action:
    chat.say(help_text())
    return Action()


def _exit(chat: Chat, arg: str) -> Action:
    return Action(leave=True)


def _tools(chat: Chat, arg: str) -> Action:
    chat.say(", ".join(chat.agent.tools) or "(no tools in this session)")
    return Action()


def _todo(chat: Chat, arg: str) -> Action:
    todo = chat.agent.state.get("todo_list")
    chat.say(todo.render() if todo is not None and todo.items else "(the task list is empty)")
    return Action()


def _session(chat: Chat, arg: str) -> Action:
    agent = chat.agent
    turns = sum(1 for m in agent.messages if from_the_person(m))
    chat.say(f"session {agent.session_id} · {turns} turns · {len(agent.messages)} messages "
             f"(resume it later with: hermes chat --resume {agent.session_id})")
    return Action()


def _browser(chat: Chat, arg: str) -> Action:
    """``/browser connect [URL]``: this session's browser tools drive a debuggable Chromium."""
    from hermes.errors import HermesError

    verb, _, url = arg.strip().partition(" ")
    if verb != "connect":
        chat.say("usage: /browser connect [URL] (default http://127.0.0.1:9222; started there when nothing answers)")
        return Action()
    try:
        from hermes.config.settings import Settings
        from hermes.tools.browser.config import browser_config
        from hermes.tools.browser.connect import connect

        settings = chat.agent.settings or Settings.load()
        config = browser_config(settings)
        chat.say(connect(chat.agent.state, chat.agent.task_id, url, home=config.home, chromium=config.chromium))
    except HermesError as exc:
        chat.say(f"/browser connect: {exc}")
    return Action()


def _describe(provider: ChatProvider) -> str:
    settings = getattr(provider, "settings", None)
    describe = getattr(settings, "describe", None)
    return str(describe()) if callable(describe) else f"{provider.model} (provider {provider.name})"


def _model(chat: Chat, arg: str) -> Action:
    provider = chat.agent.provider
    name = arg.strip()
    if not name:
        chat.say(f"model {_describe(provider)}; /model NAME switches to another model of this endpoint")
    elif not isinstance(provider, OpenAICompatProvider):
        chat.say(f"the model cannot be switched here ({_describe(provider)}); start the chat with "
                 "--model NAME (and --base-url URL for another endpoint)")
    elif name == provider.model:
        chat.say(f"already using {name}")
    else:
        settings = dataclasses.replace(provider.settings, model=name)
        chat.agent.provider = OpenAICompatProvider(settings, stream=provider.stream)
        provider.close()
        chat.say(f"model switched to {settings.describe()} for this chat (the next message uses it; "
                 f"'hermes config set model.name {name}' keeps it)")
    return Action()


def _history(chat: Chat, arg: str) -> Action:
    lines: list[str] = []
    for message in chat.agent.messages:
        role, text = message.get("role"), _text(message.get("content")).strip()
        if from_the_person(message):
            lines.append(f"you: {text}")
        elif role == "assistant":
            if text:
                lines.append(f"hermes: {text}")
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                arguments = preview_arguments(str(function.get("arguments") or ""))
                lines.append(f"  ⚙ {function.get('name', '?')}({arguments})")
    chat.say("\n".join(lines) if lines else "(nothing said yet in this session)")
    return Action()


def _undo(chat: Chat, arg: str) -> Action:
    last = _last_user_message(chat.agent)
    if last is None:
        chat.say("nothing to undo yet")
        return Action()
    index, text = last
    dropped = chat.agent.truncate(index)
    chat.say(f"removed the last exchange ({len(dropped)} messages): you: {_short(text)}")
    return Action()


def _retry(chat: Chat, arg: str) -> Action:
    last = _last_user_message(chat.agent)
    if last is None or not last[1].strip():
        chat.say("nothing to retry yet")
        return Action()
    index, text = last
    chat.agent.truncate(index)
    chat.say(f"sending again: {_short(text)}")
    return Action(send=text)


def _new(chat: Chat, arg: str) -> Action:
    old = chat.agent
    chat.agent = chat.new_session(old.provider)
    old.close()
    chat.say(f"{saved_line(old)}\nnew session {chat.agent.session_id}")
    return Action()


def _clear(chat: Chat, arg: str) -> Action:
    if chat.terminal:
        chat.say(CLEAR_SCREEN)
    return _new(chat, arg)


Handler = Callable[[Chat, str], Action]

#: name → (arguments, what it does, handler), in the order /help lists them
COMMANDS: dict[str, tuple[str, str, Handler]] = {
    "/help": ("", "this list", _help),
    "/model": ("[NAME]", "show the model, or switch this chat to model NAME of the same endpoint", _model),
    "/history": ("", "show this session's conversation (your messages, answers, tool calls)", _history),
    "/retry": ("", "send your last message again (its old answer is dropped)", _retry),
    "/undo": ("", "drop your last message and everything after it from the session", _undo),
    "/new": ("", "save this session and start a fresh one", _new),
    "/clear": ("", "clear the screen and start a fresh session (this one stays saved)", _clear),
    "/tools": ("", "the tools of this session", _tools),
    "/todo": ("", "the session's task list", _todo),
    "/browser": ("connect [URL]", "drive a debuggable Chromium at URL (started there when none answers)", _browser),
    "/session": ("", "the session id (resume it later with: hermes chat --resume ID)", _session),
    "/exit": ("", "leave (also /quit, Ctrl-D, or Ctrl-C at an empty prompt)", _exit),
    "/quit": ("", "", _exit),
}


def help_text() -> str:
    rows = [f"  {(name + ' ' + args).strip():<15} {what}" for name, (args, what, _) in COMMANDS.items() if what]
    return ("Commands:\n" + "\n".join(rows) + "\nCtrl-C stops the current answer (what it said so far is kept); "
            "at an empty prompt it leaves.")


def run_command(chat: Chat, line: str) -> Action:
    name, _, arg = line.strip().partition(" ")
    entry = COMMANDS.get(name.lower())
    if entry is None:
        chat.say(f"unknown command {name}; /help lists the commands")
        return Action()
    return entry[2](chat, arg)
