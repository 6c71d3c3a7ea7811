"""``read_file`` — a page of a text file with line numbers.

Pages are ``limit`` lines (default 500) from ``offset`` (1-based), each line shown as ``     7|text``.
The result says how many lines the file has, whether more remain and the next offset. A page also
ends early when its text would not fit the tool's result budget, so a page is never cut by the
registry. Lines longer than :data:`MAX_LINE_CHARS` are shown cut with a marker; secrets (values of
secret-looking environment variables and common key shapes) are shown as ``***REDACTED***`` and the
result says ``redacted: true``. Binary files and images get a short description instead of content.

Every line shown verbatim counts toward the task's full-file baseline (see :mod:`.baseline`); cut or
redacted lines do not.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError
from hermes.redact import MASK, redact, secret_values
from hermes.tools.backends.availability import backend_check
from hermes.tools.file import MAX_LIMIT, PAGE_LINES
from hermes.tools.paths import check_read, display, resolve_path
from hermes.tools.registry import registry

if TYPE_CHECKING:
    from hermes.tools.file.content import Snapshot

MAX_LINE_CHARS = 2000
#: characters of JSON-escaped page text per result (the entry's own budget is a little larger)
PAGE_CHARS = 48_000
RESULT_BUDGET = 64_000

READ_FILE_SCHEMA: dict[str, Any] = {
    "name": "read_file",
    "description": (
        "Read a text file as numbered lines ('     7|text'), a page at a time: `offset` is the first line "
        f"(1-based), `limit` the number of lines (default {PAGE_LINES}). The result gives total_lines, `more` "
        "and next_offset; keep reading with next_offset while more is true to see the whole file. Secrets "
        "are shown as ***REDACTED*** (redacted: true); binary files and images are described, not shown. "
        "Reading every page of a file lets write_file overwrite it later (full_file_seen: true)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "File path (absolute, ~ or relative to cwd)"},
            "offset": {"type": "integer", "minimum": 1, "default": 1, "description": "First line to show (1-based)"},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": PAGE_LINES,
                "description": f"How many lines to show (default {PAGE_LINES}, at most {MAX_LIMIT})",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
}


def _describe_other(snap: Snapshot, shown: str) -> dict[str, Any]:
    from hermes.tools.file.content import image_size

    size = snap.version.size
    if snap.kind == "image":
        dims = image_size(snap.data, snap.detail)
        geometry = f", {dims[0]}x{dims[1]} pixels" if dims else ""
        return {
            "path": shown,
            "image": True,
            "format": snap.detail,
            "size_bytes": size,
            **({"width": dims[0], "height": dims[1]} if dims else {}),
            "description": (
                f"{snap.detail.upper()} image{geometry}, {size:,} bytes. read_file shows text only; "
                "use vision_analyze to look at the picture."
            ),
        }
    return {
        "path": shown,
        "binary": True,
        "size_bytes": size,
        "description": (
            f"binary file ({snap.detail}), {size:,} bytes. read_file shows text only; inspect it with the "
            "terminal (e.g. 'file', 'xxd | head') if you need to."
        ),
    }


def _json_len(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False))


def _page(
    lines: list[str], offset: int, limit: int, secrets: list[str]
) -> tuple[list[str], list[tuple[int, int]], list[int], list[int], int]:
    """Rendered lines, verbatim intervals, redacted and cut line numbers, and the last line shown."""
    rendered: list[str] = []
    shown: list[tuple[int, int]] = []
    redacted: list[int] = []
    cut: list[int] = []
    used = 0
    last = offset - 1
    for number in range(offset, min(len(lines), offset - 1 + limit) + 1):
        text = lines[number - 1]
        verbatim = True
        if len(text) > MAX_LINE_CHARS:
            text = f"{text[:MAX_LINE_CHARS]}… [line cut: {len(text) - MAX_LINE_CHARS:,} more characters]"
            cut.append(number)
            verbatim = False
        masked = redact(text, secrets)
        if masked != text:
            text = masked
            redacted.append(number)
            verbatim = False
        row = f"{number:>6}|{text}"
        cost = _json_len(row) - 1
        if rendered and used + cost > PAGE_CHARS:
            break
        rendered.append(row)
        used += cost
        last = number
        if verbatim:
            if shown and shown[-1][1] == number - 1:
                shown[-1] = (shown[-1][0], number)
            else:
                shown.append((number, number))
    return rendered, shown, redacted, cut, last


def read_file(args: dict[str, Any], **kw: Any) -> str:
    """Handler of ``read_file``."""
    from hermes.tools.file import remote
    from hermes.tools.file.baseline import tracker_for
    from hermes.tools.file.content import load  # not at module level: it imports hashlib

    offset = int(args.get("offset") or 1)
    limit = int(args.get("limit") or PAGE_LINES)
    backend = remote.backend_for(kw)
    if backend is None:
        path = resolve_path(args["path"])
        check_read(path)
        snap = load(path)
        shown_path = display(path)
        key = str(path)
    else:  # the file on the execution backend: the one its commands see
        where = remote.resolve(backend, args["path"])
        remote.check_read(backend, where)
        snap = remote.load(backend, where)
        shown_path = where
        key = remote.key(backend, where)
    tracker = tracker_for(kw)
    if snap.kind != "text":
        tracker.note_unreadable(key, snap.version, snap.kind)
        return json.dumps(_describe_other(snap, shown_path), ensure_ascii=False)

    lines = snap.lines
    total = len(lines)
    if offset > max(total, 1):
        raise ToolError(f"'offset' is {offset} but {shown_path} has only {total} lines")
    secrets = secret_values(os.environ)
    rendered, verbatim, redacted, cut, last = _page(lines, offset, limit, secrets)
    more = last < total
    result: dict[str, Any] = {
        "path": shown_path,
        "content": "\n".join(rendered),
        "offset": offset,
        "last_line": last,
        "total_lines": total,
        "more": more,
        "next_offset": last + 1 if more else None,
        "redacted": bool(redacted),
    }
    notes = []
    if last < min(total, offset - 1 + limit):
        notes.append(f"page ended at line {last} to stay within the result size; continue at next_offset")
    if cut:
        result["cut_lines"] = cut[:50]
        notes.append(f"{len(cut)} line(s) longer than {MAX_LINE_CHARS} characters are shown cut")
    if redacted:
        result["redacted_lines"] = redacted[:50]
        notes.append(
            f"secrets are shown as {MASK}; this file cannot be overwritten with write_file, edit it with patch "
            "(old_string must not include the masked parts)"
        )
    text = json.dumps(result["content"], ensure_ascii=False)
    if redact(text, secrets) != text:  # something the registry would mask on the way out
        result["redacted"] = True
        result["content"] = redact(result["content"], secrets)
        verbatim, redacted = [], redacted or [offset]
    hidden = {"redacted"} if result["redacted"] else set()
    if cut:
        hidden.add("cut")
    result["full_file_seen"] = tracker.note_read(key, snap.version, total, verbatim, hidden)
    if not result["full_file_seen"] and not more and not hidden and offset > 1:
        notes.append("earlier lines of this version were not all read; full_file_seen needs every page")
    if notes:
        result["notes"] = notes
    return json.dumps(result, ensure_ascii=False)


registry.register(
    name="read_file",
    toolset="file",
    schema=READ_FILE_SCHEMA,
    handler=read_file,
    check_fn=backend_check(),
    requires_env=[],
    max_result_chars=RESULT_BUDGET,
)
