"""Thousands of malformed argument payloads for the four file tools.

For every payload: dispatch returns a JSON object, never raises, and a failure is a deliberate
``{"error": ...}`` (not the registry's catch-all "<tool> failed: <Exception>" for an unexpected crash).
An audit hook records every write-like operation (opening for writing, creating, renaming, removing,
chmod…) made while a tool runs: all of them must stay inside the test's temporary directory.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hermes.tools.file.patch
import hermes.tools.file.read
import hermes.tools.file.search
import hermes.tools.file.write  # noqa: F401  (registers the tools)
from hermes.tools.file.baseline import reset_trackers
from hermes.tools.registry import registry

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {
    "os.mkdir": (0,),
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.truncate": (0,),
    "os.utime": (0,),
    "os.rename": (0, 1),
    "os.link": (0, 1),
    "os.symlink": (1,),
    "shutil.rmtree": (0,),
    "shutil.copyfile": (1,),
}


class WriteAudit:
    """Collects the targets of write-like operations while ``active`` is set."""

    def __init__(self) -> None:
        self.active = threading.Event()
        self.targets: list[str] = []

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active.is_set():
            return
        if event == "open":
            path, mode, flags = [*args, None, None, None][:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if writing:
                self._note(path)
        elif event in _PATH_EVENTS:
            for index in _PATH_EVENTS[event]:
                if index < len(args):
                    self._note(args[index])

    def _note(self, path: Any) -> None:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if isinstance(path, str | os.PathLike):
            self.targets.append(os.path.realpath(os.path.join(os.getcwd(), os.fspath(path))))


_AUDIT = WriteAudit()
sys.addaudithook(_AUDIT.hook)


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermes_home: Path) -> Iterator[Path]:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "f.txt").write_text("alpha\nbeta\n    gamma\n")
    (work / "bin.dat").write_bytes(b"\x00\x01")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside\n")
    (work / "link").symlink_to(outside / "secret.txt")
    (work / "dirlink").symlink_to(outside, target_is_directory=True)
    home = tmp_path / "home"
    home.mkdir()
    systmp = tmp_path / "systmp"
    systmp.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(tempfile, "tempdir", str(systmp))
    (hermes_home / "config.yaml").write_text("file:\n  allowed_roots: ['.']\n")
    monkeypatch.chdir(work)
    reset_trackers()
    _AUDIT.targets.clear()
    yield tmp_path
    assert (outside / "secret.txt").read_text() == "outside\n"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    root = str(tmp_path.resolve())
    escaped = [t for t in _AUDIT.targets if t != os.devnull and not t.startswith(root + os.sep)]
    assert not escaped, escaped


_CRASH = re.compile(r"^(read_file|write_file|patch|search_files) failed: ")

NASTY_PATHS = [
    "f.txt", "new.txt", "sub/n.txt", "sub", ".", "..", "../outside/secret.txt", "link", "dirlink/x.txt",
    "bin.dat", "/etc/passwd", "/etc/hosts", "/", "~", "~/.ssh/id_rsa", "~/x", "/proc/self/status",
    "/dev/null", "a\x00b", "", " ", "f.txt/child", "x" * 300, "y/" * 3000, "\ud800", "sub/../../outside/new.txt",
    "/proc/kmsg", "/sys", "-rf", "--files",
]  # fmt: skip
PATHS = st.one_of(st.sampled_from(NASTY_PATHS), st.text(max_size=40))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
TEXT = st.one_of(st.text(max_size=120), st.sampled_from(["alpha", "beta\n", "    gamma", "\n", "a" * 5000]))
ANY_INT = st.one_of(st.integers(-5, 3000), st.integers(), st.floats(), JSON)

FIELDS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "read_file": {"path": PATHS, "offset": ANY_INT, "limit": ANY_INT},
    "write_file": {"path": PATHS, "content": st.one_of(TEXT, JSON)},
    "patch": {"path": PATHS, "old_string": st.one_of(TEXT, JSON), "new_string": st.one_of(TEXT, JSON),
              "replace_all": st.one_of(st.booleans(), JSON)},
    "search_files": {"pattern": st.one_of(TEXT, st.sampled_from(["(", "[a-", "a{2,1}", "*", "(?=x)", "\\"])),
                     "path": PATHS.filter(lambda p: p not in ("/", "~")), "target": st.one_of(
                         st.sampled_from(["content", "files"]), JSON),
                     "file_glob": st.one_of(TEXT, JSON), "max_results": ANY_INT, "context": ANY_INT,
                     "case_insensitive": st.one_of(st.booleans(), JSON), "literal": st.one_of(st.booleans(), JSON)},
}  # fmt: skip


SOME_TEXT = TEXT.filter(bool)
SEARCH_PATHS = PATHS.filter(lambda p: p not in ("/", "~"))
#: right types and ranges, odd values: these get past the schema and exercise the handlers
WELL_TYPED: dict[str, tuple[dict[str, st.SearchStrategy[Any]], dict[str, st.SearchStrategy[Any]]]] = {
    "read_file": ({"path": PATHS}, {"offset": st.integers(1, 10**9), "limit": st.integers(1, 2000)}),
    "write_file": ({"path": PATHS, "content": TEXT}, {}),
    "patch": ({"path": PATHS, "old_string": SOME_TEXT, "new_string": TEXT}, {"replace_all": st.booleans()}),
    "search_files": (
        {"pattern": st.one_of(SOME_TEXT, st.sampled_from(["(", "[a-", "a{2,1}", "*", "(?=x)", "\\", "-e"]))},
        {"path": SEARCH_PATHS, "target": st.sampled_from(["content", "files"]), "file_glob": SOME_TEXT,
         "max_results": st.integers(1, 1000), "context": st.integers(0, 10), "case_insensitive": st.booleans(),
         "literal": st.booleans()},
    ),
}  # fmt: skip


def payloads(tool: str) -> st.SearchStrategy[Any]:
    required, optional = WELL_TYPED[tool]
    typed = st.fixed_dictionaries(required, optional=optional)
    shaped = st.fixed_dictionaries({}, optional=FIELDS[tool])
    extra = st.builds(lambda a, b: {**a, **b}, typed, st.dictionaries(st.text(max_size=8), JSON, max_size=2))
    raw = st.one_of(JSON, st.text(max_size=40), shaped.map(json.dumps))
    return st.one_of(typed, typed, typed, shaped, extra, raw)


def check(tool: str, payload: Any) -> None:
    _AUDIT.active.set()
    try:
        text = registry.dispatch(tool, payload, task_id="fuzz")
    finally:
        _AUDIT.active.clear()
    result = json.loads(text)
    assert isinstance(result, dict)
    if "error" in result:
        assert isinstance(result["error"], str) and not _CRASH.match(result["error"]), result["error"]


#: the paths random payloads reach only now and then (a patch that applies, a file really read, a search that
#: finds, a binary file, a blocking one), walked first by every fuzz test so each run reaches them
WALKS: dict[str, list[tuple[str, Any]]] = {
    "read_file": [("read_file", {"path": "f.txt"}), ("read_file", {"path": "f.txt", "offset": 2, "limit": 1}),
                  ("read_file", {"path": "f.txt", "offset": 99}), ("read_file", {"path": "bin.dat"}),
                  ("read_file", {"path": "sub"}), ("read_file", {"path": "link"}), ("read_file", {"path": "/dev/null"}),
                  ("read_file", {"path": "~/.ssh/id_rsa"}), ("read_file", {"path": "f.txt", "offset": None}),
                  ("read_file", {"path": "f.txt/child"}), ("read_file", {"path": "/proc/kmsg"}),
                  ("read_file", True), ("read_file", 7), ("read_file", 1.5), ("read_file", "text")],
    "write_file": [("write_file", {"path": "sub/new.txt", "content": "x\n"}), ("read_file", {"path": "sub/new.txt"}),
                   ("write_file", {"path": "sub/new.txt", "content": "y\n"}),
                   ("write_file", {"path": "f.txt", "content": "alpha\n"}),
                   ("read_file", {"path": "bin.dat"}), ("write_file", {"path": "bin.dat", "content": "x"}),
                   ("write_file", {"path": "f.txt/child", "content": "x"})],
    "patch": [("patch", {"path": "f.txt", "old_string": "alpha", "new_string": "omega"}),
              ("read_file", {"path": "f.txt"}),
              ("patch", {"path": "f.txt", "old_string": "a", "new_string": "b"}),
              ("patch", {"path": "f.txt", "old_string": "a", "new_string": "b", "replace_all": True}),
              ("patch", {"path": "f.txt", "old_string": "gamma  ", "new_string": "delta"}),
              ("patch", {"path": "f.txt", "old_string": "  bet\n", "new_string": "x"}),
              ("patch", {"path": "f.txt", "old_string": "omegb\nbetb", "new_string": "one\ntwo"}),
              ("patch", {"path": "bin.dat", "old_string": "a", "new_string": "b"}),
              ("patch", {"path": "/dev/null", "old_string": "a", "new_string": "b"})],
    "search_files": [("search_files", {"pattern": "alpha"}),
                     ("search_files", {"pattern": "a", "context": 1, "max_results": 1}),
                     ("search_files", {"pattern": "*.txt", "target": "files"}),
                     ("search_files", {"pattern": "ALPHA", "case_insensitive": True, "literal": True,
                                       "file_glob": "*.txt"}),
                     ("search_files", {"pattern": "(", "literal": True, "path": "sub"}),
                     ("search_files", {"pattern": "g.mma", "path": "f.txt", "context": 2}),
                     # look-arounds: the Python engine (a glob that skips files, one ignoring case, a file as root)
                     ("search_files", {"pattern": "(?=a)a", "file_glob": "*.txt"}),
                     ("search_files", {"pattern": "(?=a)a", "file_glob": "*.TXT", "case_insensitive": True}),
                     ("search_files", {"pattern": "(?=g)g", "path": "f.txt"})],
}
FUZZ = settings(
    max_examples=int(os.environ.get("HERMES_FUZZ_EXAMPLES", "600")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("tool", sorted(FIELDS))
def test_malformed_payloads_never_escape_dispatch(sandbox: Path, tool: str) -> None:
    for walked, payload in WALKS[tool]:
        check(walked, payload)

    @FUZZ
    @given(payload=payloads(tool))
    def run(payload: Any) -> None:
        check(tool, payload)

    run()


MINIMAL = {
    "read_file": {},
    "write_file": {"content": "x"},
    "patch": {"old_string": "alpha", "new_string": "omega"},
    "search_files": {"pattern": "a"},
}


@pytest.mark.parametrize("tool", sorted(FIELDS))
def test_nasty_paths(sandbox: Path, tool: str) -> None:
    for path in NASTY_PATHS:
        if tool == "search_files" and path in ("/", "~"):
            continue  # valid, but a whole-disk search is not a unit test
        check(tool, {**MINIMAL[tool], "path": path})


def test_the_audit_sees_the_tools_writes(sandbox: Path) -> None:
    check("write_file", {"path": "sub/audited.txt", "content": "x"})
    written = sandbox.resolve() / "work" / "sub" / "audited.txt"
    assert str(written) in _AUDIT.targets, _AUDIT.targets
    assert any(t.startswith(str(written.parent / ".audited.txt.")) for t in _AUDIT.targets)
