"""``patch`` — replace one exact (or whitespace-tolerant) occurrence of text in a file.

The match strategies live in :mod:`.matching`: exact first, then ignoring trailing whitespace,
ignoring indentation (the replacement takes the file's indentation) and normalised whitespace. An
ambiguous match is refused. The file is written atomically, keeping its mode, line endings and BOM.
The result names the strategy, the line(s) changed and a capped unified diff.

patch needs no baseline (partial edits are always allowed), but it only moves an existing baseline
along: a patch to a file the task has not read in full leaves it without one (see :mod:`.baseline`).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolError
from hermes.tools.backends.availability import backend_check
from hermes.tools.registry import registry

if TYPE_CHECKING:
    from hermes.tools.file.baseline import Version

PATCH_SCHEMA: dict[str, Any] = {
    "name": "patch",
    "description": (
        "Edit a file by replacing old_string with new_string. old_string must match exactly one place "
        "(copy it from read_file output without the line-number prefix, with enough surrounding lines to "
        "be unique); if no exact match exists, matches ignoring trailing whitespace, indentation or "
        "whitespace runs are tried, and the new text takes the file's indentation. Ambiguous matches are "
        "refused. Set replace_all=true to replace every occurrence. Returns the strategy used and a diff."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "File path (absolute, ~ or relative to cwd)"},
            "old_string": {"type": "string", "minLength": 1, "description": "The text to replace"},
            "new_string": {"type": "string", "description": "The replacement text (may be empty to delete)"},
            "replace_all": {
                "type": "boolean",
                "default": False,
                "description": "Replace every occurrence instead of requiring exactly one",
            },
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": False,
    },
}


def patch(args: dict[str, Any], **kw: Any) -> str:
    """Handler of ``patch``."""
    # imported here, not at module level: discovery imports this module at every start-up
    from hermes.config.atomic import atomic_write
    from hermes.redact import redact, secret_values
    from hermes.tools.file.baseline import path_lock, tracker_for
    from hermes.tools.file.content import load, version_of
    from hermes.tools.file.difftext import unified_diff
    from hermes.tools.file.matching import LABELS, plan_edit
    from hermes.tools.paths import check_write, display, resolve_path, stat_or_none

    raw = args["path"]
    old: str = args["old_string"]
    new: str = args["new_string"]
    replace_all = bool(args.get("replace_all") or False)
    if old == new:
        raise ToolError("'new_string' is identical to 'old_string'; there is nothing to change")
    from hermes.tools.file import remote

    backend = remote.backend_for(kw)
    if backend is None:
        path = resolve_path(raw)
        check_write(path, kw, raw, tool="patch")
        key, shown = str(path), display(path)
        found = stat_or_none(path) is not None
    else:  # the file on the execution backend
        shown = remote.resolve(backend, raw)
        remote.check_write(backend, shown)
        key = remote.key(backend, shown)
        found = remote.exists(backend, shown)
    if not found:
        raise ToolError(f"'path': {shown} does not exist; create it with write_file")
    tracker = tracker_for(kw)
    with path_lock(key):
        snap = load(path) if backend is None else remote.load(backend, shown)
        if snap.kind != "text":
            what = "an image" if snap.kind == "image" else f"a binary file ({snap.detail})"
            raise ToolError(f"'path': {shown} is {what}; patch edits text files only")
        before = snap.normalised_text()
        norm_old, norm_new = old, new
        if snap.crlf:
            norm_old, norm_new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
        plan = plan_edit(before, norm_old, norm_new, replace_all, shown)
        after = plan.apply(before)
        if after == before:
            raise ToolError("the replacement leaves the file unchanged; nothing was written")
        try:
            data = snap.encode(after)
        except UnicodeEncodeError as exc:
            raise ToolError(f"'new_string' cannot be encoded as UTF-8: {exc.reason}") from None
        if backend is not None:
            new_version: Version = remote.write(backend, shown, data)
        else:
            try:
                atomic_write(path, data)
                st = os.stat(path)
            except PermissionError:
                raise ToolError(f"'path': permission denied writing {path}") from None
            except OSError as exc:
                raise ToolError(f"'path': cannot write {path}: {exc.strerror or exc}") from None
            new_version = version_of(data, st)
        kept = tracker.note_patch(key, snap.version, new_version)
    head, tail = plan.edits[0].start, len(before) - plan.edits[-1].end
    diff, truncated = unified_diff(before, after, shown, head, tail)
    result: dict[str, Any] = {
        "path": shown,
        "strategy": plan.strategy,
        "strategy_description": LABELS[plan.strategy],
        "replacements": len(plan.edits),
        "lines": [e.line for e in plan.edits[:20]],
        "diff": redact(diff, secret_values(os.environ)),
        "diff_truncated": truncated,
        "full_file_seen": kept,
    }
    if plan.strategy in ("indentation", "whitespace"):
        result["note"] = "matched ignoring whitespace; new_string was re-indented to the file's indentation"
    return json.dumps(result, ensure_ascii=False)


registry.register(
    name="patch",
    toolset="file",
    schema=PATCH_SCHEMA,
    handler=patch,
    check_fn=backend_check(),
    requires_env=[],
)
