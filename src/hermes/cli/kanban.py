"""``hermes kanban``: the person's view of the kanban board (requirement T-KAN; docs/cli.md#hermes-kanban).

``board`` lists tasks grouped by status; ``show``, ``runs`` and ``logs`` read one task; ``create``,
``move``, ``assign``, ``comment``, ``attach``, ``link`` and ``archive`` change the board as the
``person`` actor of the state machine (docs/tools/kanban.md).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.store.kanban.board import Board
    from hermes.store.kanban.config import KanbanConfig
    from hermes.store.kanban.models import Task


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="kanban_command", metavar="ACTION", required=True)
    sp = sub.add_parser("board", help="tasks grouped by status (archived ones with --all)")
    sp.add_argument("--status", help="only this status")
    sp.add_argument("--assignee", help="only this profile's tasks")
    sp.add_argument("--all", action="store_true", help="include archived tasks")
    sp.add_argument("--json", action="store_true", help="print JSON")
    sp = sub.add_parser("show", help="one task with its links, comments, attachments and runs")
    sp.add_argument("task")
    sp.add_argument("--json", action="store_true", help="print JSON")
    sp = sub.add_parser("create", help="create a task (ready, or todo while a parent is open)")
    sp.add_argument("title")
    sp.add_argument("--assignee", "-a", help="the profile that works on it")
    sp.add_argument("--body", "-b", default="", help="details")
    sp.add_argument("--priority", "-p", type=int, default=0, help="higher runs first (default 0)")
    sp.add_argument("--parent", action="append", dest="parents", default=[], metavar="ID",
                    help="a task that must finish first (repeatable)")
    sp.add_argument("--triage", action="store_true", help="put it in triage first")
    sp.add_argument("--key", dest="idempotency_key", help="idempotency key: the same key gives the same task")
    sp.add_argument("--workspace", choices=("scratch", "dir", "worktree"), default="scratch",
                    help="where the worker runs: a scratch folder (default), a folder, or a git worktree")
    sp.add_argument("--workspace-path", help="the folder (dir) or the git repository (worktree), absolute")
    sp.add_argument("--notify", metavar="PLATFORM:CHAT[:THREAD]",
                    help="tell this chat about the task's moves (done, review, blocked) while hermes gateway runs")
    sp.add_argument("--json", action="store_true", help="print JSON")
    sp = sub.add_parser("move", help="move a task to another status (as allowed for a person)")
    sp.add_argument("task")
    sp.add_argument("status")
    sp.add_argument("--reason", help="why (blocked: required)")
    sp.add_argument("--kind", default="needs_input", help="block kind (dependency, needs_input, capability, "
                                                          "transient)")
    sp = sub.add_parser("assign", help="give a task to a profile ('-' for nobody)")
    sp.add_argument("task")
    sp.add_argument("assignee")
    sp = sub.add_parser("comment", help="add a comment")
    sp.add_argument("task")
    sp.add_argument("body")
    sp = sub.add_parser("attach", help="attach a file (size cap kanban.attachment_max_bytes)")
    sp.add_argument("task")
    sp.add_argument("file")
    sp.add_argument("--type", dest="content_type", default="application/octet-stream", help="MIME type")
    sp = sub.add_parser("link", help="make PARENT a parent of CHILD (cycles are refused)")
    sp.add_argument("parent")
    sp.add_argument("child")
    for name, text in (("runs", "a task's runs (one per attempt)"), ("logs", "a task's event history")):
        sp = sub.add_parser(name, help=text)
        sp.add_argument("task")
        sp.add_argument("--json", action="store_true", help="print JSON")
    sub.add_parser("archive", help="archive a task").add_argument("task")
    sp = sub.add_parser("dispatch", help="run ready tasks: one worker agent per task (once, or --watch)")
    sp.add_argument("--watch", action="store_true", help="keep dispatching until Ctrl-C or SIGTERM")
    sp.add_argument("--interval", type=float, default=30.0, metavar="SECONDS",
                    help="--watch: most seconds between passes (default 30; a task becoming ready wakes it)")
    sp.add_argument("--max-parallel", type=int, metavar="N", help="workers at once (default kanban.max_parallel)")
    sp.add_argument("--json", action="store_true", help="print what the pass did as JSON")


def _print_json(data: Any) -> None:
    import json

    print(json.dumps(data, indent=2, ensure_ascii=False))


def _who() -> str:
    return os.environ.get("USER") or "person"


def _when(stamp: float | None) -> str:
    import time

    return "-" if stamp is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _chat_origin(notify: str | None) -> str | None:
    """``--notify telegram:123[:thread]`` as a task origin (``chat:telegram:123:thread``)."""
    if not notify:
        return None
    platform, _, rest = notify.partition(":")
    if not platform or not rest:
        raise SystemExit("hermes: error: --notify wants PLATFORM:CHAT or PLATFORM:CHAT:THREAD (e.g. telegram:12345)")
    return f"chat:{platform}:{rest}" if rest.count(":") else f"chat:{platform}:{rest}:"


def _board(board: Board, args: argparse.Namespace) -> int:
    from hermes.store.kanban.states import STATUSES

    tasks = board.tasks(status=args.status, assignee=args.assignee, include_archived=args.all, limit=10_000)
    if args.json:
        _print_json([t.to_dict() for t in tasks])
        return 0
    if not tasks:
        print("the board is empty" if args.status is None else f"no {args.status} tasks")
        return 0
    import shutil
    import time

    width = shutil.get_terminal_size((120, 40)).columns
    now = time.time()
    for status in STATUSES:
        group = [t for t in tasks if t.status == status]
        if not group:
            continue
        rows = [(t.id, f"p{t.priority}", t.assignee or "-", _age(now - t.updated_at), _note(t), t.title)
                for t in group]
        print(f"{status.upper()} ({len(group)})")
        print("\n".join(_table(("ID", "PRI", "ASSIGNEE", "UPDATED", "STATE", "TITLE"), rows, width)))
        print()
    return 0


def _note(task: Task) -> str:
    """What a row says besides its status: why it is blocked, who runs it, when it retries."""
    if task.status == "blocked":
        return f"{task.block_kind}: {task.block_reason or ''}".strip()
    if task.status == "running":
        return f"run {task.current_run_id} by {task.claimed_by or '?'}"
    if task.retry_at is not None and task.failures:
        return f"{task.failures} failure(s), retry {_when(task.retry_at)[11:]}"
    return ""


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds)}s ago"


def _table(head: tuple[str, ...], rows: Sequence[tuple[str, ...]], width: int) -> list[str]:
    """Columns padded to their widest cell; the last column (the title) is cut to the terminal's width."""
    widths = [max(len(cell) for cell in column) for column in zip(head, *rows, strict=True)]
    fixed = sum(widths[:-1]) + 2 * (len(widths) - 1) + 2
    room = max(20, width - fixed)
    out = []
    for row in (head, *rows):
        cells = [cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=False)]
        title = row[-1] if len(row[-1]) <= room else row[-1][: room - 1] + "…"
        out.append("  " + "  ".join([*cells, title]).rstrip())
    return out


def _show(board: Board, args: argparse.Namespace) -> int:
    task = board.get(args.task)
    parents, children = board.parents(task.id), board.children(task.id)
    comments, attachments, runs = board.comments(task.id), board.attachments(task.id), board.runs(task.id)
    if args.json:
        _print_json({"task": task.to_dict(), "parents": parents, "children": children,
                     "comments": [c.to_dict() for c in comments], "attachments": [a.to_dict() for a in attachments],
                     "runs": [r.to_dict() for r in runs]})
        return 0
    print(f"{task.id}  {task.title}")
    print(f"  status {task.status}" + (f" ({task.block_kind}: {task.block_reason})" if task.block_kind else ""))
    print(f"  assignee {task.assignee or '-'}  priority {task.priority}  created by {task.created_by}"
          f" at {_when(task.created_at)}")
    print(f"  workspace {task.workspace_kind}" + (f" {task.workspace_path}" if task.workspace_path else ""))
    if parents or children:
        print(f"  parents {', '.join(parents) or '-'}  children {', '.join(children) or '-'}")
    if task.body:
        print("\n" + task.body)
    for c in comments:
        print(f"\n  [{_when(c.created_at)}] {c.author}: {c.body}")
    for a in attachments:
        print(f"  attachment #{a.id} {a.filename} ({a.size} bytes, {a.content_type})")
    print(f"  runs: {len(runs)}" + (f", last {runs[-1].outcome or 'running'}" if runs else ""))
    if task.result:
        print(f"  result: {task.result}")
    return 0


def _runs(board: Board, args: argparse.Namespace) -> int:
    runs = board.runs(args.task)
    if args.json:
        _print_json([r.to_dict() for r in runs])
        return 0
    for r in runs:
        cost = f" ${r.cost_usd:.4f}" if r.cost_usd is not None else ""
        print(f"#{r.id} attempt {r.attempt} by {r.claimed_by} ({r.profile or '-'}) {_when(r.started_at)} → "
              f"{_when(r.ended_at)} {r.outcome or 'running'}{cost}" + (f": {r.summary}" if r.summary else "")
              + (f" [error: {r.error}]" if r.error else ""))
    if not runs:
        print("no runs yet")
    return 0


def _logs(board: Board, args: argparse.Namespace) -> int:
    events = board.events(args.task)
    if args.json:
        _print_json([e.to_dict() for e in events])
        return 0
    for e in events:
        move = f" {e.source or ''}→{e.target}" if e.target else ""
        details = " ".join(f"{k}={v}" for k, v in e.payload.items())
        print(f"{_when(e.created_at)} {e.kind}{move} by {e.author} ({e.actor}) {details}".rstrip())
    return 0


def _dispatch(board: Board, args: argparse.Namespace, cfg: KanbanConfig) -> int:
    import dataclasses
    import signal

    from hermes.agent.kanban import Dispatcher

    if args.max_parallel is not None:
        if args.max_parallel < 1:
            raise SystemExit("hermes: error: --max-parallel must be at least 1")
        cfg = dataclasses.replace(cfg, max_parallel=args.max_parallel)
    dispatcher = Dispatcher(board, cfg)
    if not args.watch:
        report = dispatcher.drain()
        if args.json:
            _print_json(dataclasses.asdict(report))
        else:
            print(f"started {len(report.started)}, finished {len(report.finished)}, failed {len(report.failed)},"
                  f" reclaimed {len(report.reclaimed)}")
        return 0

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        dispatcher.watch(args.interval)
    except KeyboardInterrupt:
        dispatcher.stop_all()
    return 0


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from hermes.cli.common import load_settings
    from hermes.errors import HermesError
    from hermes.store.kanban.config import KanbanConfig

    settings = load_settings(args)
    cfg = KanbanConfig.from_config(settings.config.data)
    board = cfg.open_board()
    action = args.kanban_command
    with board:
        if action == "dispatch":
            return _dispatch(board, args, cfg)
        readers = {"board": _board, "show": _show, "runs": _runs, "logs": _logs}
        if action in readers:
            return readers[action](board, args)
        who = _who()
        if action == "create":
            task, created = board.create(
                args.title, created_by=who, assignee=args.assignee, body=args.body, priority=args.priority,
                parents=args.parents, triage=args.triage, idempotency_key=args.idempotency_key,
                workspace_kind=args.workspace, workspace_path=args.workspace_path, origin=_chat_origin(args.notify))
            if args.json:
                _print_json({"task": task.to_dict(), "created": created})
            else:
                print(f"{task.id} {task.status}" + ("" if created else " (already created with that key)"))
        elif action == "move":
            task = board.move(args.task, args.status, actor="person", author=who, reason=args.reason,
                              block_kind=args.kind)
            print(f"{task.id} {task.status}")
        elif action == "archive":
            print(f"{board.move(args.task, 'archived', actor='person', author=who).id} archived")
        elif action == "assign":
            task = board.assign(args.task, None if args.assignee == "-" else args.assignee, actor="person",
                                author=who)
            print(f"{task.id} assigned to {task.assignee or 'nobody'}")
        elif action == "comment":
            print(f"comment #{board.comment(args.task, args.body, author=who, actor='person')} on {args.task}")
        elif action == "attach":
            path = Path(args.file)
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise HermesError(f"cannot read {path}: {exc.strerror or exc}") from None
            att = board.attach(args.task, path.name, data, uploaded_by=who, actor="person",
                               content_type=args.content_type)
            print(f"attachment #{att.id} {att.filename} ({att.size} bytes) on {args.task}")
        elif action == "link":
            board.link(args.parent, args.child, actor="person", author=who)
            print(f"{args.parent} → {args.child}")
    return 0
