"""requirement T-FILE: the full-file baseline rule, as a table of scenarios.

Each scenario runs a sequence of steps against one 1,200-line file (three pages of 500) and then asks
``write_file`` to overwrite it. Steps are tool calls of the task under test, of another task, or writes
by "someone else": another program, a terminal command (a real shell), an execute_code-style Python
child process. Those never create a baseline; only read_file, write_file and patch do.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.file.patch
import hermes.tools.file.read
import hermes.tools.file.write  # noqa: F401  (registers the tools)
from hermes.tools.file.baseline import FileTracker
from hermes.tools.registry import registry

LINES = 1200
ORIGINAL = "".join(f"row {i:05d}\n" for i in range(1, LINES + 1))


def call(tool: str, task: str = "t1", **args: Any) -> dict[str, Any]:
    return json.loads(registry.dispatch(tool, args, task_id=task))


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in result, result
    return result


# -- steps ---------------------------------------------------------------------------------------------------
def run_step(step: tuple[Any, ...], f: Path) -> None:
    kind = step[0]
    if kind == "read":  # ("read", offset[, limit[, task]])
        offset = step[1]
        limit = step[2] if len(step) > 2 else None
        task = step[3] if len(step) > 3 else "t1"
        args: dict[str, Any] = {"path": f.name, "offset": offset}
        if limit:
            args["limit"] = limit
        ok(call("read_file", task, **args))
    elif kind == "read_all":
        nxt: int | None = 1
        while nxt:
            nxt = ok(call("read_file", path=f.name, offset=nxt))["next_offset"]
    elif kind == "write":
        ok(call("write_file", path=f.name, content=step[1]))
    elif kind == "patch":
        ok(call("patch", path=f.name, old_string=step[1], new_string=step[2]))
    elif kind == "other_writer":
        f.write_text(step[1])
    elif kind == "terminal":
        subprocess.run(["sh", "-c", step[1]], cwd=f.parent, check=True)
    elif kind == "execute_code":
        subprocess.run([sys.executable, "-c", step[1]], cwd=f.parent, check=True)
    else:  # pragma: no cover
        raise AssertionError(kind)


CHANGED = ORIGINAL.replace("row 00600\n", "row 00600 edited elsewhere\n")
READ_ALL = ("read_all",)
P1, P2, P3 = ("read", 1), ("read", 501), ("read", 1001)

# (id, setup: "file" | "none" | "secret" | "long" | "binary", steps, expected: None = allowed, or error words)
SCENARIOS: list[tuple[str, str, list[tuple[Any, ...]], list[str] | None]] = [
    ("never_read", "file", [], ["never read", "1200 lines", "offsets 1, 501, 1001"]),
    ("new_file_needs_no_baseline", "none", [], None),
    ("a_full_read_all_pages", "file", [P1, P2, P3], None),
    ("a_full_read_pages_any_order", "file", [P3, P1, P2], None),
    ("a_full_read_one_big_page", "file", [("read", 1, 2000)], None),
    ("partial_read_only", "file", [P1], ["read only part", "501-1200", "offset=501, limit=700"]),
    ("two_of_three_pages", "file", [P1, P3], ["read only part", "501-1000", "offset=501, limit=500"]),
    ("pages_of_different_versions", "file", [P1, P2, ("other_writer", CHANGED), P3],
     ["changed since", "read only part"]),
    ("partial_reread_keeps_baseline", "file", [READ_ALL, P2], None),
    ("partial_reread_after_other_writer", "file", [READ_ALL, ("other_writer", CHANGED), P2],
     ["changed since", "read only part"]),
    ("other_writer_after_full_read", "file", [READ_ALL, ("other_writer", CHANGED)],
     ["changed since", "offsets 1, 501"]),
    ("full_reread_after_other_writer", "file", [READ_ALL, ("other_writer", CHANGED), READ_ALL], None),
    ("other_writer_restores_same_bytes", "file", [READ_ALL, ("other_writer", CHANGED), ("other_writer", ORIGINAL)],
     None),
    ("b_own_write", "file", [READ_ALL, ("write", "fresh\n")], None),
    ("b_own_write_of_new_file", "none", [("write", "fresh\n")], None),
    ("b_own_write_then_other_writer", "none", [("write", "fresh\n"), ("other_writer", "meddled\n")],
     ["changed since"]),
    ("c_patch_after_full_read", "file", [READ_ALL, ("patch", "row 00007\n", "row seven\n")], None),
    ("c_patch_after_full_read_then_partial_reread", "file",
     [READ_ALL, ("patch", "row 00007\n", "row seven\n"), P1], None),
    ("c_patch_after_own_write", "none", [("write", "a\nb\n"), ("patch", "a\n", "A\n")], None),
    ("patch_without_read", "file", [("patch", "row 00007\n", "row seven\n")], ["patch without having read"]),
    ("patch_after_partial_read", "file", [P1, ("patch", "row 00007\n", "row seven\n")],
     ["patch without having read"]),
    ("patch_unread_then_rest_of_new_version", "file", [P1, ("patch", "row 00007\n", "row seven\n"), P2, P3],
     ["patch without having read", "lines 1-500 are still unread"]),
    ("patch_unread_then_full_read_of_new_version", "file", [("patch", "row 00007\n", "row seven\n"), READ_ALL],
     None),
    ("redacted_view_only", "secret", [READ_ALL], ["REDACTED", "use patch"]),
    ("elided_view_only", "long", [READ_ALL], ["cut", "use patch"]),
    ("binary_file", "binary", [("read", 1)], ["binary file"]),
    ("terminal_created_file", "none", [("terminal", "printf 'made by the shell\\n' > f.txt")], ["never read"]),
    ("terminal_write_after_full_read", "file", [READ_ALL, ("terminal", "echo appended >> f.txt")],
     ["changed since", "terminal"]),
    ("execute_code_write_after_own_write", "none",
     [("write", "x = 1\n"), ("execute_code", "open('f.txt', 'a').write('y = 2\\n')")], ["changed since"]),
    ("another_task_read_it", "file", [("read", 1, 2000, "t2")], ["never read"]),
]  # fmt: skip


@pytest.mark.parametrize(("setup", "steps", "expected"), [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS])
def test_write_file_baseline_rule(
    ws: Path, monkeypatch: pytest.MonkeyPatch, setup: str, steps: list[tuple[Any, ...]], expected: list[str] | None
) -> None:
    f = ws / "f.txt"
    if setup == "file":
        f.write_text(ORIGINAL)
    elif setup == "secret":
        monkeypatch.setenv("DEPLOY_TOKEN", "tok-4f9a8b7c6d5e")
        f.write_text(ORIGINAL.replace("row 00003\n", "token = tok-4f9a8b7c6d5e\n"))
    elif setup == "long":
        f.write_text(ORIGINAL.replace("row 00003\n", "x" * 5000 + "\n"))
    elif setup == "binary":
        f.write_bytes(b"\x00\x01\x02binary" * 50)
    for step in steps:
        run_step(step, f)
    before = f.read_bytes() if f.exists() else None
    result = call("write_file", path="f.txt", content="replacement\n")
    if expected is None:
        ok(result)
        assert f.read_text() == "replacement\n"
        # the write itself is a baseline (b): writing again is allowed
        ok(call("write_file", path="f.txt", content="again\n"))
    else:
        assert "error" in result, result
        for words in expected:
            assert words.lower() in result["error"].lower(), (words, result["error"])
        assert f.read_bytes() == before, "a refused write must not touch the file"


def test_patch_allowed_without_baseline_and_reports_it(ws: Path) -> None:
    f = ws / "f.txt"
    f.write_text(ORIGINAL)
    result = ok(call("patch", path="f.txt", old_string="row 00007\n", new_string="row seven\n"))
    assert result["full_file_seen"] is False
    read_all = [ok(call("read_file", path="f.txt", offset=o)) for o in (1, 501, 1001)]
    assert [r["full_file_seen"] for r in read_all] == [False, False, True]
    assert ok(call("patch", path="f.txt", old_string="row seven\n", new_string="row 7\n"))["full_file_seen"] is True


def test_read_result_tells_when_full_file_seen(ws: Path) -> None:
    (ws / "f.txt").write_text(ORIGINAL)
    first = ok(call("read_file", path="f.txt"))
    assert (first["total_lines"], first["more"], first["next_offset"]) == (1200, True, 501)
    assert first["full_file_seen"] is False
    ok(call("read_file", path="f.txt", offset=501))
    last = ok(call("read_file", path="f.txt", offset=1001))
    assert (last["more"], last["next_offset"], last["full_file_seen"]) == (False, None, True)


class FakeSession:
    """Satisfies hermes.tools.context.SessionView well enough for session_of()."""

    def __init__(self, task_id: str) -> None:
        self._task_id = task_id
        self.surface: Any = "cli"
        self.sink: Any = None
        self.state: dict[str, Any] = {}
        self.settings: Any = None

    @property
    def task_id(self) -> str:
        return self._task_id


def test_baselines_live_in_the_session_state_when_a_session_is_present(ws: Path) -> None:
    (ws / "f.txt").write_text("one\ntwo\n")
    session_a, session_b = FakeSession("same"), FakeSession("same")

    def via(session: FakeSession, tool: str, **args: Any) -> dict[str, Any]:
        return json.loads(registry.dispatch(tool, args, task_id=session.task_id, session=session))

    ok(via(session_a, "read_file", path="f.txt"))
    assert isinstance(session_a.state["file"], FileTracker)
    assert "never read" in via(session_b, "write_file", path="f.txt", content="x\n")["error"]
    ok(via(session_a, "write_file", path="f.txt", content="x\n"))
