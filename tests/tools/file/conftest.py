"""Fixtures of the file tool tests."""

from __future__ import annotations

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
