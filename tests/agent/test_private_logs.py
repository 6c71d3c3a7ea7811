"""Logs that can hold what a worker or an MCP server printed (tokens included) are private: 0600 files
in 0700 folders."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

from hermes.agent.kanban import Dispatcher
from hermes.config.paths import HermesPaths
from hermes.store.kanban.board import Board
from hermes.store.kanban.config import KanbanConfig


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_kanban_worker_logs_are_private(hermes_home: Path) -> None:
    with Board.open_default() as board:
        task, _ = board.create("t", created_by="me", assignee="dev")
        dispatcher = Dispatcher(board, KanbanConfig.from_config({}), command=[sys.executable, "-c", "print('hi')"])
        dispatcher.drain(poll_s=0.05)
        log = board.files / "logs" / f"{task.id}.log"
        assert "hi" in log.read_text()
        assert _mode(log) == 0o600 and _mode(log.parent) == 0o700


def test_hermes_home_is_made_private(tmp_path: Path) -> None:
    home = HermesPaths(tmp_path / "new-home")
    home.ensure()
    assert _mode(home.home) == 0o700


def test_a_hermes_home_made_by_opening_the_board_is_private(tmp_path: Path) -> None:
    with Board(tmp_path / "fresh-home" / "kanban.db"):
        pass
    assert _mode(tmp_path / "fresh-home") == 0o700
