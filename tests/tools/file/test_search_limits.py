"""search_files never hangs: time limit on the Python engine, FIFOs/sockets skipped, NUL-separated names,
and no ripgrep child left behind after a cancel or a time limit."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.file.search  # noqa: F401  (registers the tool)
from hermes.tools.registry import registry
from hermes.tools.session import SessionContext, ToolSession

HAS_RG = shutil.which("rg") is not None
#: look-behind: ripgrep refuses it, so the Python engine runs; (a|aa)+$ backtracks exponentially on a…a!
CATASTROPHIC = r"(?<!b)(a|aa)+$"


def call(**args: Any) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(registry.dispatch("search_files", args, task_id="t1"))
    return result


def short_limit(hermes_home: Path, seconds: float = 1) -> None:
    (hermes_home / "config.yaml").write_text(f"file:\n  search_time_limit: {seconds}\n")


def rg_children() -> list[int]:
    """ripgrep processes whose parent is this process (running or not yet reaped)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="utf-8", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)
            comm = fields[0].split("(", 1)[1]
            ppid = int(fields[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and comm == "rg":
            found.append(int(entry.name))
    return found


@pytest.fixture
def special(ws: Path) -> Iterator[Path]:
    """A tree holding a FIFO and a listening Unix socket beside an ordinary file."""
    (ws / "a.txt").write_text("needle\n")
    os.mkfifo(ws / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(ws / "sock"))
    yield ws
    sock.close()


@pytest.mark.timeout(60)
def test_a_catastrophic_pattern_ends_at_the_time_limit(ws: Path, hermes_home: Path, engine: str) -> None:
    short_limit(hermes_home)
    (ws / "a_quick.txt").write_text("aa\n")
    (ws / "b_slow.txt").write_text("a" * 80 + "!\n")  # today's re engine: about 1.6**80 steps
    result = call(pattern=CATASTROPHIC)
    assert "error" not in result, result
    assert result["engine"] == "python"
    assert result["stopped"] == "time limit" and result["truncated"] is True
    assert [m["file"] for m in result["matches"]] == ["a_quick.txt"]  # what was found before stays
    assert "time limit" in result["note"]


def test_a_bad_search_time_limit_is_reported(ws: Path, hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("file:\n  search_time_limit: -3\n")
    assert "file.search_time_limit" in call(pattern="x")["error"]


@pytest.mark.timeout(60)
def test_fifos_and_sockets_in_the_tree_are_skipped(special: Path, hermes_home: Path, engine: str) -> None:
    short_limit(hermes_home, 20)
    result = call(pattern="needle")
    assert [m["file"] for m in result["matches"]] == ["a.txt"] and "stopped" not in result
    assert call(pattern="*", target="files")["files"] == ["a.txt"]


@pytest.mark.timeout(60)
def test_a_fifo_or_socket_is_refused_as_the_search_path(special: Path, hermes_home: Path, engine: str) -> None:
    short_limit(hermes_home, 20)
    for name in ("pipe", "sock"):
        assert "not a folder or a regular file" in call(pattern="needle", path=name)["error"]


@pytest.mark.timeout(60)
def test_a_fifo_named_gitignore_cannot_block_the_python_walk(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NO_RG", "1")
    (ws / "sub").mkdir()
    (ws / "sub/a.txt").write_text("needle\n")
    os.mkfifo(ws / "sub/.gitignore")  # today's walker opens it for reading and waits forever
    assert [m["file"] for m in call(pattern="needle")["matches"]] == ["sub/a.txt"]


@pytest.mark.skipif(not HAS_RG, reason="ripgrep is not installed")
@pytest.mark.timeout(60)
def test_ripgrep_blocked_by_a_fifo_is_killed_at_the_time_limit(ws: Path, hermes_home: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_NO_RG", raising=False)
    short_limit(hermes_home)
    (ws / "a.txt").write_text("needle\n")
    os.mkfifo(ws / ".gitignore")  # ripgrep itself opens it and blocks
    result = call(pattern="needle")
    assert result["engine"] == "rg" and result["stopped"] == "time limit" and result["truncated"] is True
    assert rg_children() == []


def test_names_with_newlines_and_invalid_utf8_come_back_whole(ws: Path, engine: str) -> None:
    (ws / "new\nline.txt").write_text("needle\n")
    with open(os.fsencode(ws) + b"/caf\xe9.txt", "wb") as fh:
        fh.write(b"needle\n")
    expected = ["caf\\xe9.txt", "new\nline.txt"]
    content = call(pattern="needle")
    assert content["engine"] == engine and [m["file"] for m in content["matches"]] == expected
    assert call(pattern="*.txt", target="files")["files"] == expected


class _Cancel:
    """The session's cancel flag: raised after the search has started (the turn is interrupted)."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self) -> bool:
        with self.lock:
            self.calls += 1
            return self.calls > self.after


def _search_in_session(cancel: _Cancel, **args: Any) -> dict[str, Any]:
    session = ToolSession(registry, ["search_files"], SessionContext(cancelled=cancel))
    result: dict[str, Any] = json.loads(session.dispatch("search_files", args).text)
    return result


@pytest.mark.timeout(60)
def test_a_cancelled_search_stops_and_leaves_no_child(ws: Path, engine: str) -> None:
    # ~3 MB of rg --json output: ripgrep is still writing into the pipe when the cancel comes
    (ws / "big.txt").write_text("needle in a line of some length\n" * 20000)
    result = _search_in_session(_Cancel(after=2), pattern="needle", max_results=1000)
    assert result["engine"] == engine
    assert result["stopped"] == "cancelled" and result["truncated"] is True
    assert "cancelled" in result["note"] and len(result["matches"]) < 1000
    assert rg_children() == []


@pytest.mark.timeout(60)
def test_a_search_stopped_by_max_results_leaves_no_child(ws: Path, engine: str) -> None:
    (ws / "big.txt").write_text("needle\n" * 50000)
    result = call(pattern="needle", max_results=3)
    assert result["count"] == 3 and result["truncated"] is True and "stopped" not in result
    assert rg_children() == []
