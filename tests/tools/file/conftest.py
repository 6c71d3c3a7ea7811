"""Fixtures of the file tool tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hermes.tools.file.baseline import reset_trackers


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermes_home: Path) -> Path:
    """A fresh working folder (the current directory) with its own HOME beside it; no file baselines yet."""
    work = tmp_path / "work"
    work.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    reset_trackers()
    return work


ENGINES = ["python", pytest.param("rg", marks=pytest.mark.skipif(shutil.which("rg") is None,
                                                                 reason="ripgrep is not installed"))]


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each search engine in turn: the pure-Python walker, then ripgrep (when installed)."""
    name: str = request.param
    if name == "python":
        monkeypatch.setenv("HERMES_NO_RG", "1")
    else:
        monkeypatch.delenv("HERMES_NO_RG", raising=False)
    return name
