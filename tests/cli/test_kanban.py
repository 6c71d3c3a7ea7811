"""``hermes kanban`` in subprocesses against a real board file under a temporary HERMES_HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hermes.store.kanban.board import Board


def kanban(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HERMES_HOME": str(home), "USER": "ana"}
    env.pop("HERMES_KANBAN_DB", None)
    return subprocess.run([sys.executable, "-m", "hermes", "kanban", *args], capture_output=True, text=True,
                          env=env, timeout=60)


def test_create_link_move_comment_attach_and_read_back(hermes_home: Path, tmp_path: Path) -> None:
    first = kanban(hermes_home, "create", "design", "-a", "dev", "-p", "2", "--json")
    assert first.returncode == 0, first.stderr
    a = json.loads(first.stdout)["task"]["id"]
    b = kanban(hermes_home, "create", "build", "-a", "dev", "--parent", a).stdout.split()[0]
    board = kanban(hermes_home, "board")
    assert "READY (1)" in board.stdout and "TODO (1)" in board.stdout and "design" in board.stdout
    header = next(line for line in board.stdout.splitlines() if "ASSIGNEE" in line)
    row = next(line for line in board.stdout.splitlines() if line.strip().startswith(a))
    assert header.split() == ["ID", "PRI", "ASSIGNEE", "UPDATED", "STATE", "TITLE"]
    assert row.index("p2") == header.index("PRI") and row.index("dev") == header.index("ASSIGNEE"), board.stdout
    cycle = kanban(hermes_home, "link", b, a)
    assert cycle.returncode == 1 and "would make a cycle" in cycle.stderr
    refused = kanban(hermes_home, "move", a, "done")
    assert refused.returncode == 1 and "cannot go from ready to done" in refused.stderr
    blocked = kanban(hermes_home, "move", a, "blocked", "--reason", "waiting for keys")
    assert blocked.stdout.strip() == f"{a} blocked"
    assert "waiting for keys" in next(line for line in kanban(hermes_home, "board").stdout.splitlines()
                                      if line.strip().startswith(a))
    assert kanban(hermes_home, "move", a, "ready").stdout.strip() == f"{a} ready"
    assert kanban(hermes_home, "comment", a, "looks good").returncode == 0
    note = tmp_path / "notes.txt"
    note.write_text("hello")
    assert "5 bytes" in kanban(hermes_home, "attach", a, str(note)).stdout
    (hermes_home / "config.yaml").write_text("kanban:\n  attachment_max_bytes: 3\n")
    over = kanban(hermes_home, "attach", a, str(note))
    assert over.returncode == 1 and "over the cap of 3 bytes" in over.stderr
    assert kanban(hermes_home, "assign", b, "ops").stdout.strip() == f"{b} assigned to ops"
    shown = json.loads(kanban(hermes_home, "show", a, "--json").stdout)
    assert shown["children"] == [b] and shown["comments"][0]["author"] == "ana"
    assert [x["filename"] for x in shown["attachments"]] == ["notes.txt"]
    logs = json.loads(kanban(hermes_home, "logs", a, "--json").stdout)
    assert [e["kind"] for e in logs] == ["created", "promote", "block", "unblock", "commented", "attached"]
    assert kanban(hermes_home, "archive", a).returncode == 0
    with Board.open_default() as check:
        assert check.get(b).status == "ready"  # its only parent is archived
        assert check.get(a).status == "archived"
    assert a not in kanban(hermes_home, "board").stdout and a in kanban(hermes_home, "board", "--all").stdout
    missing = kanban(hermes_home, "show", "t_00000000")
    assert missing.returncode == 1 and "unknown task id 't_00000000'" in missing.stderr
    assert kanban(hermes_home, "runs", b).stdout.strip() == "no runs yet"
