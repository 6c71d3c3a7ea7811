"""Helpers shared by the command modules: model flags, settings loading and error reporting."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.config.settings import Settings


def add_model_flags(parser: argparse.ArgumentParser) -> None:
    """Flags that override the model endpoint and the session's toolsets."""
    g = parser.add_argument_group("model and toolsets")
    g.add_argument("--base-url", default=argparse.SUPPRESS, help="OpenAI-compatible base URL (…/v1)")
    g.add_argument("--model", "-m", default=argparse.SUPPRESS, help="model name at that endpoint")
    g.add_argument("--provider", default=argparse.SUPPRESS,
                   help="named provider: openrouter, openai, nous, ollama, vllm, llamacpp, custom, local")
    g.add_argument("--toolsets", "-t", default=argparse.SUPPRESS, metavar="A,B",
                   help="comma-separated toolsets for this session (e.g. web,file or all)")
    g.add_argument("--max-iterations", type=int, default=argparse.SUPPRESS, metavar="N",
                   help="tool-calling iterations before the agent must answer")
    g.add_argument("--verbose", "-v", action="store_true", default=argparse.SUPPRESS,
                   help="log debugging details to stderr")


def load_settings(args: argparse.Namespace) -> Settings:
    from hermes.config.settings import Overrides, Settings

    toolsets = getattr(args, "toolsets", None)
    overrides = Overrides(
        base_url=getattr(args, "base_url", None),
        model=getattr(args, "model", None),
        provider=getattr(args, "provider", None),
        toolsets=[t.strip() for t in toolsets.split(",") if t.strip()] if toolsets else None,
        max_iterations=getattr(args, "max_iterations", None),
    )
    return Settings.load(overrides=overrides)


def export_dotenv(settings: Settings) -> None:
    """Make ``.env`` values visible to tools that read ``os.environ`` (exported values win)."""
    for key, value in settings.env.as_dict().items():
        os.environ.setdefault(key, value)


def eprint(*parts: Any) -> None:
    print(*parts, file=sys.stderr)


def run_command(module: str, args: argparse.Namespace) -> int:
    """Run one command module, turning hermes errors into a one-line message and exit code 1."""
    import logging

    from hermes.errors import HermesError, UsageError

    logging.basicConfig(
        level=logging.DEBUG if getattr(args, "verbose", False) else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    mod = importlib.import_module(f"hermes.cli.{module}")
    try:
        code: int = mod.run(args)
        return code
    except HermesError as exc:
        eprint(f"hermes: error: {exc}")
        return 2 if isinstance(exc, UsageError) else 1
    except KeyboardInterrupt:
        eprint("\nhermes: interrupted")
        return 130
    except BrokenPipeError:
        return 1


def confirmed(question: str) -> bool:
    """Ask ``question [y/N]`` on the terminal; only ``y``/``yes`` is a yes (end of input is a no)."""
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes")
