"""Opening a hermes SQLite file from several processes at once (:func:`hermes.store.db.open_sqlite`)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import hermes

SRC = str(Path(hermes.__file__).resolve().parents[1])
#: open the file named by argv[1] once the clock passes argv[2] (every process starts at the same moment)
OPENER = f"""
import sys, time
sys.path.insert(0, {SRC!r})
from pathlib import Path
from hermes.store.db import connect
start = float(sys.argv[2])
while time.time() < start:
    pass
try:
    connect(Path(sys.argv[1])).close()
    print("ok")
except Exception as exc:
    print(exc)
"""


def test_processes_opening_a_new_database_at_once_all_succeed(tmp_path: Path) -> None:
    """Turning a new file to WAL takes a lock without SQLite's busy handler: the processes that lost the race
    used to fail at once with "database is locked" (a kanban dispatcher's first two workers on a new home)."""
    for trial in range(6):
        path = tmp_path / f"state-{trial}.db"
        start = time.time() + 1.0
        openers = [subprocess.Popen([sys.executable, "-c", OPENER, str(path), repr(start)], stdout=subprocess.PIPE,
                                    text=True) for _ in range(4)]
        answers = [opener.communicate(timeout=120)[0].strip() for opener in openers]
        assert answers == ["ok"] * 4, answers
