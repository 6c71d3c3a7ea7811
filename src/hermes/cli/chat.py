"""``hermes chat``: the interactive chat, or one question with ``-q`` (also ``hermes -z``)."""

from __future__ import annotations

import argparse

from hermes.cli.common import add_model_flags


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-q", "--query", metavar="PROMPT",
                        help="one-shot: answer PROMPT without a conversation and print the final answer")
    parser.add_argument("--resume", "-r", metavar="ID", help="continue a stored session (id or unique prefix)")
    parser.add_argument("--continue", "-c", dest="continue_last", action="store_true",
                        help="continue the most recent session")
    parser.add_argument("--quiet", "-Q", action="store_true", help="one-shot: no tool activity on stderr")
    parser.add_argument("--title", help="a title for the new session")
    add_model_flags(parser)


def run(args: argparse.Namespace) -> int:
    from hermes.agent.session import SessionRequest, open_agent
    from hermes.cli.common import export_dotenv, load_settings
    from hermes.tools.toolsets import Surface

    settings = load_settings(args)
    export_dotenv(settings)
    prompt = getattr(args, "oneshot", None) or getattr(args, "query", None)
    request = SessionRequest(
        surface=Surface.ONESHOT if prompt is not None else Surface.CLI,
        resume=getattr(args, "resume", None),
        continue_last=bool(getattr(args, "continue_last", False)),
        title=getattr(args, "title", None),
    )
    if prompt is not None:
        from hermes.surfaces.oneshot import oneshot_sink, run_oneshot

        if not prompt.strip():
            raise SystemExit("hermes: error: the prompt is empty")
        agent = open_agent(settings, request, oneshot_sink(quiet=bool(getattr(args, "quiet", False))))
        return run_oneshot(agent, prompt)

    from hermes.surfaces.cli import run_interactive
    from hermes.surfaces.console import ConsoleSink

    agent = open_agent(settings, request, ConsoleSink(interactive=True))
    model = settings.model()
    state = "resumed" if request.resume or request.continue_last else "new"
    banner = (f"hermes · {model.model} at {model.base_url} · {len(agent.tools)} tools · {state} session "
              f"{agent.session_id}\nType /help for commands, Ctrl-D to leave.")
    return run_interactive(agent, settings.paths.history, banner)
