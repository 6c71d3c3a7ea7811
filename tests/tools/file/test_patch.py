"""patch: exact first, whitespace-tolerant strategies, ambiguity refusal, indentation, diff."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hermes.tools.file.patch  # noqa: F401  (registers the tool)
from hermes.errors import ToolError
from hermes.redact import MASK
from hermes.tools.file.difftext import MAX_DIFF_CHARS, unified_diff
from hermes.tools.file.matching import plan_edit, reindent
from hermes.tools.registry import registry


def call(tool: str, task: str = "t1", **args: Any) -> dict[str, Any]:
    return json.loads(registry.dispatch(tool, args, task_id=task))


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in result, result
    return result


def patch(f: Path, old: str, new: str, **extra: Any) -> dict[str, Any]:
    return call("patch", path=f.name, old_string=old, new_string=new, **extra)


PY = """\
class Greeter:
    def greet(self, name):
        if name:
            return "hello " + name
        return "hello"

    def part(self):
        return "bye"
"""


def test_exact_match_with_diff(ws: Path) -> None:
    f = ws / "g.py"
    f.write_text(PY)
    result = ok(patch(f, 'return "bye"', 'return "goodbye"'))
    assert result["strategy"] == "exact" and result["replacements"] == 1 and result["lines"] == [8]
    assert f.read_text() == PY.replace('"bye"', '"goodbye"')
    diff = result["diff"].split("\n")
    assert diff[:3] == ["--- a/g.py", "+++ b/g.py", "@@ -5,4 +5,4 @@"]
    assert '-        return "bye"' in diff and '+        return "goodbye"' in diff


def test_ambiguous_exact_match_is_refused_and_replace_all_changes_every_one(ws: Path) -> None:
    f = ws / "g.py"
    f.write_text(PY)
    result = patch(f, "return", "yield")
    assert "matches 3 places" in result["error"] and "lines 4, 5, 8" in result["error"]
    assert "replace_all" in result["error"] and f.read_text() == PY
    done = ok(patch(f, "return", "yield", replace_all=True))
    assert done["replacements"] == 3 and done["lines"] == [4, 5, 8]
    assert "return" not in f.read_text()


def test_trailing_whitespace_is_ignored(ws: Path) -> None:
    f = ws / "t.txt"
    f.write_text("alpha   \nbeta\t\ngamma\n")
    result = ok(patch(f, "alpha\nbeta\n", "ALPHA\nBETA\n"))
    assert result["strategy"] == "trailing_whitespace"
    assert f.read_text() == "ALPHA\nBETA\ngamma\n"


def test_indentation_insensitive_match_keeps_the_file_indentation(ws: Path) -> None:
    f = ws / "g.py"
    f.write_text(PY)
    old = 'if name:\n    return "hello " + name\nreturn "hello"\n'
    new = 'if name:\n    if name == "x":\n        return "hi x"\n    return "hello " + name\nreturn "hello"\n'
    result = ok(patch(f, old, new))
    assert result["strategy"] == "indentation" and "re-indented" in result["note"]
    assert f.read_text() == PY.replace(
        '            return "hello " + name\n',
        '            if name == "x":\n                return "hi x"\n            return "hello " + name\n',
    )


def test_tab_indented_files_get_tabs(ws: Path) -> None:
    f = ws / "m.go"
    f.write_text("func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n")
    ok(patch(f, "    if x {\n        return 1\n    }", "    if x {\n        log()\n        return 2\n    }"))
    assert f.read_text() == "func f() {\n\tif x {\n\t\tlog()\n\t\treturn 2\n\t}\n}\n"


def test_normalised_whitespace(ws: Path) -> None:
    f = ws / "c.py"
    f.write_text("x  =   compute( a,  b )\ny = 2\n")
    result = ok(patch(f, "x = compute( a, b )", "x = compute(a, b, c)"))
    assert result["strategy"] == "whitespace"
    assert f.read_text() == "x = compute(a, b, c)\ny = 2\n"


def test_ambiguous_fuzzy_match_is_refused(ws: Path) -> None:
    f = ws / "g.py"
    f.write_text("def a():\n    x = 1\n    y = 2\n\ndef b():\n        x = 1\n        y = 2\n")
    result = patch(f, "x = 1\ny = 2", "x = 3\ny = 4")
    assert "matches 2 places" in result["error"] and "ignoring indentation" in result["error"]
    assert "lines 2, 6" in result["error"]
    done = ok(patch(f, "x = 1\ny = 2", "x = 3\ny = 4", replace_all=True))
    assert done["replacements"] == 2
    assert f.read_text() == "def a():\n    x = 3\n    y = 4\n\ndef b():\n        x = 3\n        y = 4\n"


def test_fuzzy_deletion_removes_whole_lines(ws: Path) -> None:
    f = ws / "d.txt"
    f.write_text("keep\n    drop me\n    drop too\nkeep too\n")
    ok(patch(f, "drop me\ndrop too\n", ""))
    assert f.read_text() == "keep\nkeep too\n"


def test_not_found_explains_and_hints(ws: Path) -> None:
    f = ws / "g.py"
    f.write_text(PY)
    result = patch(f, 'def greet(self, name):\n    if name:\n        return "hi"', "x")
    assert "not found" in result["error"] and "ignoring indentation" in result["error"]
    assert "line 2 matches old_string's first line" in result["error"] and "file line 4" in result["error"]
    masked = patch(f, f"token = {MASK}", "token = 'x'")
    assert MASK in masked["error"] and "away from the secret" in masked["error"]
    numbered = patch(f, "     7|    def part(self):", "x")
    assert "line-number prefixes" in numbered["error"]
    assert f.read_text() == PY


def test_crlf_and_bom_are_preserved(ws: Path) -> None:
    f = ws / "w.txt"
    f.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    ok(patch(f, "two\nthree", "2\n3"))
    assert f.read_bytes() == b"\xef\xbb\xbfone\r\n2\r\n3\r\n"


def test_patch_keeps_the_mode(ws: Path) -> None:
    f = ws / "run.sh"
    f.write_text("echo a\n")
    f.chmod(0o755)
    ok(patch(f, "echo a", "echo b"))
    assert stat.S_IMODE(f.stat().st_mode) == 0o755


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"path": "g.py", "old_string": "", "new_string": "x"}, "'old_string'"),
        ({"path": "g.py", "new_string": "x"}, "'old_string'"),
        ({"path": "g.py", "old_string": "a"}, "'new_string'"),
        ({"path": "g.py", "old_string": "a", "new_string": "b", "replace_all": "yes"}, "'replace_all'"),
        ({"path": "g.py", "old_string": "class", "new_string": "class"}, "identical"),
        ({"path": "nope.py", "old_string": "a", "new_string": "b"}, "write_file"),
        ({"path": "blob.bin", "old_string": "a", "new_string": "b"}, "binary"),
    ],
)
def test_patch_bad_input(ws: Path, args: dict[str, Any], words: str) -> None:
    (ws / "g.py").write_text(PY)
    (ws / "blob.bin").write_bytes(b"a\x00b")
    assert words in call("patch", **args)["error"]
    assert (ws / "g.py").read_text() == PY and not (ws / "nope.py").exists()


def test_diff_is_capped(ws: Path) -> None:
    f = ws / "big.txt"
    f.write_text("".join(f"value {i}\n" for i in range(3000)))
    result = ok(patch(f, "value", "VALUE", replace_all=True))
    assert result["replacements"] == 3000 and result["diff_truncated"] is True
    assert len(result["diff"]) <= MAX_DIFF_CHARS + 100 and "diff truncated" in result["diff"]


# -- the matching module directly ----------------------------------------------------------------------------
def test_unified_diff_line_numbers_far_into_a_file() -> None:
    old = "".join(f"l{i}\n" for i in range(1, 10_001))
    new = old.replace("l5000\n", "l5000 changed\n")
    diff, truncated = unified_diff(old, new, "f")
    assert not truncated
    assert diff.split("\n")[2] == "@@ -4997,7 +4997,7 @@"


def test_reindent_relative_levels() -> None:
    assert reindent(["a", "  b", "", "c"], "", "    ") == ["    a", "      b", "", "    c"]
    assert reindent(["        a", "    b"], "        ", "  ") == ["  a", "b"]
    assert reindent(["    a", "        b"], "    ", "\t") == ["\ta", "\t\tb"]


def test_plan_edit_prefers_exact_over_fuzzy() -> None:
    text = "  x = 1\ny = 2\n"
    plan = plan_edit(text, "x = 1\ny = 2\n", "z\n", False, "f")
    assert plan.strategy == "exact" and plan.apply(text) == "  z\n"
    fuzzy = plan_edit(text, "x = 1\n  y = 2\n", "z\n", False, "f")
    assert fuzzy.strategy == "indentation" and fuzzy.apply(text) == "  z\n"


def test_plan_edit_exact_ambiguity_includes_overlaps() -> None:
    with pytest.raises(ToolError, match="matches 2 places"):
        plan_edit("aaa", "aa", "b", False, "f")


@settings(max_examples=300, deadline=None, database=None)
@given(
    lines=st.lists(st.sampled_from(["a", "b", "", "  c", "d d"]), max_size=30),
    trailing_newline=st.booleans(),
    data=st.data(),
)
def test_windowed_diff_equals_the_whole_file_diff(
    lines: list[str], trailing_newline: bool, data: st.DataObject
) -> None:
    old = "\n".join(lines) + ("\n" if trailing_newline else "")
    start = data.draw(st.integers(0, len(old)))
    end = data.draw(st.integers(start, len(old)))
    replacement = data.draw(st.text(alphabet="ab \n", max_size=8))
    new = old[:start] + replacement + old[end:]
    windowed, cut = unified_diff(old, new, "f", start, len(old) - end)
    whole, _ = unified_diff(old, new, "f")
    # both are valid diffs, though they may align equal lines differently (which of two "a" lines is
    # kept): they remove and add the same lines
    assert not cut
    assert _changes(windowed) == _changes(whole)


def _changes(diff: str) -> tuple[list[str], list[str]]:
    body = [ln for ln in diff.splitlines() if not ln.startswith(("---", "+++", "@@"))]
    return sorted(ln for ln in body if ln.startswith("-")), sorted(ln for ln in body if ln.startswith("+"))
