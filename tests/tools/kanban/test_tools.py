"""The 14 kanban tools: who is offered which, workers kept to their own task, and bad input refused."""

from __future__ import annotations

import base64
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.store.kanban.board import Board
from hermes.tools.kanban import boardtools, lifecycle
from hermes.tools.registry import registry
from hermes.tools.session import SessionContext, ToolSession
from hermes.tools.toolsets import KANBAN_BOARD, KANBAN_WORKER, Surface, resolve_toolsets

WORKER = {"kanban_show", "kanban_complete", "kanban_block", "kanban_heartbeat", "kanban_comment", "kanban_attach",
          "kanban_attach_url", "kanban_attachments", "kanban_request_review"}
ORCHESTRATOR_ONLY = {"kanban_list", "kanban_create", "kanban_link", "kanban_unblock", "kanban_review"}


@pytest.fixture
def board(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Board]:
    monkeypatch.delenv("HERMES_KANBAN_TASK", raising=False)
    monkeypatch.delenv("HERMES_KANBAN_DB", raising=False)
    monkeypatch.setenv("HERMES_PROFILE", "lead")
    registry.invalidate_checks()
    (hermes_home / "config.yaml").write_text("kanban:\n  attachment_max_bytes: 64\n")
    with Board.open_default(attachment_max_bytes=64) as b:
        yield b
    registry.invalidate_checks()


def _session(surface: Surface, requested: list[str] | None) -> ToolSession:
    resolved = resolve_toolsets(surface, requested, registered=registry.toolsets())
    return ToolSession(registry, resolved.tools, SessionContext(surface=surface))


def _offered(surface: Surface, requested: list[str] | None) -> set[str]:
    names = {d["function"]["name"] for d in _session(surface, requested).definitions()}
    return {n for n in names if n.startswith("kanban_")}


def _become_worker(monkeypatch: pytest.MonkeyPatch, task_id: str) -> None:
    monkeypatch.setenv("HERMES_KANBAN_TASK", task_id)
    monkeypatch.setenv("HERMES_PROFILE", "dev")
    registry.invalidate_checks()


def call(name: str, surface: Surface = Surface.CLI, **args: Any) -> dict[str, Any]:
    session = _session(surface, None if surface is Surface.KANBAN else ["hermes-cli", "kanban"])
    result: dict[str, Any] = json.loads(session.dispatch(name, args).text)
    return result


def test_the_fourteen_tools_are_registered_and_listed() -> None:
    assert lifecycle.TOOLSET == boardtools.TOOLSET == "kanban"
    assert set(KANBAN_WORKER) == WORKER and set(KANBAN_BOARD) == ORCHESTRATOR_ONLY
    assert set(registry.toolsets()["kanban"]) == WORKER | ORCHESTRATOR_ONLY
    assert len(WORKER | ORCHESTRATOR_ONLY) == 14


def test_schemas_go_to_the_right_agents(board: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _offered(Surface.CLI, None) == set()  # neither: a plain session
    assert _offered(Surface.CLI, ["hermes-cli", "kanban"]) == WORKER | ORCHESTRATOR_ONLY  # orchestrator profile
    task, _ = board.create("t", created_by="me", assignee="dev")
    _become_worker(monkeypatch, task.id)
    assert _offered(Surface.KANBAN, None) == WORKER  # started by the dispatcher
    assert _offered(Surface.CLI, ["hermes-cli", "kanban"]) == WORKER  # the env var wins over the profile


def test_a_worker_calling_a_board_tool_is_refused(board: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    task, _ = board.create("t", created_by="me", assignee="dev")
    _become_worker(monkeypatch, task.id)
    refused = call("kanban_list", Surface.KANBAN)
    assert "kanban_list" in refused["error"] and "not enabled in this session" in refused["error"]
    direct = json.loads(registry.dispatch("kanban_create", {"title": "sneaky"}))
    assert "not available" in direct["error"]
    with pytest.raises(Exception, match="orchestrator tool; this agent is the worker of task"):
        boardtools._create({"title": "sneaky"})
    assert [t.title for t in board.tasks()] == ["t"]


def test_a_worker_touches_only_its_own_task(board: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    mine, _ = board.create("mine", created_by="me", assignee="dev")
    other, _ = board.create("other", created_by="me", assignee="dev", priority=-1)
    board.claim("d1", task_id=mine.id)
    _become_worker(monkeypatch, mine.id)
    for name, args in (("kanban_show", {}), ("kanban_comment", {"body": "hi"}), ("kanban_heartbeat", {}),
                       ("kanban_complete", {"summary": "x"}), ("kanban_block", {"reason": "x"}),
                       ("kanban_attachments", {})):
        refused = call(name, Surface.KANBAN, task_id=other.id, **args)
        assert refused["error"].endswith(f"a worker may only act on its own task {mine.id}, not {other.id}")
    assert board.comments(other.id) == [] and [e.kind for e in board.events(other.id)] == ["created", "promote"]
    shown = call("kanban_show", Surface.KANBAN)
    assert shown["task"]["id"] == mine.id and shown["runs"][0]["claimed_by"] == "d1"
    assert call("kanban_heartbeat", Surface.KANBAN, note="working")["ok"]
    assert call("kanban_comment", Surface.KANBAN, body="progress")["ok"]
    done = call("kanban_complete", Surface.KANBAN, summary="did it", cost_usd=0.5)
    assert done["status"] == "done"
    [run] = board.runs(mine.id)
    assert (run.outcome, run.summary, run.cost_usd) == ("completed", "did it", 0.5)
    assert board.comments(mine.id)[0].author == "dev"


def test_orchestrator_flow_create_link_review_unblock(board: Board) -> None:
    a = call("kanban_create", title="design", assignee="dev", priority=3)
    b = call("kanban_create", title="build", assignee="dev", parents=[a["task_id"]])
    again = call("kanban_create", title="design again", assignee="dev", idempotency_key="k")
    assert call("kanban_create", title="other", idempotency_key="k") == {**again, "created": False}
    assert (a["status"], b["status"]) == ("ready", "todo")
    cycle = call("kanban_link", parent_id=b["task_id"], child_id=a["task_id"])
    assert "cycle" in cycle["error"]
    assert board.parents(a["task_id"]) == []
    listed = call("kanban_list", status="ready")
    assert [t["title"] for t in listed["tasks"]] == ["design", "design again"]
    board.claim("d1", task_id=a["task_id"])
    board.finish(a["task_id"], "review", actor="worker", author="dev", summary="draft")
    assert call("kanban_unblock", task_id=a["task_id"])["error"] == f"task {a['task_id']} is review, not blocked"
    changes = call("kanban_review", task_id=a["task_id"], decision="request_changes", note="more detail")
    assert changes["status"] == "ready" and board.comments(a["task_id"])[0].body == "more detail"
    board.claim("d1", task_id=a["task_id"])
    board.finish(a["task_id"], "review", actor="worker", author="dev", summary="v2")
    assert call("kanban_review", task_id=a["task_id"], decision="approve")["status"] == "done"
    assert board.get(b["task_id"]).status == "ready"
    board.block(b["task_id"], "need keys", kind="needs_input", actor="person", author="me")
    assert call("kanban_unblock", task_id=b["task_id"], note="keys are in .env")["status"] == "ready"


def test_bad_input_gets_clear_errors_and_changes_nothing(board: Board) -> None:
    task, _ = board.create("t", created_by="me", assignee="dev")
    missing = call("kanban_show", task_id="t_00000000")
    assert missing["error"] == "unknown task id 't_00000000'"
    assert "task_id is required" in call("kanban_comment", body="x")["error"]
    assert "'kind'" in call("kanban_block", task_id=task.id, reason="x", kind="failed")["error"]
    assert "not valid base64" in call("kanban_attach", task_id=task.id, filename="a", content_base64="!!")["error"]
    big = base64.b64encode(b"x" * 65).decode()
    over = call("kanban_attach", task_id=task.id, filename="big.bin", content_base64=big)
    assert "over the cap of 64 bytes" in over["error"]
    small = call("kanban_attach", task_id=task.id, filename="ok.txt", content_base64=base64.b64encode(b"ok").decode())
    assert small["size"] == 2
    assert [a.filename for a in board.attachments(task.id)] == ["ok.txt"]
    assert "'title'" in call("kanban_create")["error"]
    assert "'decision'" in call("kanban_review", task_id=task.id, decision="maybe")["error"]


@pytest.fixture
def page_server() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"x" * 100 if self.path == "/big.txt" else b"report"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_attach_url_is_ssrf_safe_and_capped(board: Board, page_server: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    task, _ = board.create("t", created_by="me")
    refused = call("kanban_attach_url", task_id=task.id, url=f"{page_server}/report.txt")
    assert "was not fetched" in refused["error"] and board.attachments(task.id) == []
    monkeypatch.setenv("HERMES_ALLOW_PRIVATE_URLS", "1")
    got = call("kanban_attach_url", task_id=task.id, url=f"{page_server}/report.txt")
    assert got["filename"] == "report.txt" and got["size"] == 6
    [att] = board.attachments(task.id)
    assert Path(att.stored_path).read_bytes() == b"report" and att.source_url == f"{page_server}/report.txt"
    too_big = call("kanban_attach_url", task_id=task.id, url=f"{page_server}/big.txt")
    assert "was not fetched" in too_big["error"] and len(board.attachments(task.id)) == 1
