"""The kanban board inside ``hermes gateway run``: a person asks in a Telegram chat (a loopback fake), the
orchestrator session creates a task, the gateway's own dispatcher runs a real worker for it, and the chat is
told when it is done. Also the notice text, the cursor across restarts and a gateway that has no board."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hermes
from fakes.messaging.telegram import TOKEN, TelegramDriver
from fakes.model_server import Reply, call, text
from hermes.store.kanban.board import Board
from hermes.store.kanban.config import KanbanConfig
from hermes.surfaces.kanban_gateway import KanbanGatewayHook, notice_text


@pytest.fixture
def telegram() -> Iterator[TelegramDriver]:
    driver = TelegramDriver()
    yield driver
    driver.close()


def model(body: dict[str, Any]) -> Reply:
    """The orchestrator in the chat creates a task; the worker the gateway starts for it completes it."""
    messages = body["messages"]
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    worker = re.search(r"worker for kanban task (t_[0-9a-f]{8})", prompt)
    if messages[-1]["role"] == "tool":
        return text("finished" if worker else "I put it on the board.")
    if worker:
        return call("kanban_complete", {"summary": "the report is written"})
    return call("kanban_create", {"title": "write the report", "assignee": "dev"})


@pytest.mark.timeout(240)
def test_the_gateway_dispatches_a_chats_task_and_tells_the_chat(hermes_home: Path, model_server: Any,
                                                                telegram: TelegramDriver) -> None:
    server = model_server(model)
    alice = telegram.dm_chat("alice")
    (hermes_home / "config.yaml").write_text(
        f"model:\n  base_url: {server.url}\n  name: m\n  max_retries: 0\n  stream: false\n"
        "kanban:\n  gateway_dispatch: true\n  gateway_interval_seconds: 0.5\n"
        f"gateway:\n  platforms:\n    telegram:\n      base_url: {telegram.url}\n      poll_timeout: 1\n"
        f"      allow_users: ['{alice}']\n      toolsets: [kanban]\n")
    (hermes_home / ".env").write_text(f"TELEGRAM_BOT_TOKEN={TOKEN}\nOPENAI_API_KEY=test\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HERMES_KANBAN"))}
    env["HERMES_HOME"] = str(hermes_home)
    env["PYTHONPATH"] = str(Path(hermes.__file__).resolve().parents[1])  # this hermes, for the workers too
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "gateway", "run"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    err = ""
    try:
        telegram.say("alice", "please get the report written", direct=True)
        telegram.wait_for(lambda ps: [p for p in ps if "I put it on the board" in p.text], timeout=90)
        done = telegram.wait_for(lambda ps: [p for p in ps if "is done" in p.text], timeout=120)[0]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        print(err)
    assert proc.returncode == 0, err
    with Board.open_default() as board:
        [task] = board.tasks()
        [run] = board.runs(task.id)
    assert done.chat == alice
    assert done.text == f"Kanban task {task.id} “write the report” is done: the report is written"
    assert task.status == "done" and (task.origin or "").startswith("session:")
    assert run.claimed_by.startswith("gateway:") and run.outcome == "completed"
    assert TOKEN not in err


def test_notices_follow_the_cursor_and_only_go_to_known_chats(tmp_path: Path) -> None:
    sent: list[tuple[str, str]] = []
    cfg = KanbanConfig()
    cursor = tmp_path / "gateway" / "kanban_notices.json"
    board = Board(tmp_path / "kanban.db", files=tmp_path / "files")
    before, _ = board.create("old", created_by="me", assignee="dev", origin="chat:telegram:1:")
    board.move(before.id, "blocked", actor="person", author="me", reason="an old block")
    sessions = {"s1": "telegram:42:7"}

    def hook() -> KanbanGatewayHook:
        return KanbanGatewayHook(Board(tmp_path / "kanban.db", files=tmp_path / "files"), cfg,
                                 send=lambda key, msg: sent.append((key, msg)) is None,
                                 key_for_session=sessions.get, cursor_path=cursor)

    first = hook()  # a first start: what happened before it is not told
    mine, _ = board.create("mine", created_by="me", assignee="dev", origin="session:s1")
    stranger, _ = board.create("theirs", created_by="me", assignee="dev", origin="session:elsewhere")
    for task in (mine, stranger):
        board.claim("d", task_id=task.id)
        board.block(task.id, "needs the API key", kind="needs_input", actor="worker", author="w")
    assert first.notify() == 1 and first.notify() == 0
    assert sent == [("telegram:42:7", f"Kanban task {mine.id} “mine” is blocked (needs_input): needs the API key")]
    assert json.loads(cursor.read_text())["board"] == str(tmp_path / "kanban.db")
    first.board.close()
    board.move(mine.id, "ready", actor="person", author="me")  # not a status the chat is told about
    board.claim("d", task_id=mine.id)
    board.finish(mine.id, "review", actor="worker", author="w", summary="please look")
    second = hook()  # restarted: carries on after the last event handled, nothing twice
    assert second.notify() == 1
    assert sent[-1] == ("telegram:42:7", f"Kanban task {mine.id} “mine” is ready for review: please look")
    second.board.close()
    board.close()


def test_a_notice_is_short_and_never_carries_a_key(tmp_path: Path) -> None:
    with Board(tmp_path / "kanban.db", files=tmp_path / "files") as board:
        task, _ = board.create("t", created_by="me", assignee="dev")
        board.claim("d", task_id=task.id)
        secret = "sk-" + "a1B2" * 12
        task = board.finish(task.id, "done", actor="worker", author="w", summary=f"used {secret} " + "x" * 2000)
        line = notice_text(task, board.events(task.id)[-1])
    assert secret not in line and len(line) < 800 and line.endswith(" …")


def test_a_gateway_without_a_board_makes_none(hermes_home: Path) -> None:
    from hermes.config.settings import Settings
    from hermes.surfaces.kanban_gateway import start_for_gateway

    (hermes_home / "config.yaml").write_text("model:\n  name: m\n")
    assert start_for_gateway(Settings.load(), lambda key, msg: True) is None
    assert not (hermes_home / "kanban.db").exists()
