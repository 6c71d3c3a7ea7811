"""The pure-Python side of ``search_files``: walking a tree and searching file contents.

Used when ripgrep is not installed or ``HERMES_NO_RG=1`` is set. It follows the same rules as the
ripgrep command :mod:`.search` builds: hidden files are searched; ``.git``, ``node_modules``, Python
virtual environments (any folder holding ``pyvenv.cfg``) and tool caches are skipped; ``.gitignore``
and ``.ignore`` files (in the tree and in its parents up to the repository root) are honoured, with a
common subset of their syntax (globs, ``**``, leading ``/``, trailing ``/``, ``!`` negation);
symlinks are not followed; FIFOs, sockets and devices are skipped (every file is opened non-blocking
and checked to be a regular file, so a FIFO named ``.gitignore`` cannot block the walk); files with a
NUL byte in their first 8 KiB are skipped as binary; files over :data:`MAX_FILE_BYTES` are skipped.
Entries are visited in path order.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox",
     ".mypy_cache", ".pytest_cache", ".ruff_cache"}
)  # fmt: skip
IGNORE_FILES = (".gitignore", ".ignore")
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_LINE_CHARS = 500
_BINARY_PROBE = 8192


def _glob_regex(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                out.append(re.escape(c))
                i += 1
                continue
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body}]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


@dataclass
class IgnoreFile:
    """The rules of one ignore file, matched against paths relative to its folder."""

    base: Path
    rules: list[tuple[re.Pattern[str], bool, bool]] = field(default_factory=list)

    @classmethod
    def parse(cls, base: Path, text: str) -> IgnoreFile:
        rules = []
        for raw in text.splitlines():
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            if negate:
                line = line[1:]
            line = line.removeprefix("\\")
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            anchored = "/" in line
            line = line.lstrip("/")
            regex = _glob_regex(line)
            if not anchored:
                regex = "(?:.*/)?" + regex
            try:
                rules.append((re.compile(f"^{regex}$"), negate, dir_only))
            except re.error:
                continue
        return cls(base, rules)

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included, None: no rule speaks about it."""
        result = None
        for regex, negate, dir_only in self.rules:
            if dir_only and not is_dir:
                continue
            if regex.match(rel):
                result = not negate
        return result


def read_regular(path: Path, max_bytes: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``max_bytes``; None otherwise.

    Opened non-blocking and checked on the open descriptor: a FIFO, socket or device (or one swapped in
    after the walk saw a file) is never read, so it can never block the search.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(max_bytes + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def _load_ignores(folder: Path) -> list[IgnoreFile]:
    found = []
    for name in IGNORE_FILES:
        data = read_regular(folder / name, 1024 * 1024)
        if data is not None:
            found.append(IgnoreFile.parse(folder, data.decode("utf-8", errors="replace")))
    return found


def parent_ignores(root: Path) -> list[IgnoreFile]:
    """Ignore files of the folders above ``root`` up to the repository root (or the filesystem root)."""
    chain, folder = [], root.parent
    if (root / ".git").exists():
        return []
    while True:
        chain.append(folder)
        if (folder / ".git").exists() or folder.parent == folder:
            break
        folder = folder.parent
    ignores: list[IgnoreFile] = []
    for parent in reversed(chain):
        ignores.extend(_load_ignores(parent))
    return ignores


def ignored(path: Path, is_dir: bool, ignores: list[IgnoreFile]) -> bool:
    verdict = False
    for ig in ignores:
        try:
            rel = path.relative_to(ig.base).as_posix()
        except ValueError:
            continue
        said = ig.verdict(rel, is_dir)
        if said is not None:
            verdict = said
    return verdict


_VIRTUAL = frozenset({"/proc", "/sys", "/dev"})


def skip_dir(path: Path) -> bool:
    return path.name in SKIP_DIRS or str(path) in _VIRTUAL or (path / "pyvenv.cfg").is_file()


def glob_matches(glob: str, path: Path, root: Path, case_insensitive: bool = False) -> bool:
    """A file glob as ripgrep's ``-g`` reads it: without ``/`` it matches the name, else the path."""
    target = path.name if "/" not in glob else path.relative_to(root).as_posix() if root in path.parents else path.name
    if case_insensitive:
        return fnmatch.fnmatchcase(target.lower(), glob.lower())
    return fnmatch.fnmatchcase(target, glob)


CANCELLED = "cancelled"


@dataclass
class WalkLimits:
    """When a search stops: its deadline, a file count, and the session's cancel flag."""

    deadline: float
    max_files: int = 200_000
    visited: int = 0
    stopped: str | None = None
    #: True once the calling turn is interrupted (the search stops with ``stopped = "cancelled"``)
    cancelled: Callable[[], bool] | None = None

    def left(self) -> float:
        """Seconds until the deadline (0 when past it)."""
        return max(0.0, self.deadline - time.monotonic())

    def spent(self) -> bool:
        if self.stopped is None and self.cancelled is not None and self.cancelled():
            self.stopped = CANCELLED
        if self.stopped is None and time.monotonic() > self.deadline:
            self.stopped = "time limit"
        if self.stopped is None and self.visited >= self.max_files:
            self.stopped = f"file limit ({self.max_files:,} files)"
        return self.stopped is not None


def walk_files(root: Path, limits: WalkLimits, ignores: list[IgnoreFile] | None = None) -> Iterator[Path]:
    """Files under ``root`` in path order, following the skip rules in the module docstring."""
    if root.is_file():
        yield root
        return
    stack: list[tuple[Path, list[IgnoreFile]]] = [(root, (ignores or []) + _load_ignores(root))]
    pending: list[Iterator[os.DirEntry[str]]] = []
    try:
        pending.append(iter(sorted(os.scandir(root), key=lambda e: e.name)))
    except OSError:
        return
    while pending:
        if limits.spent():
            return
        entry = next(pending[-1], None)
        if entry is None:
            pending.pop()
            stack.pop()
            continue
        folder_ignores = stack[-1][1]
        path = Path(entry.path)
        try:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if skip_dir(path) or ignored(path, True, folder_ignores):
                    continue
                children = sorted(os.scandir(path), key=lambda e: e.name)
                stack.append((path, folder_ignores + _load_ignores(path)))
                pending.append(iter(children))
                continue
            if not entry.is_file() or ignored(path, False, folder_ignores):
                continue
        except OSError:
            continue
        limits.visited += 1
        yield path


def read_text_lines(path: Path) -> list[str] | None:
    """The file's lines, or None for binary, oversized, unreadable or non-regular files."""
    data = read_regular(path)
    if data is None or len(data) > MAX_FILE_BYTES:
        return None
    if b"\x00" in data[:_BINARY_PROBE]:
        return None
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def clip(text: str) -> str:
    text = text.rstrip("\r\n")
    if len(text) > MAX_LINE_CHARS:
        return text[:MAX_LINE_CHARS] + f"… [{len(text) - MAX_LINE_CHARS} more characters]"
    return text
