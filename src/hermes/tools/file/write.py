"""``write_file`` — create a file or overwrite one the task knows in full.

The write is atomic (a temporary file in the same folder, fsync, ``os.replace``): a crash leaves the
old file intact. Missing parent folders are created; an existing file keeps its permission bits and a
new one gets the usual ``0o666`` minus the umask. Overwriting an existing file needs a current
full-file baseline (:mod:`.baseline`); creating a new one does not. The result gives the bytes written
and whether the file was created.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError
from hermes.tools.backends.availability import backend_check
from hermes.tools.paths import check_write, display, resolve_path, stat_or_none
from hermes.tools.registry import registry

if TYPE_CHECKING:
    from hermes.tools.backends.base import Backend
    from hermes.tools.file.baseline import Version

WRITE_FILE_SCHEMA: dict[str, Any] = {
    "name": "write_file",
    "description": (
        "Write a whole text file (UTF-8), creating it and its folders if needed. To overwrite an existing "
        "file this task must know it in full: it wrote it, or read every page of its current version with "
        "read_file (or fully read it and then patched it). For partial edits use patch instead. Writes are "
        "atomic and keep the file's permissions."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "File path (absolute, ~ or relative to cwd)"},
            "content": {"type": "string", "description": "The complete new content of the file"},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    },
}


def _read_umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            match = re.search(r"^Umask:\s*([0-7]+)", fh.read(), re.MULTILINE)
        if match:
            return int(match.group(1), 8)
    except OSError:
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


_NEW_FILE_MODE = 0o666 & ~_read_umask()


def _current_version(path: Path) -> tuple[Version, int | None, str] | None:
    """(version, line count or None, kind) of an existing file, None when there is none."""
    from hermes.tools.file.content import MAX_TEXT_BYTES, classify, hash_file, version_of

    st = stat_or_none(path)
    if st is None:
        return None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"'path': {path} is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"'path': {path} is not a regular file")
    if st.st_size > MAX_TEXT_BYTES:
        return hash_file(path), None, "large"
    try:
        with open(path, "rb") as fh:
            data = fh.read()
            version = version_of(data, os.fstat(fh.fileno()))
    except OSError as exc:
        raise ToolError(f"'path': cannot read {path}: {exc.strerror or exc}") from None
    snap = classify(path, data, version)
    return version, (len(snap.lines) if snap.kind == "text" else None), snap.kind


def write_file(args: dict[str, Any], **kw: Any) -> str:
    """Handler of ``write_file``."""
    # imported here, not at module level: discovery imports this module at every start-up
    import hashlib

    from hermes.config.atomic import atomic_write
    from hermes.tools.file.baseline import Version, path_lock, tracker_for

    raw = args["path"]
    content: str = args["content"]
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"'content' cannot be encoded as UTF-8: {exc.reason} at position {exc.start}") from None
    from hermes.tools.file import remote

    backend = remote.backend_for(kw)
    if backend is not None:
        return _write_remote(backend, raw, content, data, kw)
    path = resolve_path(raw)
    check_write(path, kw, raw)
    shown = display(path)
    tracker = tracker_for(kw)
    key = str(path)
    with path_lock(key):
        existing = _current_version(path)
        if existing is not None:
            version, total, kind = existing
            problem = tracker.overwrite_problem(key, shown, version, total, kind)
            if problem is not None:
                raise ToolError(problem)
        try:
            atomic_write(path, data, mode=None if existing is not None else _NEW_FILE_MODE)
            st = os.stat(path)
        except PermissionError:
            raise ToolError(f"'path': permission denied writing {path}") from None
        except OSError as exc:
            raise ToolError(f"'path': cannot write {path}: {exc.strerror or exc}") from None
        tracker.note_write(key, Version(hashlib.sha256(data).hexdigest(), st.st_size, st.st_mtime_ns))
    return _result(shown, content, data, existing is None)


def _result(shown: str, content: str, data: bytes, created: bool) -> str:
    lines = content.count("\n") + (0 if not content or content.endswith("\n") else 1)
    return json.dumps({"path": shown, "bytes_written": len(data), "created": created, "lines": lines},
                      ensure_ascii=False)


def _write_remote(backend: Backend, raw: str, content: str, data: bytes, kw: dict[str, Any]) -> str:
    """write_file on the execution backend, under the same baseline rule."""
    from hermes.tools.file import remote
    from hermes.tools.file.baseline import path_lock, tracker_for

    where = remote.resolve(backend, raw)
    remote.check_write(backend, where)
    tracker = tracker_for(kw)
    key = remote.key(backend, where)
    with path_lock(key):
        existing = remote.current_version(backend, where)
        if existing is not None:
            version, total, kind = existing
            problem = tracker.overwrite_problem(key, where, version, total, kind)
            if problem is not None:
                raise ToolError(problem)
        tracker.note_write(key, remote.write(backend, where, data))
    return _result(where, content, data, existing is None)


registry.register(
    name="write_file",
    toolset="file",
    schema=WRITE_FILE_SCHEMA,
    handler=write_file,
    check_fn=backend_check(),
    requires_env=[],
)
