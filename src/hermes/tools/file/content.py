"""Loading a file once: its bytes, its version, and what kind of content it holds.

A :class:`Snapshot` is taken from one open file descriptor, so the bytes, the sha256 and the
size/mtime belong to the same version of the file. Text is UTF-8 (a BOM is remembered and kept); a
file with NUL bytes or invalid UTF-8 is *binary*, one starting with a known image signature is an
*image*. Line endings are remembered so that patch writes CRLF files back as CRLF.
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path

from hermes.errors import ToolError
from hermes.tools.file.baseline import Version

#: read_file and patch refuse larger files (search_files and the terminal can still look into them)
MAX_TEXT_BYTES = 64 * 1024 * 1024
_BOM = b"\xef\xbb\xbf"

_IMAGE_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
    (b"\x00\x00\x01\x00", "ico"),
)
_IMAGE_SUFFIXES = {".bmp": "bmp", ".ico": "ico", ".heic": "heic", ".avif": "avif"}


@dataclass
class Snapshot:
    """One version of one file as read from disk."""

    path: Path
    data: bytes
    version: Version
    #: "text", "binary" or "image"
    kind: str
    #: the decoded text (without BOM); None unless kind == "text"
    text: str | None = None
    bom: bool = False
    #: every line ends in CRLF (the text above still holds the \r characters)
    crlf: bool = False
    #: why the file counts as binary, or the image format
    detail: str = ""
    _lines: list[str] | None = field(default=None, repr=False)

    @property
    def lines(self) -> list[str]:
        """The text split into lines without their line ending (a final newline adds no line)."""
        if self._lines is None:
            text = self.text or ""
            if self.crlf:
                text = text.replace("\r\n", "\n")
            parts = text.split("\n")
            if parts and parts[-1] == "":
                parts.pop()
            self._lines = parts
        return self._lines

    def normalised_text(self) -> str:
        """The text with CRLF turned into LF when the whole file uses CRLF."""
        text = self.text or ""
        return text.replace("\r\n", "\n") if self.crlf else text

    def encode(self, text: str) -> bytes:
        """Turn LF-normalised text back into bytes with this file's line endings and BOM."""
        if self.crlf:
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        raw = text.encode("utf-8")
        return _BOM + raw if self.bom else raw


def version_of(data: bytes, st: os.stat_result) -> Version:
    return Version(hashlib.sha256(data).hexdigest(), st.st_size, st.st_mtime_ns)


def hash_file(path: Path) -> Version:
    """The version of a file of any size, hashed in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return Version(digest.hexdigest(), st.st_size, st.st_mtime_ns)


def image_format(data: bytes, path: Path) -> str | None:
    for signature, name in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return name
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data[:2] == b"BM" and path.suffix.lower() == ".bmp":
        return "bmp"
    suffix = _IMAGE_SUFFIXES.get(path.suffix.lower())
    if suffix is not None and (b"\x00" in data[:8192] or not data):
        return suffix
    return None


def image_size(data: bytes, fmt: str) -> tuple[int, int] | None:
    """Width and height of PNG and GIF images (cheap header reads), else None."""
    try:
        if fmt == "png" and data[12:16] == b"IHDR":
            width, height = struct.unpack(">II", data[16:24])
            return int(width), int(height)
        if fmt == "gif":
            width, height = struct.unpack("<HH", data[6:10])
            return int(width), int(height)
    except struct.error:
        return None
    return None


def classify(path: Path, data: bytes, version: Version) -> Snapshot:
    """Build a snapshot from bytes already read."""
    fmt = image_format(data, path)
    if fmt is not None:
        return Snapshot(path, data, version, "image", detail=fmt)
    nul = data.find(b"\x00")
    if nul >= 0:
        return Snapshot(path, data, version, "binary", detail=f"it contains NUL bytes (first at byte {nul})")
    bom = data.startswith(_BOM)
    body = data[len(_BOM) :] if bom else data
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Snapshot(
            path, data, version, "binary", detail=f"it is not valid UTF-8 (first bad byte at offset {exc.start})"
        )
    newlines = text.count("\n")
    crlf = newlines > 0 and text.count("\r\n") == newlines
    return Snapshot(path, data, version, "text", text=text, bom=bom, crlf=crlf)


def load(path: Path, field_name: str = "path", max_bytes: int = MAX_TEXT_BYTES) -> Snapshot:
    """Read ``path`` (already resolved and checked) into a snapshot; errors name ``field_name``."""
    try:
        before = os.stat(path)  # before opening: a FIFO or device must not block the open
        if stat.S_ISDIR(before.st_mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(before.st_mode):
            raise ToolError(f"'{field_name}': {path} is not a regular file")
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ToolError(f"'{field_name}': {path} is not a regular file")
            if st.st_size > max_bytes:
                raise ToolError(
                    f"'{field_name}': {path} is {st.st_size:,} bytes, more than the {max_bytes:,} bytes the file "
                    "tools load; look into it with search_files or the terminal (head, tail, sed -n)"
                )
            data = fh.read()
    except FileNotFoundError:
        raise ToolError(f"'{field_name}': {path} does not exist") from None
    except IsADirectoryError:
        raise ToolError(
            f"'{field_name}': {path} is a directory; list it with search_files(target='files', path=...)"
        ) from None
    except PermissionError:
        raise ToolError(f"'{field_name}': permission denied reading {path}") from None
    except OSError as exc:
        raise ToolError(f"'{field_name}': cannot read {path}: {exc.strerror or exc}") from None
    return classify(path, data, version_of(data, st))
