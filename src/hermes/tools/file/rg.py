"""The ripgrep side of ``search_files``: the command line, one child process, its output records.

Content searches read ``rg --json`` (one JSON object a line; a path that is not UTF-8 comes as
base64 ``bytes`` and is decoded with the file system's own rules, so the file is found again); file
searches read ``rg --files --null`` (NUL after each name, so names holding newlines come back whole).
The child is ended — killed and reaped — whatever happens: enough results, the time limit, the turn
being cancelled (a watcher polls the session's flag), or an exception while reading. A search never
leaves an ``rg`` process behind.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from hermes.tools.file.walk import MAX_FILE_BYTES, SKIP_DIRS
from hermes.tools.paths import VIRTUAL_DIRS

if TYPE_CHECKING:
    from hermes.tools.file.search import Scope

#: how often the watcher looks at the deadline and the cancel flag (seconds)
_POLL = 0.05


class RgFailed(Exception):
    """ripgrep could not run this search (e.g. a regex feature it lacks); the Python path takes over."""


def _base(rg: str, root: Path, args: dict[str, Any]) -> list[str]:
    cmd = [rg, "--hidden", "--no-require-git", "--no-config", "--sort", "path", "--no-messages"]
    cmd += ["--max-filesize", str(MAX_FILE_BYTES)]
    for name in sorted(SKIP_DIRS):
        cmd += ["-g", f"!{name}/"]
    for virtual in VIRTUAL_DIRS:
        if root in Path(virtual).parents:
            cmd += ["-g", f"!/{Path(virtual).relative_to(root).as_posix()}/"]
    if args.get("file_glob"):
        cmd += ["-g", args["file_glob"]]
    return cmd


def _records(stream: IO[bytes], sep: bytes) -> Iterator[bytes]:
    """The ``sep``-terminated records of ``stream`` (a last unterminated one too), without ``sep``."""
    pending = b""
    while True:
        chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
        if not chunk:
            break
        pending += chunk
        *done, pending = pending.split(sep)
        yield from done
    if pending:
        yield pending


def run(cmd: list[str], consume: Callable[[bytes], bool], scope: Scope, sep: bytes) -> tuple[int | None, str, bool]:
    """Run ``cmd`` and feed its output records to ``consume`` until it returns False.

    Returns (exit status, stderr, stopped early by ``consume``). ``scope.limits`` records a time limit
    or a cancel; either kills the child.
    """
    if any("\x00" in part for part in cmd):
        raise RgFailed("NUL character in the arguments")
    limits = scope.limits
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL)
        finished = threading.Event()

        def watch() -> None:  # ends the child at the deadline or on cancel, even while no output comes
            while not finished.wait(_POLL):
                if limits.spent():
                    proc.kill()
                    return

        watcher = threading.Thread(target=watch, name="search-files-rg-watch", daemon=True)
        watcher.start()
        stopped = False
        try:
            assert proc.stdout is not None
            for record in _records(proc.stdout, sep):
                if limits.spent():
                    break
                if not consume(record):
                    stopped = True
                    break
        finally:
            finished.set()
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
            watcher.join()
        err.seek(0)
        return proc.returncode, err.read().decode("utf-8", "replace"), stopped


def _text(obj: dict[str, Any]) -> str:
    if "text" in obj:
        return str(obj["text"])
    try:
        return base64.b64decode(str(obj.get("bytes", ""))).decode("utf-8", errors="replace")
    except ValueError:
        return "[undecodable bytes]"


def _path(obj: dict[str, Any]) -> Path | None:
    """The path of an rg JSON ``path`` object, decoded as the file system names it (surrogateescape)."""
    if "text" in obj:
        return Path(str(obj["text"]))
    try:
        return Path(os.fsdecode(base64.b64decode(str(obj.get("bytes", "")))))
    except ValueError:
        return None


def content(rg: str, scope: Scope, args: dict[str, Any], max_results: int, context: int) -> tuple[list[Any], bool]:
    """Matches of ``args["pattern"]`` under ``scope.root``, and whether more exist."""
    cmd = [*_base(rg, scope.root, args), "--json"]
    if args.get("case_insensitive"):
        cmd.append("-i")
    if args.get("literal"):
        cmd.append("-F")
    if context:
        cmd += ["-C", str(context)]
    cmd += ["-e", args["pattern"], "--", str(scope.root)]
    items: list[dict[str, Any]] = []
    state: dict[str, Any] = {"lines": {}, "hits": [], "path": None, "more": False}

    def flush() -> None:
        path = state["path"]
        if path is not None and scope.visible(path):
            for number in state["hits"]:
                items.append(scope.entry(path, number, state["lines"], context))
        state.update(lines={}, hits=[], path=None)

    def consume(raw: bytes) -> bool:
        msg = json.loads(raw)
        kind, data = msg.get("type"), msg.get("data", {})
        if kind == "begin":
            state["path"] = _path(data["path"])
        elif kind in ("match", "context"):
            number = data["line_number"]
            state["lines"][number] = _text(data["lines"])
            if kind == "match":
                if len(items) + len(state["hits"]) >= max_results:
                    state["more"] = True
                    return False
                state["hits"].append(number)
        elif kind == "end":
            flush()
        return True

    rc, stderr, stopped = run(cmd, consume, scope, b"\n")
    flush()
    if rc == 2 and not items and not stopped and scope.limits.stopped is None:
        raise RgFailed(stderr.strip())
    return items, bool(state["more"])


def files(
    rg: str, scope: Scope, args: dict[str, Any], keep: Callable[[Path], bool], max_results: int
) -> tuple[list[str], bool]:
    """Files under ``scope.root`` whose name ``keep`` accepts, and whether more exist."""
    found: list[str] = []
    more = [False]

    def consume(raw: bytes) -> bool:
        path = Path(os.fsdecode(raw))
        if keep(path) and scope.visible(path):
            if len(found) >= max_results:
                more[0] = True
                return False
            found.append(scope.shown(path))
        return True

    cmd = [*_base(rg, scope.root, args), "--files", "--null", "--", str(scope.root)]
    rc, stderr, stopped = run(cmd, consume, scope, b"\x00")
    if rc == 2 and not found and not stopped and scope.limits.stopped is None:
        raise RgFailed(stderr.strip())
    return found, more[0]
