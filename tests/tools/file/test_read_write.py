"""read_file paging, binary/image/long-line/secret handling; write_file creation, modes and atomicity."""

from __future__ import annotations

import json
import os
import stat
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.file.read
import hermes.tools.file.write  # noqa: F401  (registers the tools)
from hermes.redact import MASK
from hermes.tools.file.read import MAX_LINE_CHARS, RESULT_BUDGET
from hermes.tools.registry import registry


def call(tool: str, task: str = "t1", **args: Any) -> dict[str, Any]:
    return json.loads(registry.dispatch(tool, args, task_id=task))


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in result, result
    return result


# -- read_file ------------------------------------------------------------------------------------------------
def test_read_pages_with_line_numbers(ws: Path) -> None:
    (ws / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 1101)))
    page = ok(call("read_file", path="f.txt"))
    rows = page["content"].split("\n")
    assert rows[0] == "     1|line 1"
    assert rows[-1] == "   500|line 500"
    assert (page["offset"], page["last_line"], page["total_lines"], page["more"], page["next_offset"]) == (
        1, 500, 1100, True, 501,
    )  # fmt: skip
    tail = ok(call("read_file", path="f.txt", offset=1001, limit=200))
    assert tail["content"].split("\n")[0] == "  1001|line 1001"
    assert (tail["last_line"], tail["more"], tail["next_offset"]) == (1100, False, None)


def test_read_file_without_trailing_newline_and_empty_file(ws: Path) -> None:
    (ws / "a.txt").write_text("x\ny")
    assert ok(call("read_file", path="a.txt"))["content"] == "     1|x\n     2|y"
    (ws / "empty.txt").write_text("")
    empty = ok(call("read_file", path="empty.txt"))
    assert (empty["content"], empty["total_lines"], empty["more"], empty["full_file_seen"]) == ("", 0, False, True)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"path": "f.txt", "offset": 0}, "offset"),
        ({"path": "f.txt", "limit": 0}, "limit"),
        ({"path": "f.txt", "limit": 5000}, "limit"),
        ({"path": "f.txt", "offset": "3"}, "offset"),
        ({"path": 7}, "path"),
        ({}, "path"),
        ({"path": ""}, "path"),
        ({"path": "f.txt", "colour": "red"}, "colour"),
        ({"path": "f.txt", "offset": 10}, "offset"),
        ({"path": "missing.txt"}, "path"),
        ({"path": "."}, "path"),
    ],
)
def test_read_bad_input_names_the_field(ws: Path, args: dict[str, Any], field: str) -> None:
    (ws / "f.txt").write_text("a\nb\n")
    result = call("read_file", **args)
    assert f"'{field}'" in result["error"], result


def test_binary_files_are_described_not_shown(ws: Path) -> None:
    (ws / "blob.bin").write_bytes(b"abc\x00def" * 100)
    result = ok(call("read_file", path="blob.bin"))
    assert result["binary"] is True and "content" not in result
    assert "NUL" in result["description"] and result["size_bytes"] == 700
    (ws / "latin.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    assert "not valid UTF-8" in ok(call("read_file", path="latin.txt"))["description"]


def _png(width: int, height: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + chunk + struct.pack(">I", zlib.crc32(chunk))


def test_images_are_recognised(ws: Path) -> None:
    (ws / "pic.png").write_bytes(_png(640, 480))
    result = ok(call("read_file", path="pic.png"))
    assert result["image"] is True and result["format"] == "png"
    assert (result["width"], result["height"]) == (640, 480)
    assert "vision_analyze" in result["description"]


def test_huge_lines_are_cut_with_a_marker(ws: Path) -> None:
    (ws / "min.js").write_text("short\n" + "y" * 10_000 + "\nend\n")
    result = ok(call("read_file", path="min.js"))
    second = result["content"].split("\n")[1]
    assert second.startswith("     2|" + "y" * MAX_LINE_CHARS)
    assert "[line cut: 8,000 more characters]" in second
    assert result["cut_lines"] == [2] and result["full_file_seen"] is False


def test_pages_end_early_instead_of_being_cut_by_the_result_budget(ws: Path) -> None:
    (ws / "wide.txt").write_text("".join(f"{i:04d}" + "w" * 1500 + "\n" for i in range(1, 501)))
    raw = registry.dispatch("read_file", {"path": "wide.txt"}, task_id="t1")
    assert len(raw) <= RESULT_BUDGET and "truncated" not in raw
    first = json.loads(raw)
    assert first["more"] is True and first["next_offset"] < 500 and first["notes"]
    nxt, seen = first["next_offset"], False
    while nxt:
        page = ok(call("read_file", path="wide.txt", offset=nxt))
        nxt, seen = page["next_offset"], page["full_file_seen"]
    assert seen is True


def test_secrets_are_redacted_and_flagged(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", "s3cr3t-value-123456")
    (ws / "settings.py").write_text(
        "DEBUG = True\nKEY = 's3cr3t-value-123456'\nOPENAI = 'sk-abcdefghijklmnopqrstuvwx'\nNAME = 'x'\n"
    )
    result = ok(call("read_file", path="settings.py"))
    assert result["redacted"] is True and result["redacted_lines"] == [2, 3]
    assert "s3cr3t" not in result["content"] and "sk-abc" not in result["content"]
    assert result["content"].count(MASK) == 2
    assert result["full_file_seen"] is False
    plain = ok(call("read_file", path="settings.py", offset=4))
    assert plain["redacted"] is False


def test_crlf_and_bom_files_read_as_plain_lines(ws: Path) -> None:
    (ws / "win.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    assert ok(call("read_file", path="win.txt"))["content"] == "     1|one\n     2|two"


# -- write_file -----------------------------------------------------------------------------------------------
def test_write_creates_parents_and_reports(ws: Path) -> None:
    result = ok(call("write_file", path="deep/er/new.txt", content="héllo\nworld\n"))
    assert result == {"path": "deep/er/new.txt", "bytes_written": 13, "created": True, "lines": 2}
    assert (ws / "deep/er/new.txt").read_text(encoding="utf-8") == "héllo\nworld\n"
    again = ok(call("write_file", path="deep/er/new.txt", content="x"))
    assert again["created"] is False and again["lines"] == 1


def test_write_keeps_the_mode_of_an_existing_file_and_uses_umask_for_new_ones(ws: Path) -> None:
    f = ws / "script.sh"
    f.write_text("echo hi\n")
    f.chmod(0o750)
    ok(call("read_file", path="script.sh"))
    ok(call("write_file", path="script.sh", content="echo bye\n"))
    assert stat.S_IMODE(f.stat().st_mode) == 0o750
    ok(call("write_file", path="fresh.txt", content="x"))
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE((ws / "fresh.txt").stat().st_mode) == 0o666 & ~umask


def test_write_through_a_symlink_inside_the_roots_writes_the_target(ws: Path) -> None:
    target = ws / "real.txt"
    target.write_text("old\n")
    (ws / "link.txt").symlink_to(target)
    ok(call("read_file", path="link.txt"))
    ok(call("write_file", path="link.txt", content="new\n"))
    assert (ws / "link.txt").is_symlink() and target.read_text() == "new\n"


def test_a_crash_during_replace_leaves_the_old_file_intact(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = ws / "data.txt"
    f.write_text("precious\n")
    ok(call("read_file", path="data.txt"))

    def crash(src: Any, dst: Any, **kw: Any) -> None:
        raise OSError(5, "Input/output error")

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", crash)
        result = call("write_file", path="data.txt", content="half-written\n")
    assert "cannot write" in result["error"]
    assert f.read_text() == "precious\n"
    assert sorted(p.name for p in ws.iterdir()) == ["data.txt"], "the temporary file must be cleaned up"
    # the failed write created no baseline for the new content: the old baseline still holds
    ok(call("write_file", path="data.txt", content="done\n"))
    assert f.read_text() == "done\n"


def test_a_crash_during_patch_leaves_the_old_file_intact(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hermes.tools.file.patch  # noqa: F401

    f = ws / "data.txt"
    f.write_text("alpha\nbeta\n")

    def crash(src: Any, dst: Any, **kw: Any) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", crash)
        result = call("patch", path="data.txt", old_string="beta", new_string="gamma")
    assert "No space left" in result["error"]
    assert f.read_text() == "alpha\nbeta\n"
    assert [p.name for p in ws.iterdir()] == ["data.txt"]


def test_write_bad_input(ws: Path) -> None:
    assert "'content'" in call("write_file", path="x.txt")["error"]
    assert "'content'" in call("write_file", path="x.txt", content=5)["error"]
    assert "'path'" in call("write_file", content="x")["error"]
    (ws / "adir").mkdir()
    assert "directory" in call("write_file", path="adir", content="x")["error"]
    assert "'content'" in call("write_file", path="y.txt", content="bad \ud800 surrogate")["error"]
    assert not (ws / "x.txt").exists() and not (ws / "y.txt").exists()
