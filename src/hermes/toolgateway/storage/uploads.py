"""Media uploads of the shared ``tool-gateway`` origin: type sniffing and the store (settings:
:class:`~hermes.toolgateway.config.UploadsConfig`).

A client that needs a vendor to read a local file (a source image for an edit) uploads it first
(``POST /api/uploads/{vendor}``, :mod:`hermes.toolgateway.relays.tool_origin`); the gateway keeps it
for a while and hands back a **capability URL** the vendor can fetch without credentials::

    {origin}/api/uploads/files/up_<32 hex>.<ext>?key=<43 random characters>

The id is not secret (it is listed, logged and used to delete); the ``key`` is 256 random bits, stored
only as its SHA-256 hash and masked in the access log (``key`` is a secret-looking parameter name).

**Where things live.** The bytes are files under ``relays.tool.upload_dir`` (default
``<state dir>/uploads``, mode 0700), one per upload, named by the id, mode 0600, written atomically
(temporary file + rename). The metadata — owner, vendor, type, size, hash of the key, expiry — is a row
of the ``uploads`` table in the gateway database (migration ``m003_uploads``), reached only through
:class:`UploadStore`. A row rather than a sidecar file, because listing one user's uploads and finding
the expired ones are indexed queries, and deleting a user cascades to their uploads. The files stay on
the host that received them: another process forwards their reads there (:mod:`hermes.toolgateway.peers`),
or several hosts share one ``upload_dir``.

**Types** are decided by the first bytes (PNG, JPEG, WebP, GIF), never by the name or the declared
content type; anything else is refused. Expired uploads are answered 410 and removed (row and file)
by :meth:`UploadStore.purge`, which the relay runs before each new upload.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.config.atomic import atomic_write
from hermes.toolgateway.storage.base import Database
from hermes.toolgateway.storage.sqlite import as_database

#: The vendors an upload may be meant for: the relays that read URLs, and ``nous`` (the portal image API).
UPLOAD_VENDORS: tuple[str, ...] = ("fal", "krea", "nous")
ID_PATTERN = r"up_[0-9a-f]{32}"
_ID = re.compile(rf"^{ID_PATTERN}$")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._ -]")


def sniff_image(data: bytes) -> tuple[str, str] | None:
    """``(content type, extension)`` of a PNG, JPEG, WebP or GIF by its first bytes; None otherwise."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png", "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg", "jpg"
    if len(data) >= 12 and data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "image/webp", "webp"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif", "gif"
    return None


def clean_filename(name: str | None) -> str:
    """A display name for listings: the last path part, odd characters replaced, at most 100 characters."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    return _UNSAFE_NAME.sub("_", base)[:100] or "upload"


def iso_time(ts: float) -> str:
    """``2026-01-31T12:00:00Z`` (UTC)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class StorageFull(Exception):
    """An upload would take the user past ``upload_user_bytes``: what they hold, when the first expires."""

    def __init__(self, held: int, first_expiry: float | None) -> None:
        super().__init__(f"the user's uploads already hold {held} bytes")
        self.held = held
        self.first_expiry = first_expiry


@dataclass(frozen=True)
class Upload:
    """One stored upload (its row)."""

    id: str
    user_id: int
    vendor: str
    filename: str
    content_type: str
    ext: str
    size: int
    sha256: str
    created: float
    expires: float

    def public(self) -> dict[str, Any]:
        """What the owner sees in a listing (never the key, so never the URL)."""
        return {"id": self.id, "vendor": self.vendor, "filename": self.filename, "content_type": self.content_type,
                "bytes": self.size, "sha256": self.sha256, "created_at": iso_time(self.created),
                "expires_at": iso_time(self.expires)}


def _upload(row: Any) -> Upload:
    return Upload(row["id"], int(row["user_id"]), row["vendor"], row["filename"], row["content_type"], row["ext"],
                  int(row["bytes"]), row["sha256"], float(row["created"]), float(row["expires"]))


_COLUMNS = "id, user_id, vendor, filename, content_type, ext, bytes, sha256, created, expires"


class UploadStore:
    """Upload files in ``directory`` and their rows in the gateway database (the Gateway's ``conn``; SQL
    written once with ``?`` placeholders, as :class:`~hermes.toolgateway.storage.metering.Meter` does)."""

    def __init__(self, conn: Database | sqlite3.Connection, directory: Path) -> None:
        self.conn = as_database(conn)
        self.directory = directory
        self._swept = 0.0  # when purge last looked for files whose rows are gone

    def path_of(self, upload_id: str) -> Path:
        if not _ID.match(upload_id):
            raise ValueError("not an upload id")
        return self.directory / upload_id

    def _prepare_dir(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(self.directory, 0o700)

    def write_file(self, upload_id: str, data: bytes) -> None:
        """Store the bytes (atomically, mode 0600); blocking, so the relay runs it in a thread."""
        self._prepare_dir()
        atomic_write(self.path_of(upload_id), data, mode=0o600)

    def add(self, *, user_id: int, vendor: str, filename: str, content_type: str, ext: str, data: bytes,
            now: float, ttl: int, upload_id: str, cap: int = 0) -> tuple[Upload, str]:
        """Record an upload (its row) and return it with its key (shown once: only its hash is kept).

        The row is the upload's claim on the user's storage: with a ``cap`` (bytes, 0: none), the check of
        what the user holds and the insert are one transaction under a lock on the user, so concurrent
        uploads — in this process or on other hosts — can never hold more than ``cap`` together; past it,
        :class:`StorageFull`. The relay writes the file only after this, and drops the row
        (:meth:`forget`) when the write fails; deleting or purging the row gives the room back."""
        key = secrets.token_urlsafe(32)
        upload = Upload(upload_id, user_id, vendor, filename, content_type, ext, len(data),
                        hashlib.sha256(data).hexdigest(), now, now + ttl)
        with self.conn.transaction():
            if cap:
                self._lock_user(user_id)
                held, first_expiry = self.stored_bytes(user_id, now)
                if held + upload.size > cap:
                    raise StorageFull(held, first_expiry)
            self.conn.execute(
                f"INSERT INTO uploads ({_COLUMNS}, key_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (upload.id, user_id, vendor, filename, content_type, ext, upload.size, upload.sha256, now,
                 upload.expires, _hash(key)),
            )
        return upload, key

    def _lock_user(self, user_id: int) -> None:
        """Serialise the uploads of one user until the transaction ends. SQLite's ``BEGIN IMMEDIATE`` already
        holds the database's write lock; PostgreSQL locks the user's row (``FOR NO KEY UPDATE``: the usage
        log's foreign-key checks on that row are not held up)."""
        if self.conn.dialect.name != "sqlite":
            self.conn.execute("SELECT id FROM users WHERE id = ? FOR NO KEY UPDATE", (user_id,))

    def forget(self, upload_id: str) -> None:
        """Remove a row whose file could not be written (and any part of the file)."""
        self.conn.execute("DELETE FROM uploads WHERE id = ?", (upload_id,))
        self._unlink(upload_id)

    def get(self, upload_id: str) -> Upload | None:
        row = self.conn.execute(f"SELECT {_COLUMNS} FROM uploads WHERE id = ?", (upload_id,)).fetchone()
        return _upload(row) if row is not None else None

    def unlock(self, upload_id: str, key: str) -> Upload | None:
        """The upload when ``key`` is its key (expired or not); None for an unknown id or a wrong key."""
        if not _ID.match(upload_id) or not key:
            return None
        row = self.conn.execute(f"SELECT {_COLUMNS}, key_hash FROM uploads WHERE id = ?", (upload_id,)).fetchone()
        if row is None or not hmac.compare_digest(str(row["key_hash"]), _hash(key)):
            return None
        return _upload(row)

    def read(self, upload: Upload) -> bytes | None:
        """The stored bytes (blocking); None when the file is gone."""
        try:
            return self.path_of(upload.id).read_bytes()
        except FileNotFoundError:
            return None

    def list_for(self, user_id: int, now: float) -> list[Upload]:
        """The user's uploads that have not expired, newest first."""
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM uploads WHERE user_id = ? AND expires > ? ORDER BY created DESC, id",
            (user_id, now)).fetchall()
        return [_upload(r) for r in rows]

    def stored_bytes(self, user_id: int, now: float) -> tuple[int, float | None]:
        """Bytes the user holds in live uploads, and when the first of them expires."""
        row = self.conn.execute("SELECT COALESCE(SUM(bytes), 0), MIN(expires) FROM uploads "
                                "WHERE user_id = ? AND expires > ?", (user_id, now)).fetchone()
        return int(row[0]), (float(row[1]) if row[1] is not None else None)

    def delete(self, upload_id: str, user_id: int) -> bool:
        """Remove the user's own upload (row and file); False when it is not theirs or does not exist."""
        if not _ID.match(upload_id):
            return False
        gone = self.conn.execute("DELETE FROM uploads WHERE id = ? AND user_id = ? RETURNING id",
                                 (upload_id, user_id)).fetchone()
        if gone is None:
            return False
        self._unlink(upload_id)
        return True

    def purge(self, now: float, max_age: float | None = None) -> int:
        """Remove every expired upload (rows and files); returns how many rows.

        Another process may have purged the row of a file this one holds (several processes, each with its
        own ``upload_dir``): with ``max_age``, files here older than that (by their time of writing) are
        removed too, at most once a minute."""
        rows = self.conn.execute("DELETE FROM uploads WHERE expires <= ? RETURNING id", (now,)).fetchall()
        for row in rows:
            self._unlink(str(row[0]))
        if max_age is not None and now - self._swept >= 60:
            self._swept = now
            with contextlib.suppress(FileNotFoundError), os.scandir(self.directory) as entries:
                for entry in entries:
                    if _ID.match(entry.name) and entry.stat().st_mtime < now - max_age:
                        self._unlink(entry.name)
        return len(rows)

    def _unlink(self, upload_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path_of(upload_id).unlink()


def new_upload_id() -> str:
    """``up_`` and 32 random hex digits."""
    return "up_" + secrets.token_hex(16)


def is_upload_id(text: str) -> bool:
    return bool(_ID.match(text))
