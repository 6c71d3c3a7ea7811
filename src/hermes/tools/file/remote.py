"""The file tools on a remote execution backend: the same filesystem the terminal's commands change.

With ``terminal.backend`` other than ``local``, ``read_file``, ``write_file``, ``patch`` and
``search_files`` act on the backend (:mod:`hermes.tools.backends`): paths are the backend's (``~`` is the
login's home there, a relative path starts at the backend's working directory), bytes come and go through
its :meth:`~hermes.tools.backends.base.Backend.read_bytes` / ``write_bytes`` (atomic there), and the
full-file baseline rule (:mod:`.baseline`) is the same: keyed by backend and path, compared by sha256 of
the bytes on the backend, so a file a remote command changed is "changed by another writer".

The path rules are the lexical part of the local ones (the backend's accounts and links cannot be
listed from here): SSH key material and the system's password files are never read; ``.ssh`` and the
other credential folders of a home, its start-up files and the system folders are never written.
"""

from __future__ import annotations

import hashlib
import posixpath
import stat
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError
from hermes.tools.backends.base import Backend, BackendError
from hermes.tools.sensitive import (
    HOME_CREDENTIAL_DIRS,
    HOME_CREDENTIAL_FILES,
    HOME_STARTUP_DIRS,
    HOME_STARTUP_FILES,
    SSH_PUBLIC_NAMES,
    SYSTEM_SECRET_FILES,
)

if TYPE_CHECKING:
    from pathlib import Path

    from hermes.tools.file.baseline import Version
    from hermes.tools.file.content import Snapshot

SYSTEM_WRITE_DIRS = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/proc", "/sys",
                     "/dev", "/var/lib", "/root/.ssh")


def backend_for(kw: dict[str, Any]) -> Backend | None:
    """The calling task's remote backend, or None when the file tools act locally."""
    from hermes.tools.backends.session import for_call

    backend = for_call(kw)
    return None if backend.local else backend


def resolve(backend: Backend, raw: str, field: str = "path") -> str:
    """The absolute path on the backend for what the model sent (lexically normalised)."""
    if not raw.strip():
        raise ToolError(f"'{field}' must not be empty")
    if "\x00" in raw:
        raise ToolError(f"'{field}' must not contain a NUL character")
    text = raw
    if text == "~" or text.startswith("~/"):
        text = _call(backend.home) + text[1:]
    return posixpath.normpath(posixpath.join(_call(backend.default_cwd), text))


def key(backend: Backend, path: str) -> str:
    """The baseline key of a backend's file (never equal to a local path's)."""
    return f"{backend.describe()}:{path}"


def _home_relative(path: str, home: str) -> str | None:
    home = home.rstrip("/") or "/"
    if path.startswith(home + "/"):
        return path[len(home) + 1:]
    parts = PurePosixPath(path).parts
    if len(parts) > 3 and parts[1] == "home":
        return "/".join(parts[3:])
    return None


def check_read(backend: Backend, path: str, field: str = "path") -> None:
    p = PurePosixPath(path)
    if path in SYSTEM_SECRET_FILES or (".ssh" in p.parts[:-1] and p.name not in SSH_PUBLIC_NAMES
                                       and not p.name.endswith(".pub")):
        raise ToolError(f"'{field}': reading {path} on {backend.describe()} is not allowed: it holds credentials")


def check_write(backend: Backend, path: str, field: str = "path") -> None:
    where = f"writing {path} on {backend.describe()} is not allowed"
    for folder in SYSTEM_WRITE_DIRS:
        if path == folder or path.startswith(folder + "/"):
            raise ToolError(f"'{field}': {where}: {folder} is a system location")
    rel = _home_relative(path, _call(backend.home))
    if rel is None:
        return
    if rel in HOME_CREDENTIAL_FILES or any(rel == d or rel.startswith(d + "/") for d in HOME_CREDENTIAL_DIRS):
        raise ToolError(f"'{field}': {where}: it is a credential store of a home folder")
    if rel in HOME_STARTUP_FILES or any(rel == d or rel.startswith(d + "/") for d in HOME_STARTUP_DIRS):
        raise ToolError(f"'{field}': {where}: it is a start-up file of a home folder (what it names runs later)")


def _call(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except BackendError as exc:
        raise ToolError(str(exc)) from None


def exists(backend: Backend, path: str) -> bool:
    return _call(backend.stat, path) is not None


def load(backend: Backend, path: str, field: str = "path") -> Snapshot:
    """The file on the backend as a :class:`~.content.Snapshot` (errors name ``field``)."""
    from hermes.tools.file.baseline import Version
    from hermes.tools.file.content import MAX_TEXT_BYTES, classify

    found = _call(backend.stat, path)
    if found is None:
        raise ToolError(f"'{field}': {path} does not exist on {backend.describe()}")
    if stat.S_ISDIR(found.mode):
        raise ToolError(f"'{field}': {path} is a directory; list it with search_files(target='files', path=...)")
    if not stat.S_ISREG(found.mode):
        raise ToolError(f"'{field}': {path} is not a regular file")
    if found.size > MAX_TEXT_BYTES:
        raise ToolError(f"'{field}': {path} is {found.size:,} bytes, more than the {MAX_TEXT_BYTES:,} bytes the file "
                        "tools load; look into it with the terminal (head, tail, sed -n)")
    data = _call(backend.read_bytes, path, MAX_TEXT_BYTES)
    version = Version(hashlib.sha256(data).hexdigest(), len(data), found.mtime_ns)
    local: Path = PurePosixPath(path)  # type: ignore[assignment]  # only its name and suffix are used
    return classify(local, data, version)


def current_version(backend: Backend, path: str) -> tuple[Version, int | None, str] | None:
    """(version, line count or None, kind) of an existing file on the backend, None when there is none."""
    found = _call(backend.stat, path)
    if found is None:
        return None
    if stat.S_ISDIR(found.mode):
        raise ToolError(f"'path': {path} is a directory")
    snap = load(backend, path)
    return snap.version, (len(snap.lines) if snap.kind == "text" else None), snap.kind


def write(backend: Backend, path: str, data: bytes) -> Version:
    """Write ``data`` atomically on the backend; the version written."""
    from hermes.tools.file.baseline import Version

    written = _call(backend.write_bytes, path, data, None)
    return Version(hashlib.sha256(data).hexdigest(), written.size, written.mtime_ns)


_SKIPPED_DIRS = (".git", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache")


def search(backend: Backend, args: dict[str, Any], max_results: int) -> dict[str, Any]:
    """search_files on the backend: ``grep`` for content, ``find`` for names (the same skipped folders;
    no .gitignore; context lines are not shown)."""
    import shlex

    from hermes.redact import redact, secret_values

    q = shlex.quote
    root = resolve(backend, str(args.get("path") or "."))
    pattern = str(args["pattern"])
    ci = bool(args.get("case_insensitive"))
    if (args.get("target") or "content") == "files":
        glob = pattern if any(c in pattern for c in "*?[") else f"*{pattern}*"
        prune = " -o ".join(f"-name {q(d)}" for d in _SKIPPED_DIRS)
        line = (f"find {q(root)} \\( {prune} \\) -prune -o -type f {'-iname' if ci else '-name'} {q(glob)} -print "
                f"2>/dev/null | LC_ALL=C sort | head -n {max_results + 1}")
        names = _grep_lines(backend, line)
        files = [n for n in names if _readable(backend, n)]
        return {"engine": "find", "files": files[:max_results], "count": min(len(files), max_results),
                "truncated": len(files) > max_results}
    flags = "-rnIH" + ("i" if ci else "") + ("F" if args.get("literal") else "E")
    include = f" --include={q(str(args['file_glob']))}" if args.get("file_glob") else ""
    excludes = "".join(f" --exclude-dir={q(d)}" for d in _SKIPPED_DIRS)
    line = f"grep {flags}{include}{excludes} -e {q(pattern)} -- {q(root)} 2>/dev/null | head -n {max_results + 1}"
    matches = []
    secrets = secret_values()
    for row in _grep_lines(backend, line):
        file, _, rest = row.partition(":")
        number, _, text = rest.partition(":")
        if number.isdigit() and _readable(backend, file):
            matches.append({"file": file, "line": int(number), "text": redact(text[:2000], secrets)})
    return {"engine": "grep", "matches": matches[:max_results], "count": min(len(matches), max_results),
            "truncated": len(matches) > max_results}


def _grep_lines(backend: Backend, line: str) -> list[str]:
    result = _call(backend.exec, line)
    return [r for r in result.output.decode("utf-8", "replace").splitlines() if r]


def _readable(backend: Backend, path: str) -> bool:
    try:
        check_read(backend, path)
    except ToolError:
        return False
    return True
