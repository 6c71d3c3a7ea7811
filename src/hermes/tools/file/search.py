"""``search_files`` — search file contents (a regular expression) or file names (a glob).

ripgrep (:mod:`.rg`) does the work when it is installed; otherwise, or with ``HERMES_NO_RG=1`` in the
environment, or for a pattern ripgrep cannot take (look-around, back-references), the pure-Python
walker of :mod:`.walk` does, matching with the ``regex`` module, following the same rules and returning
the same result shape (``engine`` says which ran). Hidden files are searched; ``.git``,
``node_modules``, virtual environments and tool caches are skipped, ``.gitignore`` is honoured, binary
files, FIFOs, sockets and devices are skipped, sensitive files (private keys, hermes's ``.env``, hard
links to them…) never appear, and results are capped at ``max_results`` with ``truncated: true`` when
more exist.

Every search has a time limit (``file.search_time_limit``, default 30 s) and stops when the turn is
cancelled: ripgrep is killed and reaped, and the Python engine gives each match call only the time
left, so a pattern that backtracks catastrophically ends with the results found so far and
``stopped: "time limit"``.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.errors import ConfigError, ToolError
from hermes.tools.backends.availability import backend_check
from hermes.tools.context import session_of
from hermes.tools.paths import (
    VIRTUAL_DIRS,
    Identities,
    check_read,
    display,
    file_setting,
    resolve_path,
    sensitive_for_reading,
    stat_or_none,
)
from hermes.tools.registry import registry

if TYPE_CHECKING:  # the walker is imported by the functions that use it: discovery imports this module
    from hermes.tools.file.walk import WalkLimits

#: seconds a search may run (``file.search_time_limit`` in config.yaml), and the most that setting takes
TIME_LIMIT = 30.0
MAX_TIME_LIMIT = 600.0
_GLOB_CHARS = frozenset("*?[")

SEARCH_FILES_SCHEMA: dict[str, Any] = {
    "name": "search_files",
    "description": (
        "Search under a folder. target='content' (default): lines matching the regular expression `pattern` "
        "(Rust/Python regex syntax; literal=true for plain text), with optional context lines. "
        "target='files': files whose name matches the glob `pattern` (e.g. '*.py'; plain text matches "
        "names containing it). Skips .git, node_modules, virtual environments, gitignored and binary files."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "Regex (content) or name glob (files)"},
            "path": {"type": "string", "minLength": 1, "default": ".", "description": "Folder or file to search"},
            "target": {"type": "string", "enum": ["content", "files"], "default": "content"},
            "file_glob": {"type": "string", "minLength": 1, "description": "Only files matching this glob ('*.py')"},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50},
            "context": {"type": "integer", "minimum": 0, "maximum": 10, "default": 0,
                        "description": "Lines of context before and after each match"},
            "case_insensitive": {"type": "boolean", "default": False},
            "literal": {"type": "boolean", "default": False, "description": "Treat pattern as plain text"},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
}  # fmt: skip


def ripgrep() -> str | None:
    """The rg executable, unless missing or disabled with ``HERMES_NO_RG``."""
    if os.environ.get("HERMES_NO_RG", "").strip().lower() not in ("", "0", "false", "no"):
        return None
    import shutil  # the process machinery is imported on first use, not when discovery imports the tool

    return shutil.which("rg")


def time_limit(kw: dict[str, Any]) -> float:
    """``file.search_time_limit`` (seconds), else :data:`TIME_LIMIT`."""
    value = file_setting(kw, "file.search_time_limit")
    if value is None:
        return TIME_LIMIT
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_TIME_LIMIT:
        raise ConfigError(f"file.search_time_limit must be a number of seconds above 0 and at most {MAX_TIME_LIMIT:g}")
    return float(value)


def _cancel_flag(kw: dict[str, Any]) -> Callable[[], bool] | None:
    session = session_of(kw)
    if session is None:
        return None
    return lambda: bool(getattr(session, "interrupted", False))


class Scope:
    """What one search shares: its root, its limits, the protected files' identities, venv folders.

    A plain class: discovery imports this module at start-up, where a dataclass costs about a millisecond."""

    __slots__ = ("identities", "limits", "root", "venvs")

    def __init__(self, root: Path, limits: WalkLimits) -> None:
        self.root = root
        self.limits = limits
        self.identities = Identities()
        self.venvs: dict[Path, bool] = {}

    def visible(self, path: Path) -> bool:
        """Not sensitive (by name or as a hard link) and not inside a virtual environment."""
        if sensitive_for_reading(path, self.identities) is not None:
            return False
        for parent in path.parents:
            if parent == self.root or self.root not in parent.parents:
                break
            if parent not in self.venvs:
                self.venvs[parent] = (parent / "pyvenv.cfg").is_file()
            if self.venvs[parent]:
                return False
        return True

    @staticmethod
    def shown(path: Path) -> str:
        """The path as the result shows it: bytes that are not UTF-8 as ``\\xNN`` escapes, the rest whole."""
        text = display(path)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        return text

    def entry(self, path: Path, number: int, lines: dict[int, str], context: int) -> dict[str, Any]:
        from hermes.tools.file.walk import clip

        item: dict[str, Any] = {"file": self.shown(path), "line": number, "text": clip(lines[number])}
        if context:
            before = range(number - context, number)
            after = range(number + 1, number + context + 1)
            item["before"] = [{"line": n, "text": clip(lines[n])} for n in before if n in lines]
            item["after"] = [{"line": n, "text": clip(lines[n])} for n in after if n in lines]
        return item


# -- pure Python -------------------------------------------------------------------------------------------------
def _python_walk(scope: Scope, args: dict[str, Any]) -> Iterator[Path]:
    glob = args.get("file_glob")
    from hermes.tools.file.walk import glob_matches, parent_ignores, walk_files

    root = scope.root
    for path in walk_files(root, scope.limits, parent_ignores(root) if root.is_dir() else []):
        if glob and not glob_matches(glob, path, root):
            continue
        if scope.visible(path):
            yield path


def _py_content(
    scope: Scope, regex: Any, args: dict[str, Any], max_results: int, context: int
) -> tuple[list[Any], bool]:
    """Matches found with the ``regex`` module; every match call gets the time that is left, so a
    pattern that backtracks catastrophically ends at the search's time limit."""
    from hermes.tools.file.walk import read_text_lines

    limits = scope.limits
    items: list[dict[str, Any]] = []
    for path in _python_walk(scope, args):
        lines = read_text_lines(path)
        if lines is None:
            continue
        for i, line in enumerate(lines):
            if i % 256 == 0 and limits.spent():
                return items, True
            try:
                found = regex.search(line, timeout=limits.left() or 1e-6)
            except TimeoutError:
                limits.stopped = "time limit"
                return items, True
            if found is None:
                continue
            if len(items) >= max_results:
                return items, True
            window = {n + 1: lines[n] for n in range(max(0, i - context), min(len(lines), i + context + 1))}
            items.append(scope.entry(path, i + 1, window, context))
    return items, limits.stopped is not None


def _name_filter(args: dict[str, Any], root: Path) -> Callable[[Path], bool]:
    pattern: str = args["pattern"]
    ci = bool(args.get("case_insensitive"))
    if _GLOB_CHARS & set(pattern):
        from hermes.tools.file.walk import glob_matches

        return lambda p: glob_matches(pattern, p, root, ci)
    needle = pattern.lower() if ci else pattern
    return lambda p: needle in (p.name.lower() if ci else p.name)


def _compile(args: dict[str, Any]) -> tuple[Any, str]:
    """The pattern compiled with the ``regex`` module (``re``'s syntax, plus a timeout per match), or
    (None, why it is not valid)."""
    import regex  # type: ignore[import-untyped]  # ~10 ms; only searches that need the Python engine pay it

    pattern: str = args["pattern"]
    flags = regex.V0 | (regex.IGNORECASE if args.get("case_insensitive") else 0)
    try:
        return regex.compile(regex.escape(pattern) if args.get("literal") else pattern, flags), ""
    except (regex.error, ValueError, OverflowError) as exc:
        return None, str(exc)


def _search_root(args: dict[str, Any]) -> Path:
    root = resolve_path(args.get("path") or ".")
    check_read(root)
    st = stat_or_none(root)
    if st is None:
        raise ToolError(f"'path': {args.get('path') or '.'} does not exist")
    if any(root == Path(v) or Path(v) in root.parents for v in VIRTUAL_DIRS):
        raise ToolError(f"'path': {root} is a kernel-provided tree; search_files does not search it")
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        raise ToolError(f"'path': {root} is not a folder or a regular file (a FIFO, socket or device); "
                        "search_files does not read it")
    return root


def _search_names(scope: Scope, args: dict[str, Any], rg: str | None, max_results: int) -> dict[str, Any]:
    keep = _name_filter(args, scope.root)
    if rg is not None:
        from hermes.tools.file import rg as ripgrep_engine

        try:
            files, truncated = ripgrep_engine.files(rg, scope, args, keep, max_results)
            return {"engine": "rg", "files": files, "count": len(files), "truncated": truncated}
        except ripgrep_engine.RgFailed:
            pass
    files, truncated = [], False
    for path in _python_walk(scope, args):
        if keep(path):
            if len(files) >= max_results:
                truncated = True
                break
            files.append(scope.shown(path))
    return {"engine": "python", "files": files, "count": len(files), "truncated": truncated}


def _search_content(scope: Scope, args: dict[str, Any], rg: str | None, max_results: int) -> dict[str, Any]:
    context = int(args.get("context") or 0)
    error = ""
    if rg is not None:
        from hermes.tools.file import rg as ripgrep_engine

        try:
            items, truncated = ripgrep_engine.content(rg, scope, args, max_results, context)
            return {"engine": "rg", "matches": items, "count": len(items), "truncated": truncated}
        except ripgrep_engine.RgFailed as exc:
            error = str(exc)
    regex, why = _compile(args)
    if regex is None:
        detail = error.splitlines()[-1] if error else why
        raise ToolError(f"'pattern' is not a valid regular expression: {detail}; set literal=true for plain text")
    items, truncated = _py_content(scope, regex, args, max_results, context)
    return {"engine": "python", "matches": items, "count": len(items), "truncated": truncated}


def search_files(args: dict[str, Any], **kw: Any) -> str:
    """Handler of ``search_files``."""
    from hermes.tools.file import remote
    from hermes.tools.file.walk import CANCELLED, WalkLimits

    target = args.get("target") or "content"
    max_results = int(args.get("max_results") or 50)
    backend = remote.backend_for(kw)
    if backend is not None:  # the files of the execution backend
        found = remote.search(backend, args, max_results)
        return json.dumps({"target": target, "pattern": args["pattern"], **found}, ensure_ascii=False)
    root = _search_root(args)
    scope = Scope(root, WalkLimits(time.monotonic() + time_limit(kw), cancelled=_cancel_flag(kw)))
    rg = ripgrep()
    result: dict[str, Any] = {"target": target, "pattern": args["pattern"], "path": scope.shown(root)}
    search = _search_names if target == "files" else _search_content
    result.update(search(scope, args, rg, max_results))
    stopped = scope.limits.stopped
    if stopped is not None:
        result["truncated"] = True
        result["stopped"] = stopped
    if result["truncated"]:
        if stopped == CANCELLED:
            why = "the search was cancelled (the turn was interrupted)"
        elif stopped:
            why = f"the search stopped at its {stopped}"
        else:
            why = f"more than {max_results} results exist"
        result["note"] = f"results are capped: {why}; narrow the search (path, file_glob) or raise max_results"
    return json.dumps(result, ensure_ascii=False)


registry.register(
    name="search_files",
    toolset="file",
    schema=SEARCH_FILES_SCHEMA,
    handler=search_files,
    check_fn=backend_check(),
    requires_env=[],
)
