"""Finding test processes from the host, also when they run in the OS sandbox's own PID namespace
(where the pid a shell prints with ``$!`` is not the host's)."""

from __future__ import annotations

import os
import uuid


def alive(pid: int) -> bool:
    """Whether ``pid`` (a host pid) runs and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def new_marker() -> str:
    """An argument no other process has: a ``sleep`` duration, or an extra argument of any program."""
    return f"61.{uuid.uuid4().int % 10**9:09d}"


def marked(marker: str) -> list[int]:
    """Host pids of the live processes that have ``marker`` as one of their arguments."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                args = fh.read().split(b"\0")
        except OSError:
            continue
        if marker.encode() in args and alive(int(entry)):
            found.append(int(entry))
    return found
