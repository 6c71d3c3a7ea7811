"""``hermes chat``: the interactive chat, or one question with ``-q`` (also ``hermes -z``)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from hermes.cli.common import add_model_flags

if TYPE_CHECKING:
    from hermes.agent.events import EventSink
    from hermes.agent.loop import Agent
    from hermes.agent.session import SessionRequest
    from hermes.config.settings import Settings


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-q", "--query", metavar="PROMPT",
                        help="one-shot: answer PROMPT without a conversation and print the final answer")
    parser.add_argument("--resume", "-r", metavar="ID", help="continue a stored session (id or unique prefix)")
    parser.add_argument("--continue", "-c", dest="continue_last", action="store_true",
                        help="continue the most recent session")
    parser.add_argument("--quiet", "-Q", action="store_true", help="one-shot: no tool activity on stderr")
    parser.add_argument("--title", help="a title for the new session")
    parser.add_argument("--demo", action="store_true",
                        help="one-shot demo: a question the agent answers by calling a tool (read_file, else "
                             "todo_list); works offline on the embedded local model")
    add_model_flags(parser)


def _kanban_worker(settings: Settings, request: SessionRequest, sink: EventSink, prompt: str) -> int:
    """A dispatcher-started worker: its turn, nudges while its run stays open, heartbeats from its activity
    (surfaces/kanban_worker.py)."""
    from pathlib import Path

    from hermes.agent.session import open_agent
    from hermes.store.kanban.board import Board
    from hermes.store.kanban.config import KanbanConfig
    from hermes.surfaces.kanban_worker import HeartbeatSink, run_kanban_worker

    cfg = KanbanConfig.from_config(settings.config.data)
    db = os.environ.get("HERMES_KANBAN_DB")
    run_id = os.environ.get("HERMES_KANBAN_RUN", "")
    task_id = os.environ["HERMES_KANBAN_TASK"]
    with Board(Path(db)) if db else Board.open_default() as board:
        beating = HeartbeatSink(sink, board, task_id, author=os.environ.get("HERMES_PROFILE") or "worker",
                                every_s=cfg.heartbeat_every_s)
        agent = open_agent(settings, request, beating)
        try:
            return run_kanban_worker(agent, prompt, board=board, task_id=task_id,
                                     run_id=int(run_id) if run_id.isdigit() else None, nudges=cfg.nudges)
        finally:
            agent.close()


def run(args: argparse.Namespace) -> int:
    from hermes.agent.session import SessionRequest, open_agent
    from hermes.cli.common import export_dotenv, load_settings
    from hermes.tools.toolsets import Surface

    settings = load_settings(args)
    export_dotenv(settings)
    _model_or_local(settings)
    demo = bool(getattr(args, "demo", False))
    prompt = DEMO_PROMPTS["read_file"] if demo else getattr(args, "oneshot", None) or getattr(args, "query", None)
    # an agent the kanban dispatcher started for a task (HERMES_KANBAN_TASK) is a kanban worker (TS-7)
    one_shot = Surface.KANBAN if os.environ.get("HERMES_KANBAN_TASK") else Surface.ONESHOT
    request = SessionRequest(
        surface=one_shot if prompt is not None else Surface.CLI,
        resume=getattr(args, "resume", None),
        continue_last=bool(getattr(args, "continue_last", False)),
        title=getattr(args, "title", None),
    )
    if prompt is not None:
        from hermes.surfaces.oneshot import oneshot_sink, run_oneshot

        if not prompt.strip():
            raise SystemExit("hermes: error: the prompt is empty")
        sink = oneshot_sink(quiet=bool(getattr(args, "quiet", False)))
        if request.surface is Surface.KANBAN:
            return _kanban_worker(settings, request, sink, prompt)
        agent = open_agent(settings, request, sink)
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
    """With no endpoint configured, use the embedded local model (saying so) or explain the two ways forward."""
    from hermes.agent.local_model import fallback_to_local, first_run_notice, no_endpoint_help
    from hermes.cli.common import eprint
    from hermes.errors import ModelNotConfigured

    try:
        model = settings.model()
    except ModelNotConfigured as exc:
        fallback = fallback_to_local(settings)
        if fallback is None:
            raise ModelNotConfigured(f"{exc}{no_endpoint_help()}") from None
        model = fallback
        eprint(f"hermes: no model endpoint is configured, so this uses the embedded local model {model.model} "
               "(offline, small); 'hermes setup' configures a real one.")
    if model.provider == "local":
        note = first_run_notice(model, settings.paths.home / "cache" / "local_model_seen")
        if note:
            eprint(note)
