"""The one-shot surface (``hermes -z`` / ``hermes chat -q``): one prompt, the final answer on stdout.

Nobody is there to answer clarify questions or approvals, so requests get ``None``. Tool activity
goes to stderr, so stdout carries only the answer and can be piped.
"""

from __future__ import annotations

import sys

from hermes.agent.loop import Agent
from hermes.surfaces.console import ConsoleSink


def oneshot_sink(quiet: bool = False) -> ConsoleSink:
    import io

    activity = io.StringIO() if quiet else sys.stderr
    return ConsoleSink(out=sys.stdout, activity=activity, stream_text=False)


def run_oneshot(agent: Agent, prompt: str) -> int:
    result = agent.run_turn(prompt)
    if result.reason == "interrupted":
        return 130
    print(result.final)
    sys.stdout.flush()
    return 0 if result.final.strip() else 1
