"""``search_files`` — search file contents (a regular expression) or file names (a glob).

ripgrep (``rg --json``) does the work when it is installed; otherwise, or with ``HERMES_NO_RG=1`` in
the environment, the pure-Python walker of :mod:`.walk` does, following the same rules and returning
the same result shape (``engine`` says which ran). Hidden files are searched; ``.git``,
``node_modules``, virtual environments and tool caches are skipped, ``.gitignore`` is honoured, binary
files are skipped, sensitive files (private keys, hermes's ``.env``…) never appear, and results are
capped at ``max_results`` with ``truncated: true`` when more exist.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError
from hermes.tools.paths import (
    VIRTUAL_DIRS,
    check_read,
    display,
    resolve_path,
    sensitive_for_reading,
    stat_or_none,
)
from hermes.tools.registry import registry

if TYPE_CHECKING:  # the walker is imported by the functions that use it: discovery imports this module
    from hermes.tools.file.walk import WalkLimits

TIME_LIMIT = 30.0
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


class _RgFailed(Exception):
    """ripgrep could not run this search (e.g. a regex feature it lacks); the Python path takes over."""


def ripgrep() -> str | None:
    """The rg executable, unless missing or disabled with ``HERMES_NO_RG``."""
    if os.environ.get("HERMES_NO_RG", "").strip().lower() not in ("", "0", "false", "no"):
        return None
    import shutil  # the process machinery is imported on first use, not when discovery imports the tool

    return shutil.which("rg")


def _visible(path: Path, root: Path, venvs: dict[Path, bool]) -> bool:
    """Not sensitive and not inside a virtual environment (ripgrep cannot tell those by name)."""
    if sensitive_for_reading(path) is not None:
        return False
    for parent in path.parents:
        if parent == root or root not in parent.parents:
            break
        if parent not in venvs:
            venvs[parent] = (parent / "pyvenv.cfg").is_file()
        if venvs[parent]:
            return False
    return True


def _entry(shown: str, number: int, lines: dict[int, str], context: int) -> dict[str, Any]:
    from hermes.tools.file.walk import clip

    item: dict[str, Any] = {"file": shown, "line": number, "text": clip(lines[number])}
    if context:
        item["before"] = [{"line": n, "text": clip(lines[n])} for n in range(number - context, number) if n in lines]
        item["after"] = [
            {"line": n, "text": clip(lines[n])} for n in range(number + 1, number + context + 1) if n in lines
        ]
    return item


# -- ripgrep ---------------------------------------------------------------------------------------------------
def _rg_base(rg: str, root: Path, args: dict[str, Any]) -> list[str]:
    cmd = [rg, "--hidden", "--no-require-git", "--no-config", "--sort", "path", "--no-messages"]
    from hermes.tools.file.walk import MAX_FILE_BYTES, SKIP_DIRS

    cmd += ["--max-filesize", str(MAX_FILE_BYTES)]
    for name in sorted(SKIP_DIRS):
        cmd += ["-g", f"!{name}/"]
    for virtual in VIRTUAL_DIRS:
        if root in Path(virtual).parents:
            cmd += ["-g", f"!/{Path(virtual).relative_to(root).as_posix()}/"]
    if args.get("file_glob"):
        cmd += ["-g", args["file_glob"]]
    return cmd


def _run_lines(cmd: list[str], consume: Callable[[str], bool]) -> tuple[int | None, str, bool]:
    """Run ``cmd``, feed stdout lines to ``consume`` until it returns False; (rc, stderr, stopped early)."""
    import subprocess
    import tempfile
    import threading

    if any("\x00" in part for part in cmd):
        raise _RgFailed("NUL character in the arguments")
    with tempfile.TemporaryFile() as err, subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True, encoding="utf-8",
        errors="replace",
    ) as proc:  # fmt: skip
        timer = threading.Timer(TIME_LIMIT, proc.kill)
        timer.start()
        stopped = False
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if not consume(line):
                    stopped = True
                    proc.kill()
                    break
        finally:
            timer.cancel()
            proc.wait()
        err.seek(0)
        return proc.returncode, err.read().decode("utf-8", "replace"), stopped


def _rg_text(obj: dict[str, Any]) -> str:
    if "text" in obj:
        return str(obj["text"])
    import base64

    try:
        return base64.b64decode(str(obj.get("bytes", ""))).decode("utf-8", errors="replace")
    except ValueError:
        return "[undecodable bytes]"


def _rg_content(
    rg: str, root: Path, args: dict[str, Any], max_results: int, context: int
) -> tuple[list[Any], bool, str | None]:
    cmd = [*_rg_base(rg, root, args), "--json"]
    if args.get("case_insensitive"):
        cmd.append("-i")
    if args.get("literal"):
        cmd.append("-F")
    if context:
        cmd += ["-C", str(context)]
    cmd += ["-e", args["pattern"], "--", str(root)]
    items: list[dict[str, Any]] = []
    state: dict[str, Any] = {"lines": {}, "hits": [], "path": None, "more": False}
    venvs: dict[Path, bool] = {}

    def flush() -> None:
        path = state["path"]
        if path is not None and _visible(path, root, venvs):
            for number in state["hits"]:
                items.append(_entry(display(path), number, state["lines"], context))
        state.update(lines={}, hits=[], path=None)

    def consume(raw: str) -> bool:
        msg = json.loads(raw)
        kind, data = msg.get("type"), msg.get("data", {})
        if kind == "begin":
            state["path"] = Path(_rg_text(data["path"]))
        elif kind in ("match", "context"):
            number = data["line_number"]
            state["lines"][number] = _rg_text(data["lines"])
            if kind == "match":
                if len(items) + len(state["hits"]) >= max_results:
                    state["more"] = True
                    return False
                state["hits"].append(number)
        elif kind == "end":
            flush()
        return True

    rc, stderr, stopped = _run_lines(cmd, consume)
    flush()
    if rc == 2 and not items and not stopped:
        raise _RgFailed(stderr.strip())
    if rc is not None and rc < 0 and not stopped:
        return items, True, "time limit"
    return items, bool(state["more"]), None


def _rg_files(
    rg: str, root: Path, args: dict[str, Any], keep: Callable[[Path], bool], max_results: int
) -> tuple[list[str], bool, str | None]:
    files: list[str] = []
    more = [False]
    venvs: dict[Path, bool] = {}

    def consume(raw: str) -> bool:
        path = Path(raw.rstrip("\n"))
        if keep(path) and _visible(path, root, venvs):
            if len(files) >= max_results:
                more[0] = True
                return False
            files.append(display(path))
        return True

    rc, stderr, stopped = _run_lines([*_rg_base(rg, root, args), "--files", "--", str(root)], consume)
    if rc == 2 and not files and not stopped:
        raise _RgFailed(stderr.strip())
    if rc is not None and rc < 0 and not stopped:
        return files, True, "time limit"
    return files, more[0], None


# -- pure Python -------------------------------------------------------------------------------------------------
def _python_walk(root: Path, args: dict[str, Any], limits: WalkLimits) -> Iterator[Path]:
    glob = args.get("file_glob")
    venvs: dict[Path, bool] = {}
    from hermes.tools.file.walk import glob_matches, parent_ignores, walk_files

    for path in walk_files(root, limits, parent_ignores(root) if root.is_dir() else []):
        if glob and not glob_matches(glob, path, root):
            continue
        if _visible(path, root, venvs):
            yield path


def _py_content(
    root: Path, regex: re.Pattern[str], args: dict[str, Any], max_results: int, context: int
) -> tuple[list[Any], bool, str | None]:
    from hermes.tools.file.walk import WalkLimits, read_text_lines

    limits = WalkLimits(time.monotonic() + TIME_LIMIT)
    items: list[dict[str, Any]] = []
    for path in _python_walk(root, args, limits):
        lines = read_text_lines(path)
        if lines is None:
            continue
        shown = None
        for i, line in enumerate(lines):
            if regex.search(line) is None:
                continue
            if len(items) >= max_results:
                return items, True, None
            shown = shown or display(path)
            window = {n + 1: lines[n] for n in range(max(0, i - context), min(len(lines), i + context + 1))}
            items.append(_entry(shown, i + 1, window, context))
    return items, limits.stopped is not None, limits.stopped


def _name_filter(args: dict[str, Any], root: Path) -> Callable[[Path], bool]:
    pattern: str = args["pattern"]
    ci = bool(args.get("case_insensitive"))
    if _GLOB_CHARS & set(pattern):
        from hermes.tools.file.walk import glob_matches

        return lambda p: glob_matches(pattern, p, root, ci)
    needle = pattern.lower() if ci else pattern
    return lambda p: needle in (p.name.lower() if ci else p.name)


def _compile(args: dict[str, Any]) -> re.Pattern[str] | None:
    pattern: str = args["pattern"]
    flags = re.IGNORECASE if args.get("case_insensitive") else 0
    try:
        return re.compile(re.escape(pattern) if args.get("literal") else pattern, flags)
    except re.error:
        return None


def search_files(args: dict[str, Any], **kw: Any) -> str:
    """Handler of ``search_files``."""
    root = resolve_path(args.get("path") or ".")
    check_read(root)
    if stat_or_none(root) is None:
        raise ToolError(f"'path': {args.get('path') or '.'} does not exist")
    if any(root == Path(v) or Path(v) in root.parents for v in VIRTUAL_DIRS):
        raise ToolError(f"'path': {root} is a kernel-provided tree; search_files does not search it")
    target = args.get("target") or "content"
    max_results = int(args.get("max_results") or 50)
    context = int(args.get("context") or 0)
    rg = ripgrep()
    result: dict[str, Any] = {"target": target, "pattern": args["pattern"], "path": display(root)}
    stopped: str | None = None
    if target == "files":
        keep = _name_filter(args, root)
        files: list[str] | None = None
        if rg is not None:
            try:
                files, truncated, stopped = _rg_files(rg, root, args, keep, max_results)
                result["engine"] = "rg"
            except _RgFailed:
                files = None
        if files is None:
            from hermes.tools.file.walk import WalkLimits

            limits = WalkLimits(time.monotonic() + TIME_LIMIT)
            files = []
            truncated = False
            for path in _python_walk(root, args, limits):
                if keep(path):
                    if len(files) >= max_results:
                        truncated = True
                        break
                    files.append(display(path))
            stopped = limits.stopped
            truncated = truncated or stopped is not None
            result["engine"] = "python"
        result.update(files=files, count=len(files), truncated=truncated)
    else:
        regex = _compile(args)
        items: list[Any] | None = None
        error = ""
        if rg is not None:
            try:
                items, truncated, stopped = _rg_content(rg, root, args, max_results, context)
                result["engine"] = "rg"
            except _RgFailed as exc:
                error = str(exc)
        if items is None:
            if regex is None:
                detail = f": {error.splitlines()[-1]}" if error else ""
                raise ToolError(f"'pattern' is not a valid regular expression{detail}; set literal=true for plain text")
            items, truncated, stopped = _py_content(root, regex, args, max_results, context)
            result["engine"] = "python"
        result.update(matches=items, count=len(items), truncated=truncated)
    if result["truncated"]:
        why = f"the search stopped at its {stopped}" if stopped else f"more than {max_results} results exist"
        result["note"] = f"results are capped: {why}; narrow the search (path, file_glob) or raise max_results"
    return json.dumps(result, ensure_ascii=False)


registry.register(
    name="search_files",
    toolset="file",
    schema=SEARCH_FILES_SCHEMA,
    handler=search_files,
    check_fn=None,
    requires_env=[],
)
