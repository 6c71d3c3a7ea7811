"""Entry point of the ``hermes`` command.

Each command group is a module of this package exposing ``configure(parser)`` and
``run(args) -> int``. Modules keep their top level light (argparse only), so ``hermes --help`` and
``hermes --version`` stay well under 0.1 s of CPU; the agent, the openai client and ruamel.yaml are
imported inside ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from hermes import __version__

#: (command, module under hermes.cli, one-line help)
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("chat", "chat", "talk with the agent (interactive, or one question with -q)"),
    ("setup", "setup", "configure the model endpoint and optional API keys"),
    ("config", "config", "show, get or set configuration values"),
    ("tools", "tools", "list tools and enable or disable toolsets"),
    ("sessions", "sessions", "list, show, export or delete stored sessions"),
    ("batch", "batch", "run many prompts with sampled toolsets and save trajectories"),
    ("cron", "cron", "schedule recurring agent jobs and run the scheduler"),
    ("kanban", "kanban", "the kanban board: tasks for agents, their runs, and the dispatcher"),
    ("toolgateway", "toolgateway", "run and administer a self-hosted Tool Gateway"),
    ("gateway", "gateway", "the messaging gateway: Telegram, Discord, Slack, Teams, IRC, an OpenAI-compatible API"),
    ("serve", "serve", "the app server: the desktop app's JSON-RPC API over a WebSocket (loopback by default)"),
    ("desktop", "desktop", "the desktop app: the app server's web front end in a window or the browser"),
    ("tui", "tui", "the full-screen terminal UI (Textual), a client of the app server"),
    ("portal", "portal", "Nous Portal login and the Tool Gateway routing of each tool"),
    ("auth", "auth", "provider credentials kept in auth.json: an OpenRouter key, a SuperGrok (xAI) login"),
    ("mcp", "mcp", "MCP servers whose tools the agent uses: list, add, remove, test"),
    ("browser", "browser", "the browser tools' vault of site logins: add, list, remove"),
    ("connectors", "connectors", "your connector accounts (Gmail home, Gmail work…): list, connect, rename, remove"),
    ("video", "video", "stored video renders: list them, resume polling after a restart"),
    ("model", "model", "choose the inference provider and model (Nous: offers the Tool Gateway)"),
    ("status", "status", "model endpoint and tool routing; --full: toolsets, storage, scheduler, sandbox"),
)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    pass


#: root options that take a value (so the word after them is not a command name)
_VALUE_OPTIONS = frozenset({"-z", "--base-url", "--model", "-m", "--provider", "--toolsets", "-t", "--max-iterations"})


def selected_command(argv: Sequence[str]) -> str | None:
    """The command word in ``argv``, if any, without building the parser."""
    names = {name for name, _, _ in COMMANDS}
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in _VALUE_OPTIONS:
            skip = True
        elif not token.startswith("-"):
            return token if token in names else None
    return None


def build_parser(only: str | None = "*", *, others: bool = True) -> argparse.ArgumentParser:
    """The argument parser; ``only`` names the one command whose options are built ("*": all).

    With ``others=False`` and a command named, the other commands get no sub-parser at all (each costs
    about 0.3 ms, and only the root's ``--help`` lists them).
    """
    from hermes.cli.common import add_model_flags

    parser = argparse.ArgumentParser(
        prog="hermes",
        description="hermes — an agent runtime for tool-using LLMs.",
        epilog="Run 'hermes COMMAND --help' for a command's options. Docs: docs/cli.md",
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"hermes {__version__}")
    parser.add_argument(
        "-z", dest="oneshot", metavar="PROMPT",
        help="one-shot: answer PROMPT non-interactively and print the final answer",
    )
    parser.add_argument("--quiet", "-Q", action="store_true", default=argparse.SUPPRESS,
                        help="with -z: no tool activity on stderr (as 'hermes chat -q PROMPT -Q')")
    add_model_flags(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module, help_text in COMMANDS:
        if not others and only not in (None, "*", name):
            continue
        sp = sub.add_parser(name, help=help_text, description=help_text, formatter_class=_Formatter)
        if only in ("*", name):
            importlib.import_module(f"hermes.cli.{module}").configure(sp)
        sp.set_defaults(_module=module)
    return parser


def _root_help_asked(argv: Sequence[str], command: str | None) -> bool:
    """Whether ``-h``/``--help`` comes before the command word (the root's help lists every command)."""
    for token in argv:
        if token == command:
            return False
        if token in ("-h", "--help"):
            return True
    return True


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # answered before building every sub-parser
        print(f"hermes {__version__}")
        return 0
    only = selected_command(argv)
    parser = build_parser(only=only, others=_root_help_asked(argv, only))
    args = parser.parse_args(argv)
    from hermes.cli.common import run_command

    if args.oneshot is not None:
        if args.command:
            parser.error("-z cannot be combined with a command")
        return run_command("chat", args)
    if not args.command:
        return run_command("chat", args)
    return run_command(args._module, args)


if __name__ == "__main__":
    raise SystemExit(main())
