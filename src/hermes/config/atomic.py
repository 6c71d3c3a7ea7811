"""Atomic file writes: a crash mid-write leaves the previous file intact."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def atomic_write(path: Path, data: str | bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``.

    ``mode`` sets the permission bits of the new file (``0o600`` for files holding secrets); when it is
    omitted an existing file keeps its mode.
    """
    import tempfile  # here, not at module level: with shutil and random it costs ~4 ms, and the modules
    # importing this one (config files, tool stores) are on every start-up path

    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None and path.exists():
        mode = path.stat().st_mode & 0o7777
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
