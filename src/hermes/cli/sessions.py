"""``hermes sessions`` — list, show, search, export or delete stored sessions.

The sessions live in the SQLite store (``HERMES_HOME/state.db``, see :mod:`hermes.store`). Every
action that takes an ID also takes a unique prefix of it (at least 4 characters). The top level imports
argparse only; the store is imported inside :func:`run`.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from hermes.cli.common import confirmed

if TYPE_CHECKING:
    from hermes.store import SessionStore

FORMATS = ("json", "jsonl", "markdown")
#: Lines of a tool result (and of a system prompt) that ``show`` prints before eliding the rest.
RESULT_LINES = 4
SYSTEM_LINES = 2
#: Characters of tool-call arguments ``show`` prints on one line.
ARGS_CHARS = 160


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "Without an action, 'hermes sessions' lists the recent sessions. Docs: docs/sessions.md"
    sub = parser.add_subparsers(dest="sessions_action", metavar="ACTION")

    p = sub.add_parser("list", help="list sessions, most recently updated first")
    p.add_argument("--limit", "-n", type=int, default=20, metavar="N", help="at most N sessions (20)")
    p.add_argument("--surface", metavar="S", help="only sessions of this surface (cli, cron, ...)")

    p = sub.add_parser("show", help="print a session's transcript")
    p.add_argument("id", metavar="ID", help="session id or a unique prefix of it")

    p = sub.add_parser("search", help="full-text search over stored messages")
    p.add_argument("query", metavar="QUERY", help='words to find; "quoted phrase", prefix*')
    p.add_argument("--limit", "-n", type=int, default=20, metavar="N", help="at most N hits (20)")
    p.add_argument("--surface", metavar="S", help="only sessions of this surface")

    p = sub.add_parser("delete", help="delete a session and its messages")
    p.add_argument("id", metavar="ID", help="session id or a unique prefix of it")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")

    p = sub.add_parser("export", help="write a session as JSON, JSON Lines or Markdown")
    p.add_argument("id", metavar="ID", help="session id or a unique prefix of it")
    p.add_argument("--format", "-f", choices=FORMATS, default="json",
                   help="json: session and messages; jsonl: one message per line; markdown: transcript")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE (atomically) instead of stdout")


def run(args: argparse.Namespace) -> int:
    from hermes.store import SessionStore

    action = getattr(args, "sessions_action", None) or "list"
    with SessionStore.open_default() as store:
        if action == "list":
            return _list(store, getattr(args, "limit", 20), getattr(args, "surface", None))
        if action == "show":
            print(render_transcript(store.export(args.id)), end="")
            return 0
        if action == "search":
            return _search(store, args.query, args.limit, args.surface)
        if action == "delete":
            return _delete(store, args.id, args.yes)
        if action == "export":
            return _export(store, args.id, args.format, args.output)
    raise AssertionError(f"unknown sessions action {action!r}")


# -- actions ----------------------------------------------------------------------------------------


def _list(store: SessionStore, limit: int, surface: str | None) -> int:
    import shutil

    sessions = store.list_sessions(limit=limit, surface=surface)
    if not sessions:
        print("No sessions stored yet." if surface is None else f"No sessions of surface {surface!r}.")
        return 0
    previews = store.previews([s.id for s in sessions if not s.title])
    width = shutil.get_terminal_size((120, 24)).columns
    surface_w = max(7, *(len(s.surface) for s in sessions))
    head = f"{'ID':<22}  {'UPDATED':<16}  {'SURFACE':<{surface_w}}  {'MSGS':>5}  "
    print(head + "TITLE")
    room = max(20, width - len(head))
    for s in sessions:
        title = s.title or previews.get(s.id) or "—"
        print(f"{s.id:<22}  {_when(s.updated_at):<16}  {s.surface:<{surface_w}}  {s.message_count:>5}  "
              + _one_line(title, room))
    return 0


def _search(store: SessionStore, query: str, limit: int, surface: str | None) -> int:
    hits = store.search(query, limit=limit, surface=surface)
    if not hits:
        print("No matches.")
        return 0
    for hit in hits:
        label = f" · {_one_line(hit.title, 40)}" if hit.title else ""
        print(f"{hit.session_id}  {_when(hit.created_at)}  {hit.role}{label}")
        print(f"    {_one_line(hit.snippet, 200)}")
    return 0


def _delete(store: SessionStore, session_id: str, yes: bool) -> int:
    import sys

    from hermes.errors import HermesError

    info = store.get_session(session_id)
    if not yes:
        if not sys.stdin.isatty():
            raise HermesError(f"not deleting session {info.id} without confirmation; pass --yes")
        label = f" {info.title!r}" if info.title else ""
        if not confirmed(f"Delete session {info.id}{label} ({info.message_count} messages)?"):
            print("Not deleted.")
            return 1
    store.delete_session(info.id)
    print(f"Deleted session {info.id}.")
    return 0


def _export(store: SessionStore, session_id: str, fmt: str, output: str | None) -> int:
    data = store.export(session_id)
    text = render_export(data, fmt)
    if output is None or output == "-":
        print(text, end="")
        return 0
    from pathlib import Path

    from hermes.config.atomic import atomic_write

    atomic_write(Path(output).expanduser(), text)
    print(f"Exported session {data['session']['id']} ({len(data['messages'])} messages) to {output}.")
    return 0


# -- rendering --------------------------------------------------------------------------------------


def render_export(data: dict[str, Any], fmt: str) -> str:
    """The text of an export in ``fmt`` (json, jsonl or markdown), ending with a newline."""
    import json

    if fmt == "json":
        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    if fmt == "jsonl":
        return "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in data["messages"])
    if fmt == "markdown":
        return render_markdown(data)
    raise ValueError(f"unknown export format {fmt!r}")


def render_transcript(data: dict[str, Any]) -> str:
    """A readable, compact transcript for the terminal (tool results and system prompts clipped)."""
    s: dict[str, Any] = data["session"]
    out = [f"Session {s['id']}" + (f" — {s['title']}" if s.get("title") else "")]
    out.append(f"{s['surface']} · {s['model']} · {s['message_count']} messages · "
               f"created {_when(s['created_at'])} · updated {_when(s['updated_at'])}")
    if s.get("toolsets"):
        out.append("toolsets: " + ", ".join(s["toolsets"]))
    if s.get("parent_id"):
        out.append(f"parent: {s['parent_id']}")
    names = _tool_names(data["messages"])
    for m in data["messages"]:
        role = str(m.get("role", "?"))
        text = _content_text(m.get("content"))
        if role == "tool":
            call_id = m.get("tool_call_id")
            name = m.get("name") or names.get(str(call_id), "tool")
            out.append(f"\n── tool result: {name}" + (f" ({call_id})" if call_id else "") + " ──")
            out.append(_clip_lines(text, RESULT_LINES))
            continue
        out.append(f"\n── {role} ──")
        if text:
            out.append(_clip_lines(text, SYSTEM_LINES) if role in ("system", "developer") else text)
        for call in m.get("tool_calls") or ():
            fn = call.get("function") or {}
            out.append(f"  → {fn.get('name', '?')}({_compact_args(fn.get('arguments'))})")
    return "\n".join(out) + "\n"


def render_markdown(data: dict[str, Any]) -> str:
    """The whole session as a Markdown document (nothing clipped)."""
    import json

    s: dict[str, Any] = data["session"]
    out = [f"# {s.get('title') or 'Session ' + s['id']}", ""]
    for key in ("id", "surface", "model", "parent_id"):
        if s.get(key):
            out.append(f"- **{key}:** {s[key]}")
    out.append(f"- **created:** {_when(s['created_at'])}")
    out.append(f"- **updated:** {_when(s['updated_at'])}")
    if s.get("toolsets"):
        out.append("- **toolsets:** " + ", ".join(s["toolsets"]))
    names = _tool_names(data["messages"])
    for m in data["messages"]:
        role = str(m.get("role", "?"))
        text = _content_text(m.get("content"))
        if role == "tool":
            call_id = m.get("tool_call_id")
            name = m.get("name") or names.get(str(call_id), "tool")
            out += ["", f"## Tool result: {name}" + (f" (`{call_id}`)" if call_id else ""), "", _fenced(text)]
            continue
        out += ["", f"## {role.capitalize()}"]
        if text:
            out += ["", text]
        for call in m.get("tool_calls") or ():
            fn = call.get("function") or {}
            args = fn.get("arguments")
            try:
                parsed = json.loads(args) if isinstance(args, str) else args
                pretty = json.dumps(parsed, ensure_ascii=False, indent=2)
            except (TypeError, ValueError):
                pretty = str(args or "")
            call_id = f" (`{call['id']}`)" if call.get("id") else ""
            out += ["", f"**Tool call** `{fn.get('name', '?')}`{call_id}:", "", _fenced(pretty, "json")]
    return "\n".join(out) + "\n"


# -- helpers ----------------------------------------------------------------------------------------


def _when(ts: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(1, width - 1)] + "…"


def _content_text(content: Any) -> str:
    """Message content as text: strings as they are, parts joined, non-text parts as ``[type]``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                parts.append(text if isinstance(text, str) else f"[{part.get('type', 'part')}]")
        return "\n".join(parts)
    return str(content)


def _tool_names(messages: list[dict[str, Any]]) -> dict[str, str]:
    """tool_call_id → function name, from the assistant messages' tool calls."""
    names: dict[str, str] = {}
    for m in messages:
        for call in m.get("tool_calls") or ():
            if isinstance(call, dict) and call.get("id"):
                names[str(call["id"])] = str((call.get("function") or {}).get("name", "tool"))
    return names


def _compact_args(arguments: Any) -> str:
    import json

    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return _one_line(arguments, ARGS_CHARS)
    return _one_line(json.dumps(arguments, ensure_ascii=False, separators=(",", ":")), ARGS_CHARS)


def _clip_lines(text: str, max_lines: int) -> str:
    lines = text.splitlines() or [""]
    shown = [line if len(line) <= 200 else line[:199] + "…" for line in lines[:max_lines]]
    if len(lines) > max_lines:
        shown.append(f"… ({len(lines) - max_lines} more lines)")
    return "\n".join(shown)


def _fenced(text: str, lang: str = "") -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"

