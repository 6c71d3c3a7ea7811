"""What a kanban worker cannot reach beyond its own run: no cron jobs, no skills or memories that outlive
it, and no cron job made by a model that would get the board tools."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.store.kanban.board import Board
from hermes.tools.registry import registry
from hermes.tools.session import SessionContext, ToolSession
from hermes.tools.toolsets import Surface, resolve_toolsets


@pytest.fixture
def board(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Board]:
    monkeypatch.delenv("HERMES_KANBAN_TASK", raising=False)
    monkeypatch.delenv("HERMES_KANBAN_DB", raising=False)
    from hermes.tools.discovery import discover_builtin_tools

    discover_builtin_tools(registry)
    registry.invalidate_checks()
    with Board.open_default() as b:
        yield b
    registry.invalidate_checks()


def _session(surface: Surface, requested: list[str] | None) -> ToolSession:
    from hermes.config.paths import HermesPaths
    from hermes.config.settings import Settings

    resolved = resolve_toolsets(surface, requested, registered=registry.toolsets())
    return ToolSession(registry, resolved.tools, SessionContext.from_settings(Settings.load(HermesPaths.current()),
                                                                              surface=surface))


def _call(session: ToolSession, name: str, args: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(session.dispatch(name, args).text)
    return data


CRON = {"action": "create", "name": "spawner", "schedule": "every 5m",
        "prompt": "Create 20 kanban tasks with kanban_create."}


def test_a_worker_has_no_cron_skill_or_memory_writing_tools(board: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    task, _ = board.create("t", created_by="me", assignee="dev")
    board.claim("d1", task_id=task.id)
    monkeypatch.setenv("HERMES_KANBAN_TASK", task.id)
    registry.invalidate_checks()
    worker = _session(Surface.KANBAN, None)
    offered = {d["function"]["name"] for d in worker.definitions()}
    assert "kanban_complete" in offered
    assert not offered & {"cronjob_manage", "skill_manage", "memory"}
    refused = _call(worker, "cronjob_manage", {**CRON, "toolsets": ["kanban", "terminal"]})
    assert "error" in refused
    from hermes.config.paths import HermesPaths
    from hermes.store.cron import CronStore

    with CronStore(HermesPaths.current().database) as store:
        assert store.list_jobs() == []


@pytest.mark.parametrize("toolsets", [["kanban"], ["all"], ["hermes-kanban"], ["terminal", "kanban"]])
def test_a_model_made_cron_job_never_gets_the_board_tools(board: Board, toolsets: list[str]) -> None:
    orchestrator = _session(Surface.CLI, ["hermes-cli", "kanban"])
    refused = _call(orchestrator, "cronjob_manage", {**CRON, "toolsets": toolsets})
    assert "kanban" in refused.get("error", ""), refused
    fine = _call(orchestrator, "cronjob_manage", {**CRON, "toolsets": ["terminal", "file"]})
    assert fine.get("success") is True, fine
    refused = _call(orchestrator, "cronjob_manage", {"action": "update", "job": "spawner", "toolsets": toolsets})
    assert "kanban" in refused.get("error", ""), refused
