"""The state machine table, driven row by row on a real board file.

``EXPECTED`` is written out independently of ``TRANSITIONS``: every (from, to, actor) the board must
allow. The table test compares the whole product of statuses × statuses × actors against it, so a row
added, removed or widened in the table fails here.
"""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import pytest

from hermes.store.kanban.board import Board
from hermes.store.kanban.states import ACTORS, STATUSES, TRANSITIONS, TransitionRefused, transition

L = ("orchestrator", "person")
EXPECTED: set[tuple[str, str, str]] = {
    *(("triage", "todo", a) for a in L),
    *(("todo", "ready", a) for a in (*L, "board")),
    *(("todo", "triage", a) for a in L),
    *(("todo", "blocked", a) for a in L),
    ("ready", "running", "dispatcher"),
    ("ready", "todo", "board"),
    *(("ready", "blocked", a) for a in L),
    ("running", "done", "worker"),
    ("running", "review", "worker"),
    ("running", "blocked", "worker"), ("running", "blocked", "dispatcher"),
    ("running", "ready", "dispatcher"), ("running", "ready", "person"),
    *(("review", "done", a) for a in L),
    *(("review", "ready", a) for a in L),
    *(("blocked", "ready", a) for a in L),
    *(("blocked", "todo", a) for a in L),
    *((s, "archived", a) for s in ("triage", "todo", "ready", "running", "review", "blocked", "done") for a in L),
}


def test_table_matches_the_expected_list_exactly() -> None:
    allowed = set()
    for source, target, actor in itertools.product(STATUSES, STATUSES, ACTORS):
        try:
            transition(source, target, actor)
        except TransitionRefused:
            continue
        allowed.add((source, target, actor))
    assert allowed == EXPECTED


def test_each_edge_is_one_row() -> None:
    edges = [(t.source, t.target) for t in TRANSITIONS]
    assert len(edges) == len(set(edges))


def test_refusals_say_what_is_allowed() -> None:
    with pytest.raises(TransitionRefused, match="for the worker, not the person"):
        transition("running", "done", "person")
    with pytest.raises(TransitionRefused, match="cannot go from done to ready"):
        transition("done", "ready", "person")
    with pytest.raises(TransitionRefused, match="unknown status"):
        transition("doing", "done", "worker")


def _board(tmp_path: Path) -> Board:
    return Board(tmp_path / "kanban.db", files=tmp_path / "files")


def _force(board: Board, task_id: str, status: str) -> None:
    """Put a task in ``status`` directly (test set-up only: the rows under test start from there)."""
    conn = sqlite3.connect(board.path)
    run_id = None
    if status == "running":
        run_id = conn.execute("INSERT INTO task_runs (task_id, attempt, claimed_by, started_at) VALUES (?, 1, 'd', 0)",
                              (task_id,)).lastrowid
    conn.execute("UPDATE tasks SET status = ?, current_run_id = ? WHERE id = ?", (status, run_id, task_id))
    conn.commit()
    conn.close()


def apply_move(board: Board, task_id: str, target: str, actor: str) -> str:
    """Do the operation that moves a task to ``target`` as ``actor``, the way each caller does it."""
    if target == "running":
        got = board.claim("d1", task_id=task_id) if actor == "dispatcher" else None
        if got is None:
            transition(board.get(task_id).status, target, actor)  # raises for other actors
            raise AssertionError("claim found nothing")
        return got[0].status
    if target in ("done", "review") and board.get(task_id).status == "running":
        return board.finish(task_id, target, actor=actor, author="x", summary="s").status
    if target == "blocked" and actor == "worker":
        return board.block(task_id, "why", kind="needs_input", actor=actor, author="x").status
    return board.move(task_id, target, actor=actor, author="x").status


# the board's own moves (promote, wait_for_parents) are driven by completions and links in test_board.py
@pytest.mark.parametrize(("source", "target", "actor"), sorted(r for r in EXPECTED if r[2] != "board"))
def test_allowed_row_moves_the_task_and_logs_it(tmp_path: Path, source: str, target: str, actor: str) -> None:
    board = _board(tmp_path)
    task, _ = board.create("t", created_by="me", assignee="dev")
    _force(board, task.id, source)
    assert apply_move(board, task.id, target, actor) == target
    last = board.events(task.id)[-1]
    assert (last.source, last.target, last.actor) == (source, target, actor)


REFUSED = sorted(
    (s, t, a) for s, t, a in itertools.product(STATUSES, STATUSES, ("worker", "orchestrator", "person"))
    if (s, t, a) not in EXPECTED and s != t and t != "running"
)


@pytest.mark.parametrize(("source", "target", "actor"), REFUSED)
def test_refused_row_changes_nothing(tmp_path: Path, source: str, target: str, actor: str) -> None:
    board = _board(tmp_path)
    task, _ = board.create("t", created_by="me", assignee="dev")
    _force(board, task.id, source)
    before = len(board.events(task.id))
    with pytest.raises(TransitionRefused):
        if target in ("done", "review"):
            board.finish(task.id, target, actor=actor, author="x", summary="s")
        else:
            board.move(task.id, target, actor=actor, author="x")
    assert board.get(task.id).status == source
    assert len(board.events(task.id)) == before
