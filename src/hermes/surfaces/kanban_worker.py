"""The kanban worker surface: one task's agent, started by the dispatcher (requirements TS-7, T-KAN).

Like a one-shot run, but a worker must end its task's run itself (``kanban_complete``,
``kanban_request_review`` or ``kanban_block``). One that ends its turn with the run still open is
nudged in the same conversation, at most ``kanban.nudges`` times; if the run is still open after that
the process exits with :data:`EXIT_UNFINISHED` and the dispatcher records the run as failed. While it
works, its activity keeps the task's heartbeat fresh (:class:`HeartbeatSink`).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError
from hermes.store.kanban.board import Board

if TYPE_CHECKING:
    from hermes.agent.events import Event, EventSink
    from hermes.agent.loop import Agent
    from hermes.tools.requests import Request

#: exit status of a worker whose run was still open after its nudges
EXIT_UNFINISHED = 3

NUDGE = ("Your kanban task {task} is still open. Finish it now: call kanban_complete with a summary if the work "
         "is done, kanban_request_review if someone should check it, or kanban_block saying what you need.")


def _run_open(board: Board, task_id: str, run_id: int | None) -> bool:
    task = board.get(task_id)
    return task.status == "running" and (run_id is None or task.current_run_id == run_id)


def run_kanban_worker(agent: Agent, prompt: str, *, board: Board, task_id: str, run_id: int | None,
                      nudges: int) -> int:
    """Run the worker's turn, nudge it while its run stays open, and return the process's exit status."""
    result = agent.run_turn(prompt)
    for _ in range(nudges):
        if result.reason == "interrupted" or not _run_open(board, task_id, run_id):
            break
        result = agent.run_turn(NUDGE.format(task=task_id))
    if result.reason == "interrupted":
        return 130
    print(result.final)
    sys.stdout.flush()
    return EXIT_UNFINISHED if _run_open(board, task_id, run_id) else 0


class HeartbeatSink:
    """Passes events on to ``inner`` and, at most every ``every_s`` seconds, records a heartbeat for the
    worker's task: an agent that is still producing model answers and tool calls is alive, so long work
    is not reclaimed by the heartbeat timeout even when the model never calls ``kanban_heartbeat``."""

    def __init__(self, inner: EventSink, board: Board, task_id: str, *, author: str, every_s: float) -> None:
        self.inner = inner
        self.board = board
        self.task_id = task_id
        self.author = author
        self.every_s = every_s
        self._last: float | None = None

    def emit(self, event: Event) -> None:
        self.inner.emit(event)
        now = time.monotonic()
        if self._last is not None and now - self._last < self.every_s:
            return
        self._last = now
        try:
            self.board.heartbeat(self.task_id, author=self.author)
        except HermesError:  # the task is no longer running (the worker just finished it), or the board is busy
            return

    def ask(self, request: Request) -> Any | None:
        return self.inner.ask(request)
