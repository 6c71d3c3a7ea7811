"""``hermes chat``: the interactive chat, or one question with ``-q`` (also ``hermes -z``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.cli.common import add_model_flags

if TYPE_CHECKING:
    from hermes.agent.events import EventSink
    from hermes.agent.loop import Agent
    from hermes.agent.session import SessionRequest
    from hermes.config.settings import ModelSettings, Settings


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
                        help="one-shot demo: the agent reads a file that ships with hermes (read_file) and quotes "
                             "the line that answers a question; works offline on the embedded local model")
    add_model_flags(parser)


def _kanban_worker(settings: Settings, request: SessionRequest, sink: EventSink, prompt: str) -> int:
    """A dispatcher-started worker: its turn, nudges while its run stays open, heartbeats from its activity
    (surfaces/kanban_worker.py)."""
    from hermes.agent.session import open_agent
    from hermes.store.kanban.config import KanbanConfig
    from hermes.surfaces.kanban_worker import HeartbeatSink, run_kanban_worker

    cfg = KanbanConfig.from_config(settings.config.data)
    run_id = os.environ.get("HERMES_KANBAN_RUN", "")
    task_id = os.environ["HERMES_KANBAN_TASK"]
    with cfg.open_board() as board:
        beating = HeartbeatSink(sink, board, task_id, author=os.environ.get("HERMES_PROFILE") or "worker",
                                every_s=cfg.heartbeat_every_s)
        agent = open_agent(settings, request, beating)
        try:
            return run_kanban_worker(agent, prompt, board=board, task_id=task_id,
                                     run_id=int(run_id) if run_id.isdigit() else None, nudges=cfg.nudges)
        finally:
            agent.close()


def run(args: argparse.Namespace) -> int:
    from hermes.agent.session import SessionRequest, check_request, open_agent
    from hermes.cli.common import export_dotenv, load_settings
    from hermes.tools.toolsets import Surface

    settings = load_settings(args)
    prompt = check_arguments(args)
    # an agent the kanban dispatcher started for a task (HERMES_KANBAN_TASK) is a kanban worker (TS-7)
    one_shot = Surface.KANBAN if os.environ.get("HERMES_KANBAN_TASK") else Surface.ONESHOT
    request = SessionRequest(
        surface=one_shot if prompt is not None else Surface.CLI,
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

        sink = oneshot_sink(quiet=bool(getattr(args, "quiet", False)))
        if request.surface is Surface.KANBAN:
            return _kanban_worker(settings, request, sink, prompt)
        agent = open_agent(settings, request, sink)
        try:
            if demo:
                return _phases(agent, _demo(agent), os.environ.get("HERMES_LAUNCHER", "hermes"))
            return run_oneshot(agent, prompt)
        finally:
            agent.close()

    from hermes.surfaces.chat_commands import Chat
    from hermes.surfaces.cli import run_interactive
    from hermes.surfaces.console import ConsoleSink

    sink = ConsoleSink(interactive=True)
    agent = open_agent(settings, request, sink)
    agent.prepare()  # the embedded model gets ready while the person types the first message
    model = settings.model()
    state = "resumed" if request.resume or request.continue_last else "new"
    where = "embedded, offline" if model.provider == "local" else f"at {model.base_url}"
    banner = (f"hermes · {model.model} {where} · {len(agent.tools)} tools · {state} session "
              f"{agent.session_id}\n{_good_for(model)}Type /help for commands, Ctrl-D to leave.")
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
    prompt = DEMO_PROMPT if demo else oneshot if oneshot is not None else query
    if prompt is not None and not prompt.strip():
        raise UsageError("the prompt is empty")
    if prompt is None and getattr(args, "quiet", False):
        raise UsageError("-Q/--quiet is for one-shot runs: hermes -z PROMPT -Q or hermes chat -q PROMPT -Q")
    limit = getattr(args, "max_iterations", None)
    bounds = SCHEMA.key("agent.max_iterations")
    if limit is not None and not (bounds.minimum or 0) <= limit <= (bounds.maximum or limit):
        raise UsageError(f"--max-iterations must be from {bounds.minimum:g} to {bounds.maximum:g}; got {limit}")
    return prompt


#: the demo reads this file, which ships inside the package, so it works anywhere (not only in a checkout)
DEMO_FILE = "demo_notes.txt"
DEMO_PROMPT = ("When does the nightly backup start? Read the file {path} with the read_file tool, then quote "
               "the line that answers.")
#: what ``hermes chat --demo`` must answer (tests check it): the line of DEMO_FILE that answers DEMO_PROMPT
DEMO_ANSWER = "The nightly backup starts at 02:00 and takes about an hour."


def demo_file() -> Path:
    return Path(__file__).with_name(DEMO_FILE)


def _demo(agent: Agent) -> str:
    """Force the demo's read_file call (its arguments pinned) and a quoted answer; the prompt to ask.

    The model still generates the call and chooses the line it quotes (docs/local-model.md, "The demo").
    """
    from hermes.agent.local_provider import FirstCallForced

    if "read_file" not in agent.tools:
        raise SystemExit("hermes: error: the demo needs the read_file tool, which is switched off here "
                         "('hermes tools' switches it back on)")
    path = str(demo_file())
    agent.provider = FirstCallForced(agent.provider, "read_file", {"path": path, "limit": 12}, quote=True)
    return DEMO_PROMPT.format(path=path)


def _phases(agent: Agent, prompt: str, launcher: str) -> int:
    """The demo, reporting each phase with its duration on stderr, then the command that connects a real model."""
    import time

    from hermes.agent.local_provider import LocalProvider
    from hermes.cli.common import eprint
    from hermes.surfaces.oneshot import run_oneshot

    inner = getattr(agent.provider, "inner", agent.provider)
    if isinstance(inner, LocalProvider):
        started = time.perf_counter()
        engine = inner.loaded()
        eprint(f"hermes: model loaded in {time.perf_counter() - started:.1f} s ({engine.name})")
    started = time.perf_counter()
    code = run_oneshot(agent, prompt)
    eprint(f"hermes: answered in {time.perf_counter() - started:.1f} s")
    eprint(f"Next: connect a real model with '{launcher} setup'.")
    return code


def _good_for(model: ModelSettings) -> str:
    """For the embedded model, one line saying what it is good for (and what not)."""
    from hermes.config.settings import bundled_gguf

    if model.provider != "local" or not model.path or Path(model.path) != bundled_gguf():
        return ""
    return ("The embedded 135M model is good for seeing the agent call a tool (e.g. 'read FILE and quote the line "
            "about X'), not for real work: 'hermes setup' connects a real model.\n")


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
