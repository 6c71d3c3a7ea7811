"""The full-file baseline rule of requirement T-FILE.

Per task, a file has a *baseline* — the sha256 (plus size and mtime) of a version the task knows in
full — after any of:

(a) a full, unredacted read: every line of the *same version* was shown verbatim by read_file (pages
    read at different versions do not add up; a redacted or cut line does not count as seen);
(b) a successful ``write_file`` (the baseline is the bytes written);
(c) the task's own ``patch`` to a file whose current bytes equal its baseline (the baseline moves to
    the patched bytes). A patch to a file the task has not fully read leaves it without a baseline.

Re-reading part of the file keeps the baseline while the bytes are unchanged. ``write_file`` may
overwrite an existing file only while the file's current bytes equal the baseline; otherwise it fails
with a message saying why (never read, only partly read, only a redacted or cut view seen, patched
without a full read, changed by another writer — the terminal and execute_code included — or binary)
and exactly which read_file calls fix it. Nothing but these tools ever creates a baseline, so writes
made through the terminal or execute_code never do. Creating a new file needs no baseline.

State lives in the session's ``state["file"]`` when a session is present, else in a module-level table
keyed by ``task_id``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from hermes.tools.context import session_of
from hermes.tools.file import MAX_LIMIT, PAGE_LINES

_MAX_VERSIONS = 4
_MAX_TASKS = 256
_STATE_KEY = "file"


@dataclass(frozen=True)
class Version:
    """One version of a file's bytes."""

    sha256: str
    size: int
    mtime_ns: int


@dataclass
class Coverage:
    """What read_file has shown verbatim of one version (1-based inclusive line intervals)."""

    total: int
    intervals: list[tuple[int, int]] = field(default_factory=list)
    #: "redacted" / "cut": some line of this version was shown only in part
    hidden: set[str] = field(default_factory=set)

    def add(self, first: int, last: int) -> None:
        merged: list[tuple[int, int]] = []
        for a, b in sorted([*self.intervals, (first, last)]):
            if merged and a <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        self.intervals = merged

    def complete(self) -> bool:
        return self.total == 0 or self.intervals == [(1, self.total)]

    def missing(self) -> list[tuple[int, int]]:
        gaps, nxt = [], 1
        for a, b in self.intervals:
            if a > nxt:
                gaps.append((nxt, a - 1))
            nxt = b + 1
        if nxt <= self.total:
            gaps.append((nxt, self.total))
        return gaps


@dataclass
class FileRecord:
    baseline: Version | None = None
    #: sha256 -> coverage, most recent last
    seen: OrderedDict[str, Coverage] = field(default_factory=OrderedDict)
    #: versions this task produced with patch while it had no current baseline
    patched_unread: set[str] = field(default_factory=set)
    #: the last version this task saw through any file tool
    last: Version | None = None


class FileTracker:
    """The baselines of one task."""

    def __init__(self) -> None:
        self._records: dict[str, FileRecord] = {}
        self._lock = threading.Lock()

    def _record(self, key: str) -> FileRecord:
        rec = self._records.get(key)
        if rec is None:
            rec = self._records[key] = FileRecord()
        return rec

    def baseline(self, key: str) -> Version | None:
        with self._lock:
            rec = self._records.get(key)
            return rec.baseline if rec else None

    def has_current(self, key: str, version: Version) -> bool:
        base = self.baseline(key)
        return base is not None and base.sha256 == version.sha256

    def note_read(self, key: str, version: Version, total: int, shown: list[tuple[int, int]], hidden: set[str]) -> bool:
        """Record lines shown verbatim of ``version``; True when the task now has a current baseline."""
        with self._lock:
            rec = self._record(key)
            rec.last = version
            cov = rec.seen.get(version.sha256)
            if cov is None:
                cov = rec.seen[version.sha256] = Coverage(total)
                while len(rec.seen) > _MAX_VERSIONS:
                    rec.seen.popitem(last=False)
            else:
                rec.seen.move_to_end(version.sha256)
            for first, last in shown:
                cov.add(first, last)
            cov.hidden |= hidden
            if cov.complete() and not cov.hidden:
                rec.baseline = version
                rec.patched_unread.discard(version.sha256)
            return rec.baseline is not None and rec.baseline.sha256 == version.sha256

    def note_unreadable(self, key: str, version: Version, why: str) -> None:
        """A binary or image file was looked at: nothing of it was shown as text."""
        with self._lock:
            rec = self._record(key)
            rec.last = version
            cov = rec.seen.setdefault(version.sha256, Coverage(0))
            cov.hidden.add(why)

    def note_write(self, key: str, version: Version) -> None:
        """(b) write_file succeeded: its bytes are the baseline."""
        with self._lock:
            rec = self._record(key)
            rec.baseline = rec.last = version
            rec.patched_unread.clear()

    def note_patch(self, key: str, before: Version, after: Version) -> bool:
        """(c) patch succeeded; True when the task had a current baseline, which now moves along."""
        with self._lock:
            rec = self._record(key)
            rec.last = after
            if rec.baseline is not None and rec.baseline.sha256 == before.sha256:
                rec.baseline = after
                return True
            rec.baseline = None
            rec.patched_unread.add(after.sha256)
            return False

    def overwrite_problem(
        self, key: str, shown_path: str, current: Version, total: int | None, kind: str
    ) -> str | None:
        """Why write_file may not overwrite the file now, or None when the baseline is current."""
        with self._lock:
            rec = self._records.get(key)
            if rec is not None and rec.baseline is not None and rec.baseline.sha256 == current.sha256:
                return None
            return _explain(rec, shown_path, current, total, kind)

    def forget(self, key: str) -> None:
        with self._lock:
            self._records.pop(key, None)


def page_offsets(total: int, limit: int = PAGE_LINES, start: int = 1) -> str:
    """``offsets 1, 501, 1001`` — the read_file calls that cover lines ``start``..``total``."""
    offsets = list(range(start, total + 1, limit)) or [start]
    if len(offsets) > 8:
        return f"offsets {', '.join(map(str, offsets[:3]))}, …, {offsets[-1]} ({len(offsets)} pages)"
    return "offset " + str(offsets[0]) if len(offsets) == 1 else "offsets " + ", ".join(map(str, offsets))


def _read_all(total: int | None) -> str:
    if total is None:
        return "read the whole file with read_file"
    return (
        f"read the whole file with read_file first ({total} lines, pages of {PAGE_LINES}: {page_offsets(total)}; "
        "follow next_offset until more is false)"
    )


def _ranges(gaps: list[tuple[int, int]]) -> str:
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in gaps[:6]]
    return ", ".join(parts) + (", …" if len(gaps) > 6 else "")


def _calls(gaps: list[tuple[int, int]]) -> str:
    calls = []
    for a, b in gaps[:3]:
        n = b - a + 1
        calls.append(f"offset={a}, limit={n}" if n <= MAX_LIMIT else f"offset={a}, then follow next_offset")
    return "; ".join(calls) + ("; …" if len(gaps) > 3 else "")


def _explain(rec: FileRecord | None, path: str, current: Version, total: int | None, kind: str) -> str:
    head = f"write_file refused: {path} already exists and "
    tail = " Or use patch to change only part of it (patch needs no full read)."
    if kind == "large":
        return (
            head + "is too large for read_file to show (over 64 MiB), so write_file will not overwrite it. "
            "If you really mean to replace it, remove or rename it first."
        )
    if kind != "text":
        what = "an image" if kind == "image" else "a binary file"
        return (
            head + f"is {what}, which read_file cannot show in full, so write_file will not overwrite it. "
            "If you really mean to replace it, remove or rename it first."
        )
    if rec is None:
        return (
            head
            + f"this task has never read it. To overwrite it, {_read_all(total)}, then call write_file again."
            + tail
        )
    cov = rec.seen.get(current.sha256)
    if current.sha256 in rec.patched_unread:
        missing = ""
        if cov is not None and cov.intervals and cov.total:
            missing = f" (of its current version, lines {_ranges(cov.missing())} are still unread)"
        return (
            head + "this task changed it with patch without having read the whole file, so its full content is "
            f"unknown{missing}. {_read_all(total).capitalize()}, then call write_file again." + tail
        )
    if cov is not None and "redacted" in cov.hidden:
        return (
            head + "it contains secrets that read_file shows only as ***REDACTED***: this task has seen only a "
            "redacted view, and overwriting it would destroy them. Use patch to change the parts you need, "
            "away from the secrets."
        )
    if cov is not None and "cut" in cov.hidden:
        return (
            head + "some of its lines are so long that read_file showed them cut, so this task has not seen the "
            "whole file and write_file will not overwrite it. Use patch to change the parts you need."
        )
    changed = ""
    known = rec.baseline or rec.last
    if known is not None and known.sha256 != current.sha256:
        changed = (
            "it changed since this task last saw it (another writer, the terminal or execute_code wrote it: "
            f"{known.size:,} -> {current.size:,} bytes). "
        )
    elif any(sha != current.sha256 for sha in rec.seen):
        changed = (
            "it changed since this task read parts of it (another writer, the terminal or execute_code wrote "
            "it); pages read of an earlier version do not count. "
        )
    if cov is not None and cov.total and cov.intervals:
        return (
            head + changed + f"this task has read only part of its current version (not yet lines "
            f"{_ranges(cov.missing())} of {cov.total}). Read the rest with read_file "
            f"({_calls(cov.missing())}) — or {_read_all(total)} — then call write_file again." + tail
        )
    if changed:
        return head + changed + f"Before overwriting it, {_read_all(total)}, then call write_file again." + tail
    return (
        head + f"this task has never read it. To overwrite it, {_read_all(total)}, then call write_file again." + tail
    )


# -- where trackers live ----------------------------------------------------------------------------------
_trackers: OrderedDict[str, FileTracker] = OrderedDict()
_trackers_lock = threading.Lock()


def tracker_for(kw: dict[str, Any]) -> FileTracker:
    """The tracker of the calling task: the session's state when there is one, else by ``task_id``."""
    session = session_of(kw)
    with _trackers_lock:
        if session is not None:
            tracker = session.state.get(_STATE_KEY)
            if not isinstance(tracker, FileTracker):
                tracker = session.state[_STATE_KEY] = FileTracker()
            return tracker
        key = str(kw.get("task_id") or "")
        tracker = _trackers.get(key)
        if tracker is None:
            tracker = _trackers[key] = FileTracker()
            while len(_trackers) > _MAX_TASKS:
                _trackers.popitem(last=False)
        else:
            _trackers.move_to_end(key)
        return tracker


def reset_trackers() -> None:
    """Forget every session-less task's baselines (tests)."""
    with _trackers_lock:
        _trackers.clear()


# -- serialising writers of one path ---------------------------------------------------------------------
_path_locks = [threading.Lock() for _ in range(64)]


def path_lock(key: str) -> threading.Lock:
    """A lock shared by every writer of ``key`` in this process (striped, so never unbounded)."""
    return _path_locks[hash(key) % len(_path_locks)]
