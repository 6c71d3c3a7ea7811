"""``hermes chat``: the interactive chat, or one question with ``-q`` (also ``hermes -z``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from hermes.cli.common import add_model_flags

if TYPE_CHECKING:
    from hermes.agent.loop import Agent
    from hermes.config.settings import Settings


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-q", "--query", metavar="PROMPT",
                        help="one-shot: answer PROMPT without a conversation and print the final answer")
    parser.add_argument("--resume", "-r", metavar="ID", help="continue a stored session (id or unique prefix)")
    parser.add_argument("--continue", "-c", dest="continue_last", action="store_true",
                        help="continue the most recent session")
    parser.add_argument("--quiet", "-Q", action="store_true", default=argparse.SUPPRESS,
                        help="one-shot: no tool activity on stderr")
    parser.add_argument("--title", help="a title for the new session")
    parser.add_argument("--demo", action="store_true",
                        help="one-shot demo: a question the agent answers by calling a tool (read_file, else "
                             "todo_list); works offline on the embedded local model")
    add_model_flags(parser)


def run(args: argparse.Namespace) -> int:
    from hermes.agent.session import SessionRequest, check_request, open_agent
    from hermes.cli.common import export_dotenv, load_settings
    from hermes.tools.toolsets import Surface

    settings = load_settings(args)
    prompt = check_arguments(args)
    request = SessionRequest(
        surface=Surface.ONESHOT if prompt is not None else Surface.CLI,
        resume=getattr(args, "resume", None),
        continue_last=bool(getattr(args, "continue_last", False)),
        title=getattr(args, "title", None),
    )
    export_dotenv(settings)
    check_request(settings, request)  # argument errors first: the notices below are about a run that happens
    _model_or_local(settings)
    demo = bool(getattr(args, "demo", False))
    if prompt is not None:
        from hermes.surfaces.oneshot import oneshot_sink, run_oneshot

        agent = open_agent(settings, request, oneshot_sink(quiet=bool(getattr(args, "quiet", False))))
        if demo:
            prompt = _demo(agent)
        try:
            return run_oneshot(agent, prompt)
        finally:
            agent.close()

    from hermes.surfaces.chat_commands import Chat
    from hermes.surfaces.cli import run_interactive
    from hermes.surfaces.console import ConsoleSink

    sink = ConsoleSink(interactive=True)
    agent = open_agent(settings, request, sink)
    model = settings.model()
    state = "resumed" if request.resume or request.continue_last else "new"
    where = "embedded, offline" if model.provider == "local" else f"at {model.base_url}"
    banner = (f"hermes · {model.model} {where} · {len(agent.tools)} tools · {state} session "
              f"{agent.session_id}\nType /help for commands, Ctrl-D to leave.")
    chat = Chat(agent, lambda provider: open_agent(settings, SessionRequest(surface=Surface.CLI), sink,
                                                   provider=provider))
    try:
        return run_interactive(chat, settings.paths.history, banner)
    finally:
        chat.agent.close()


def check_arguments(args: argparse.Namespace) -> str | None:
    """The one-shot prompt (None: interactive), or a UsageError for flags that do not fit together."""
    from hermes.config.schema import SCHEMA
    from hermes.errors import UsageError

    oneshot, query = getattr(args, "oneshot", None), getattr(args, "query", None)
    demo = bool(getattr(args, "demo", False))
    prompt = DEMO_PROMPTS["read_file"] if demo else oneshot if oneshot is not None else query
    if prompt is not None and not prompt.strip():
        raise UsageError("the prompt is empty")
    if prompt is None and getattr(args, "quiet", False):
        raise UsageError("-Q/--quiet is for one-shot runs: hermes -z PROMPT -Q or hermes chat -q PROMPT -Q")
    limit = getattr(args, "max_iterations", None)
    bounds = SCHEMA.key("agent.max_iterations")
    if limit is not None and not (bounds.minimum or 0) <= limit <= (bounds.maximum or limit):
        raise UsageError(f"--max-iterations must be from {bounds.minimum:g} to {bounds.maximum:g}; got {limit}")
    return prompt


DEMO_PROMPTS = {
    "read_file": "What is hermes? Read the start of README.md with the read_file tool, then answer in one "
                 "sentence.",
    "todo_list": "Use the todo_list tool to write a three-step plan for making tea, then tell me the plan.",
}
#: the demo's call is forced and, for read_file, its arguments pinned by the grammar (docs/local-model.md)
DEMO_ARGUMENTS: dict[str, dict[str, Any] | None] = {"read_file": {"path": "README.md", "limit": 12}, "todo_list": None}


def _demo(agent: Agent) -> str:
    """Force the demo's tool call on the first model call (then a plain answer); the prompt to ask."""
    import os

    from hermes.agent.local_provider import FirstCallForced

    usable = [t for t in DEMO_PROMPTS if t in agent.tools and (t != "read_file" or os.path.isfile("README.md"))]
    if not usable:
        return DEMO_PROMPTS["read_file"]
    agent.provider = FirstCallForced(agent.provider, usable[0], DEMO_ARGUMENTS[usable[0]])
    return DEMO_PROMPTS[usable[0]]


def _model_or_local(settings: Settings) -> None:
    """Settle the model the session runs (:func:`~hermes.agent.model_choice.choose_model`), saying what it chose."""
    from hermes.agent.local_model import first_run_notice
    from hermes.agent.model_choice import choose_model
    from hermes.cli.common import eprint
    from hermes.errors import ModelNotConfigured

    choice = choose_model(settings)
    for line in choice.notes:
        eprint(line)
    if choice.model is None:
        raise ModelNotConfigured(choice.error or "no model endpoint is configured")
    model = choice.model
    if model.provider == "local":
        note = first_run_notice(model, settings.paths.home / "cache" / "local_model_seen")
        if note:
            eprint(note)
