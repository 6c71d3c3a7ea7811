"""The kanban state machine as one table (requirement T-KAN).

Every status change of a task is a row of :data:`TRANSITIONS`: from which status, to which status,
the action's name (what the event log records) and who may do it:

* ``worker`` — the agent the dispatcher started for this very task (``HERMES_KANBAN_TASK``);
* ``orchestrator`` — an agent whose profile enables the ``kanban`` toolset (board tools);
* ``person`` — someone at the ``hermes kanban`` command line;
* ``dispatcher`` — the dispatcher claiming, reclaiming or giving up on a task;
* ``board`` — the board itself, keeping dependencies true (a task whose parents are all done becomes
  ready; a ready task that gains an open parent goes back to todo).

Nothing else changes a status: :func:`transition` is the one check, used by every write of
:class:`hermes.store.kanban.board.Board`.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes.errors import StoreError

STATUSES = ("triage", "todo", "ready", "running", "review", "blocked", "done", "archived")
ACTORS = ("worker", "orchestrator", "person", "dispatcher", "board")
#: why a task is blocked
BLOCK_KINDS = ("dependency", "needs_input", "capability", "transient", "failed")
#: statuses that count as finished for the children of a task
FINISHED = frozenset({"done", "archived"})

_LEAD = frozenset({"orchestrator", "person"})


@dataclass(frozen=True)
class Transition:
    """One allowed status change: ``source`` → ``target`` by ``action``, done by one of ``actors``."""

    source: str
    target: str
    action: str
    actors: frozenset[str]


def _row(source: str, target: str, action: str, *actors: str) -> Transition:
    return Transition(source, target, action, frozenset(actors))


TRANSITIONS: tuple[Transition, ...] = (
    _row("triage", "todo", "accept", *_LEAD),
    _row("triage", "archived", "archive", *_LEAD),
    _row("todo", "ready", "promote", "board", *_LEAD),
    _row("todo", "triage", "retriage", *_LEAD),
    _row("todo", "blocked", "block", *_LEAD),
    _row("todo", "archived", "archive", *_LEAD),
    _row("ready", "running", "claim", "dispatcher"),
    _row("ready", "todo", "wait_for_parents", "board"),
    _row("ready", "blocked", "block", *_LEAD),
    _row("ready", "archived", "archive", *_LEAD),
    _row("running", "done", "complete", "worker"),
    _row("running", "review", "request_review", "worker"),
    _row("running", "blocked", "block", "worker", "dispatcher"),
    _row("running", "ready", "reclaim", "dispatcher", "person"),
    _row("running", "archived", "archive", *_LEAD),
    _row("review", "done", "approve", *_LEAD),
    _row("review", "ready", "request_changes", *_LEAD),
    _row("review", "archived", "archive", *_LEAD),
    _row("blocked", "ready", "unblock", *_LEAD),
    _row("blocked", "todo", "unblock", *_LEAD),
    _row("blocked", "archived", "archive", *_LEAD),
    _row("done", "archived", "archive", *_LEAD),
)

_BY_EDGE: dict[tuple[str, str], Transition] = {(t.source, t.target): t for t in TRANSITIONS}


class KanbanError(StoreError):
    """A board operation was refused or failed; nothing on the board changed."""


class TransitionRefused(KanbanError):
    """Not an allowed status change for that actor; the message says what is allowed instead."""


def transition(source: str, target: str, actor: str) -> Transition:
    """The row allowing ``actor`` to move a task from ``source`` to ``target``, or :class:`TransitionRefused`."""
    if actor not in ACTORS:
        raise TransitionRefused(f"unknown actor {actor!r} (one of {', '.join(ACTORS)})")
    for status in (source, target):
        if status not in STATUSES:
            raise TransitionRefused(f"unknown status {status!r} (one of {', '.join(STATUSES)})")
    row = _BY_EDGE.get((source, target))
    if row is None:
        allowed = sorted(t.target for t in TRANSITIONS if t.source == source and actor in t.actors)
        hint = f"; from {source} the {actor} may move it to: {', '.join(allowed)}" if allowed else ""
        raise TransitionRefused(f"a task cannot go from {source} to {target}{hint}")
    if actor not in row.actors:
        raise TransitionRefused(
            f"{source} → {target} ({row.action}) is for the {' or '.join(sorted(row.actors))}, not the {actor}")
    return row


def targets(source: str, actor: str) -> list[str]:
    """The statuses ``actor`` may move a task in ``source`` to."""
    return [t.target for t in TRANSITIONS if t.source == source and actor in t.actors]
