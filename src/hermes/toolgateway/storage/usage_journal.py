"""Usage rows written in small batches off the request path, without ever losing one.

With PostgreSQL, inserting the usage row before answering costs every request a database round
trip. :class:`UsageWriter` takes it off the path and still loses nothing:

1. **write ahead** — :meth:`UsageWriter.record` appends the row, as one JSON line, to this process's
   journal segment (``<state dir>/usage-journal/<database>/usage-<owner>-<n>.jsonl``, mode 0600,
   :func:`journal_dir`) with a single ``write(2)`` on an ``O_APPEND`` descriptor before the answer leaves.
   A process killed after it answered (``kill -9``, a crash) has the row in the file: the kernel holds it
   even if the process is gone. (Power loss may still lose what the page cache held: the journal is not
   ``fsync``-ed per row.)
2. **batch** — a background task inserts the rows recorded so far every :data:`FLUSH_INTERVAL` seconds
   (or at :data:`BATCH` rows) in one transaction. A segment takes rows until it holds
   :data:`SEGMENT_ROWS`; the next flush then seals it and opens another, and a sealed segment is deleted
   once all its rows are committed (so a flush costs no file operations, only the insert). While the
   database is down the rows wait (in memory and in their segments) and the insert is retried.
3. **replay** — every row carries a unique id (``usage.rid``) and the insert is ``ON CONFLICT (rid) DO
   NOTHING``, so replaying a segment whose rows were committed before a crash (the current segment's
   usually were) counts nothing twice. At start-up each process replays the segments of writers that are
   gone (a segment's owner holds an ``flock`` on ``usage-<owner>.lock`` while it runs) and deletes them.
   The owner is a random id drawn by each writer at its start (never the process id: a container's
   gateway is pid 1 at every restart, and two containers sharing the directory are both pid 1), so
   whether a segment's writer still runs is the ``flock`` alone: a restarted process replays its dead
   predecessor's segments, and two writers in one process or on one volume keep their own.

A row whose user was deleted in the meantime is dropped by the insert itself (``WHERE EXISTS``), as the
delete's cascade would have dropped it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import re
import secrets
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

log = logging.getLogger("hermes.toolgateway")

BATCH = 256
#: rows a segment takes before the next flush seals it (a crash replays at most about this many rows twice)
SEGMENT_ROWS = 4096
#: seconds between batches: each costs a hand-off to the insert thread and a transaction whatever its size
#: (at 20 ms a gateway relaying 200 requests/s paid about 10 futex calls and 3 WAL writes a request for it)
FLUSH_INTERVAL = 0.1
RETRY_DELAY = 1.0
#: the columns of one usage row, in journal and insert order
COLUMNS = ("rid", "ts", "user_id", "jti", "category", "vendor", "operation", "units", "cost", "status", "latency_ms")
#: a segment's owner and number (earlier versions wrote the pid as the owner)
_SEGMENT = re.compile(r"^usage-([0-9a-f]+)-(\d+)\.jsonl$")
_LOCK = re.compile(r"^usage-([0-9a-f]+)\.lock$")

Insert = Callable[[Sequence[Sequence[Any]]], Awaitable[None]]


def journal_dir(state_dir: Path, database: str) -> Path:
    """This database's journal folder: ``<state dir>/usage-journal/<12 hex of the database's identity>``
    (``database``: the SQLite file's resolved path, or the PostgreSQL URL with its password masked), so that
    gateways sharing a state directory but not a database never replay each other's rows into the wrong one."""
    import hashlib

    return state_dir / "usage-journal" / hashlib.sha256(database.encode("utf-8")).hexdigest()[:12]


def insert_sql() -> str:
    """The idempotent insert of one usage row (``?`` placeholders; the user id is given twice)."""
    cols = ", ".join(COLUMNS)
    marks = ", ".join("?" for _ in COLUMNS)
    return (f"INSERT INTO usage ({cols}) SELECT {marks} WHERE EXISTS (SELECT 1 FROM users WHERE id = ?) "
            "ON CONFLICT (rid) DO NOTHING")


def insert_params(row: Sequence[Any]) -> tuple[Any, ...]:
    return (*row, row[2])


def _read_segment(path: Path) -> list[list[Any]]:
    rows = []
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a line cut short (there is at most one, the last)
            if isinstance(row, list) and len(row) == len(COLUMNS):
                rows.append(row)
    return rows


class UsageWriter:
    """This process's usage journal and its background flusher (``insert`` writes one batch, idempotently)."""

    def __init__(self, directory: Path, insert: Insert, *, batch: int = BATCH,
                 interval: float = FLUSH_INTERVAL, segment_rows: int = SEGMENT_ROWS) -> None:
        self.directory = directory
        self.insert = insert
        self.batch = batch
        self.interval = interval
        self.segment_rows = segment_rows
        self.owner = secrets.token_hex(8)
        self._seq = 0
        self._fd = -1
        self._lock_fd = -1
        self._segment: Path | None = None
        self._sealed: list[Path] = []
        self._pending: list[Sequence[Any]] = []  # rows of the sealed segments and the current one, in order
        self._sealed_rows = 0  # how many of the pending rows are in sealed segments
        self._segment_rows = 0  # rows written to the current segment
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._flushing = asyncio.Lock()
        self.flushed = 0

    # -- start and stop --------------------------------------------------------------------------------
    async def start(self) -> int:
        """Take this process's lock, replay the segments of processes that are gone, start the flusher.

        Returns how many rows were replayed (inserted or found already there)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(self.directory, 0o700)
        lock = self.directory / f"usage-{self.owner}.lock"
        # locked before it has its name: another process's replay never sees it unlocked (and sweeps it)
        hidden = self.directory / f".usage-{self.owner}.lock.new"
        self._lock_fd = os.open(hidden, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.rename(hidden, lock)
            replayed = await self.replay_orphans()
            self._open_segment()
        except BaseException:
            os.close(self._lock_fd)
            self._lock_fd = -1
            hidden.unlink(missing_ok=True)
            lock.unlink(missing_ok=True)
            raise
        self._task = asyncio.get_running_loop().create_task(self._run(), name="usage-writer")
        return replayed

    async def replay_orphans(self) -> int:
        """Insert the rows of every segment whose process is gone, then delete those segments."""
        segments: dict[str, list[Path]] = {}
        for path in sorted(self.directory.iterdir()):
            found = _SEGMENT.match(path.name) or _LOCK.match(path.name)
            if found and found.group(1) != self.owner:  # a lock alone: a writer that died before its first row
                paths = segments.setdefault(found.group(1), [])
                if path.suffix == ".jsonl":
                    paths.append(path)
        replayed = 0
        for owner, paths in segments.items():
            lock = self.directory / f"usage-{owner}.lock"
            fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o600)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a separate open file: taken even in-process
                except BlockingIOError:
                    continue  # its writer still runs
                rows = [row for path in sorted(paths, key=lambda p: int(_SEGMENT.match(p.name).group(2)))  # type: ignore[union-attr]
                        for row in _read_segment(path)]
                for start in range(0, len(rows), self.batch):
                    await self.insert(rows[start:start + self.batch])
                replayed += len(rows)
                for path in paths:
                    path.unlink(missing_ok=True)
                lock.unlink(missing_ok=True)
            finally:
                os.close(fd)
        if replayed:
            log.warning("usage journal: replayed %d row(s) of gateway processes that stopped", replayed)
        return replayed

    async def close(self) -> None:
        """Stop the flusher and write everything still pending (the segments stay if the database is down)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        try:
            await self.flush()
        except Exception as exc:  # the rows stay in their segments; the next start replays them
            log.warning("usage journal: %d row(s) not written at shutdown, kept in %s: %s", len(self._pending),
                        self.directory, exc)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if not self._pending and self._segment is not None:
            self._segment.unlink(missing_ok=True)
            if self._lock_fd >= 0:
                (self.directory / f"usage-{self.owner}.lock").unlink(missing_ok=True)
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    # -- the request path ------------------------------------------------------------------------------
    def record(self, row: Sequence[Any]) -> None:
        """Journal one row (one ``write``) and queue it for the next batch."""
        os.write(self._fd, orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE))
        self._pending.append(row)
        self._segment_rows += 1
        if len(self._pending) >= self.batch:
            self._wake.set()

    @property
    def pending(self) -> int:
        return len(self._pending)

    # -- batches ---------------------------------------------------------------------------------------
    def _open_segment(self) -> None:
        self._seq += 1
        self._segment = self.directory / f"usage-{self.owner}-{self._seq}.jsonl"
        self._fd = os.open(self._segment, os.O_CREAT | os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC, 0o600)
        self._segment_rows = 0

    def _seal(self) -> None:
        """Close the current segment (its rows are the first ``len(self._pending)`` pending ones) and open a new one."""
        if self._segment is not None and self._segment_rows:
            os.close(self._fd)
            self._sealed.append(self._segment)
            self._sealed_rows = len(self._pending)
            self._open_segment()

    async def flush(self) -> None:
        """Insert every row recorded so far. A segment is sealed once it holds :data:`SEGMENT_ROWS` rows and
        deleted once all its rows are committed; until then a crash replays it, rows already inserted
        included, which their ids turn into no-ops."""
        async with self._flushing:
            if self._segment_rows >= self.segment_rows:
                self._seal()
            todo = len(self._pending)  # rows recorded while a batch is written wait for the next flush
            while todo:
                batch = self._pending[:min(todo, self.batch * 4)]
                await self.insert(batch)
                del self._pending[:len(batch)]
                todo -= len(batch)
                self._sealed_rows = max(0, self._sealed_rows - len(batch))
                self.flushed += len(batch)
            if not self._sealed_rows:
                for path in self._sealed:
                    path.unlink(missing_ok=True)
                self._sealed.clear()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval)
            self._wake.clear()
            if not self._pending:
                continue
            try:
                await self.flush()
            except Exception as exc:
                log.warning("usage journal: %d row(s) wait for the database: %s", len(self._pending), exc)
                await asyncio.sleep(RETRY_DELAY)
