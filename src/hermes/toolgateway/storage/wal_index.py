"""Telling without a statement that nothing was committed to a SQLite database since the last look.

A database in WAL mode keeps its WAL index in a shared-memory file beside it (``<db>-shm``). The
index starts with a 48-byte header that every commit rewrites — frame count, change counter, salts,
checksums (SQLite's "WAL-index format" document) — and that header is the commit point every reader
goes by. While it holds the same bytes, no transaction has committed, in any process, so a value read
from the database after the header was last looked at is still the current one.

:class:`WalIndexWatch` reads the header with one ``pread``: under a microsecond, where the statement it
saves (a read transaction, with its locks on the ``-shm`` and the database file) takes about 2 µs in a
tight loop and about 35 µs inside a busy server, whose every request meets cold caches. The rules it
keeps, from how SQLite and POSIX locks work:

* **The file is the one SQLite uses**: named after the path SQLite resolved (``PRAGMA database_list``:
  symbolic links followed), never after the path the caller was given — a stale ``-shm`` beside a link
  would never move.
* **Its descriptor is never closed.** Closing *any* descriptor of a file drops every POSIX lock the
  process holds on that file, those of SQLite's own connections included (see
  :func:`hermes.toolgateway.storage.sqlite._make_private`); so no ``mmap`` either, whose own duplicate
  descriptor is closed when the object goes. One descriptor per ``-shm`` file stays open for the life of
  the process, shared by every watch of that file.
* **The header is read only while the watched connection is open**, and a value read under it is
  trusted only when that connection had no transaction open (a transaction's snapshot may be older
  than the header). The caller drops the watch before closing its connection.
"""

from __future__ import annotations

import os
import sqlite3
import struct
import threading

#: the bytes compared: the first copy of the WAL-index header
HEADER_BYTES = 48
#: ``iVersion``, the header's first field, in every WAL index SQLite writes
WAL_INDEX_VERSION = 3007000

#: the descriptor of each ``-shm`` file this process opened, by (device, inode): never closed, see above
_OPEN: dict[tuple[int, int], int | None] = {}
_LOCK = threading.Lock()


class WalIndexWatch:
    """The WAL-index header of one connection's database, read from its ``-shm`` file."""

    def __init__(self, fd: int, conn: sqlite3.Connection) -> None:
        self._fd = fd
        self._conn = conn

    @classmethod
    def open(cls, conn: sqlite3.Connection) -> WalIndexWatch | None:
        """A watch of ``conn``'s main database when its ``-shm`` holds a WAL index, else None (not in WAL
        mode, an in-memory database)."""
        row = conn.execute("PRAGMA database_list").fetchone()
        if row is None or not row[2]:
            return None
        shm = f"{row[2]}-shm"
        try:
            found = os.stat(shm)
        except OSError:
            return None
        with _LOCK:
            key = (found.st_dev, found.st_ino)
            if key not in _OPEN:  # opened once: a second open, closed again, would drop SQLite's locks
                _OPEN[key] = _open(shm)
            fd = _OPEN[key]
        if fd is None:
            return None
        head = os.pread(fd, HEADER_BYTES, 0)
        if len(head) < HEADER_BYTES or struct.unpack_from("=I", head, 0)[0] != WAL_INDEX_VERSION:
            return None
        return cls(fd, conn)

    def header(self) -> bytes:
        """The header's bytes now (different after every commit)."""
        return os.pread(self._fd, HEADER_BYTES, 0)

    def settled(self) -> bool:
        """Whether the watched connection has no transaction open (its next statement reads the latest)."""
        return not self._conn.in_transaction


def _open(shm: str) -> int | None:
    """A read-only descriptor of ``shm``, never closed (see above)."""
    try:
        return os.open(shm, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
