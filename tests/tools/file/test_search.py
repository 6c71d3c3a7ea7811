"""search_files with ripgrep (when installed) and with the pure-Python path: same rules, same shape."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.file.search  # noqa: F401  (registers the tool)
from hermes.tools.file.search import ripgrep
from hermes.tools.file.walk import IgnoreFile
from hermes.tools.registry import registry


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermes_home: Path) -> Path:
    work = tmp_path / "work"
    files: dict[str, str | bytes] = {
        "src/app.py": "def main():\n    print('needle')\n    return 0\n",
        "src/util.py": "NEEDLE = 1\n",
        "docs/readme.md": "a needle in docs\n",
        ".hidden/conf.txt": "needle hidden\n",
        "node_modules/pkg/index.js": "needle\n",
        ".git/config": "needle\n",
        "myenv/pyvenv.cfg": "home = /usr\n",
        "myenv/lib/site.py": "needle\n",
        ".gitignore": "build/\n*.log\n!keep.log\n",
        "build/out.txt": "needle\n",
        "debug.log": "needle\n",
        "keep.log": "needle kept\n",
        "bin.dat": b"needle\x00\x01\x02",
        "latin.txt": b"caf\xe9 needle\n",
    }
    for rel, content in files.items():
        path = work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    monkeypatch.chdir(work)
    return work


def call(**args: Any) -> dict[str, Any]:
    result = json.loads(registry.dispatch("search_files", args, task_id="t1"))
    assert "error" not in result, result
    return result


def hits(result: dict[str, Any]) -> list[tuple[str, int]]:
    return [(m["file"], m["line"]) for m in result["matches"]]


def test_engine_selection(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert (ripgrep() is None) == (engine == "python")
    monkeypatch.setenv("HERMES_NO_RG", "0")
    assert ripgrep() == shutil.which("rg")


def test_content_search_follows_the_skip_rules(tree: Path, engine: str) -> None:
    result = call(pattern="needle")
    assert result["engine"] == engine and result["target"] == "content"
    assert hits(result) == [
        (".hidden/conf.txt", 1),
        ("docs/readme.md", 1),
        ("keep.log", 1),
        ("latin.txt", 1),
        ("src/app.py", 2),
    ]
    assert result["count"] == 5 and result["truncated"] is False
    assert result["matches"][3]["text"] == "caf\ufffd needle"


def test_case_glob_context_and_literal(tree: Path, engine: str) -> None:
    assert hits(call(pattern="needle", case_insensitive=True, file_glob="*.py")) == [
        ("src/app.py", 2),
        ("src/util.py", 1),
    ]
    ctx = call(pattern="needle", path="src", context=1)["matches"][0]
    assert ctx["before"] == [{"line": 1, "text": "def main():"}]
    assert ctx["after"] == [{"line": 3, "text": "    return 0"}]
    assert hits(call(pattern="print('needle')", literal=True)) == [("src/app.py", 2)]
    assert hits(call(pattern=r"print\('ne+dle'\)")) == [("src/app.py", 2)]


def test_results_are_capped(tree: Path, engine: str) -> None:
    result = call(pattern="needle", max_results=2)
    assert result["count"] == 2 and result["truncated"] is True and "capped" in result["note"]
    assert hits(result) == [(".hidden/conf.txt", 1), ("docs/readme.md", 1)]


def test_a_single_file_can_be_searched(tree: Path, engine: str) -> None:
    assert hits(call(pattern="return", path="src/app.py")) == [("src/app.py", 3)]


def test_regex_python_only_features_fall_back_to_python(tree: Path, engine: str) -> None:
    result = call(pattern="needle(?= in)")
    assert hits(result) == [("docs/readme.md", 1)]
    assert result["engine"] == "python"


def test_file_name_search(tree: Path, engine: str) -> None:
    result = call(pattern="*.py", target="files")
    assert result["engine"] == engine and result["files"] == ["src/app.py", "src/util.py"]
    assert call(pattern="READ", target="files", case_insensitive=True)["files"] == ["docs/readme.md"]
    capped = call(pattern="*", target="files", max_results=3)
    assert capped["count"] == 3 and capped["truncated"] is True
    assert call(pattern="*.log", target="files")["files"] == ["keep.log"]


def test_search_bad_input(tree: Path, engine: str) -> None:
    def err(**args: Any) -> str:
        return str(json.loads(registry.dispatch("search_files", args, task_id="t1"))["error"])

    assert "'pattern'" in err(pattern="(unclosed")
    assert "'pattern'" in err()
    assert "'path'" in err(pattern="x", path="nowhere")
    assert "'target'" in err(pattern="x", target="dirs")
    assert "'max_results'" in err(pattern="x", max_results=0)
    assert "'context'" in err(pattern="x", context=11)


def test_ignore_file_rules() -> None:
    rules = IgnoreFile.parse(Path("/r"), "# c\n*.pyc\n/top.txt\ndocs/**/gen/\n!keep.pyc\nbuild/\n")
    assert rules.verdict("a/b/x.pyc", False) is True
    assert rules.verdict("a/keep.pyc", False) is False
    assert rules.verdict("top.txt", False) is True
    assert rules.verdict("sub/top.txt", False) is None
    assert rules.verdict("docs/a/b/gen", True) is True
    assert rules.verdict("docs/gen", True) is True
    assert rules.verdict("build", False) is None
    assert rules.verdict("x/build", True) is True
