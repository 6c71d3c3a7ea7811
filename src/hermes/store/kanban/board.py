"""The kanban board: :class:`Board`, tasks and everything hanging off them in one SQLite file.

Every write is one ``BEGIN IMMEDIATE`` transaction that checks the status it expects, so several
processes (people, orchestrators, workers, dispatchers) can share a board: a claim is a compare-and-swap
from ``ready`` to ``running``, and two claimers never get the same task. Every status change is checked
against the state machine table (:mod:`hermes.store.kanban.states`) and written with its event; a refused
operation changes nothing.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from hermes.errors import HermesError
from hermes.store.db import BUSY_TIMEOUT_MS, SQLiteStore, open_sqlite
from hermes.store.kanban.models import (
    WORKSPACE_KINDS,
    Attachment,
    Comment,
    Event,
    Run,
    Task,
    attachment_of,
    comment_of,
    event_of,
    run_of,
    task_of,
)
from hermes.store.kanban.schema import KANBAN_MIGRATIONS
from hermes.store.kanban.states import BLOCK_KINDS, FINISHED, KanbanError, transition

#: default cap on one attachment, in bytes
ATTACHMENT_MAX_BYTES = 25 * 1024 * 1024
MAX_TITLE = 300
MAX_BODY = 100_000
#: what a run can end as
OUTCOMES = ("completed", "review", "blocked", "failed", "stale", "archived", "reclaimed")


class TaskNotFound(KanbanError):
    """No task has that id."""


def _now() -> float:
    return time.time()


def _clean_filename(name: str) -> str:
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not base or base in (".", "..") or "\x00" in base:
        raise KanbanError(f"attachment filename {name!r} is not a usable file name")
    return base[:200]


class Board(SQLiteStore):
    """One board file (see the module docstring); safe to share between threads of one process."""

    def __init__(self, path: Path, *, files: Path | None = None,
                 attachment_max_bytes: int = ATTACHMENT_MAX_BYTES) -> None:
        self.path = path
        #: the board's name in messages (PostgreSQL: its URL with the password masked)
        self.label = str(path)
        #: where attachments and scratch workspaces live
        self.files = files if files is not None else path.parent / "kanban"
        self.attachment_max_bytes = attachment_max_bytes
        self._conn = open_sqlite(path, KANBAN_MIGRATIONS, busy_timeout_ms=BUSY_TIMEOUT_MS * 6, name="kanban board")
        self._lock = threading.RLock()

    @contextlib.contextmanager
    def _writing(self, action: str, *, serial: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction. ``serial=False`` marks the writes that may run beside others on a board
        with many writers (claims, heartbeats): SQLite has one writer at a time anyway."""
        with super()._writing(action) as conn:
            yield conn

    @property
    def wake_path(self) -> Path:
        """A file whose modification time changes whenever a task becomes ready (dispatchers watch it)."""
        return self.path.with_name(self.path.name + ".wake")

    def worker_env(self) -> dict[str, str]:
        """The variables a worker process needs to open this same board (``HERMES_KANBAN_DB``)."""
        return {"HERMES_KANBAN_DB": str(self.path)}

    def _wake(self, conn: Any) -> None:
        """Tell waiting dispatchers that a task became ready (called inside the write that made it so; a
        dispatcher that wakes at once waits for that transaction's lock before claiming)."""
        try:
            self.wake_path.touch()
        except OSError:  # dispatchers still poll every --interval seconds
            return

    def wake_mark(self) -> int:
        """The wake file's modification time in nanoseconds (0 before the first wake)."""
        try:
            return self.wake_path.stat().st_mtime_ns
        except OSError:
            return 0

    @classmethod
    def open_default(cls, *, attachment_max_bytes: int = ATTACHMENT_MAX_BYTES) -> Board:
        """The board of the current HERMES_HOME: ``kanban.db`` and the ``kanban/`` folder beside it."""
        from hermes.config.paths import hermes_home

        home = hermes_home()
        return cls(home / "kanban.db", files=home / "kanban", attachment_max_bytes=attachment_max_bytes)

    # ---- reading -------------------------------------------------------------------------------

    # dialect hooks: SQLite's one writer at a time needs no row locks (PostgreSQL: hermes.store.kanban.pg)
    def _lock_clause(self) -> str:
        """Appended to a write's ``SELECT`` of the task it changes: a row lock where writers run at once."""
        return ""

    def _claim_clause(self) -> str:
        """Appended to the claim's ``SELECT``: skip rows another claimer holds."""
        return ""

    def _limits_lock(self, conn: Any) -> None:
        """Make claims that count running tasks (the concurrency limits) one at a time."""

    def _task(self, conn: sqlite3.Connection, task_id: str) -> Task:
        row = conn.execute("SELECT * FROM tasks WHERE id = ?" + self._lock_clause(), (task_id,)).fetchone()
        if row is None:
            raise TaskNotFound(f"unknown task id {task_id!r}")
        return task_of(row)

    def get(self, task_id: str) -> Task:
        """The task ``task_id``; :class:`TaskNotFound` when there is none."""
        with self._reading("read a task") as conn:
            return self._task(conn, task_id)

    def tasks(self, *, status: str | None = None, assignee: str | None = None, include_archived: bool = False,
             limit: int = 200) -> list[Task]:
        """Tasks, highest priority first, then oldest first."""
        where, params = ["1 = 1"], []
        if status is not None:
            where.append("status = ?")
            params.append(status)
        elif not include_archived:
            where.append("status <> 'archived'")
        if assignee is not None:
            where.append("assignee = ?")
            params.append(assignee)
        sql = f"SELECT * FROM tasks WHERE {' AND '.join(where)} ORDER BY priority DESC, created_at, id LIMIT ?"
        with self._reading("list tasks") as conn:
            return [task_of(r) for r in conn.execute(sql, (*params, limit))]

    def parents(self, task_id: str) -> list[str]:
        with self._reading("read links") as conn:
            rows = conn.execute("SELECT parent_id FROM task_links WHERE child_id = ? ORDER BY parent_id", (task_id,))
            return [r[0] for r in rows]

    def children(self, task_id: str) -> list[str]:
        with self._reading("read links") as conn:
            rows = conn.execute("SELECT child_id FROM task_links WHERE parent_id = ? ORDER BY child_id", (task_id,))
            return [r[0] for r in rows]

    def events(self, task_id: str, *, limit: int = 1000) -> list[Event]:
        with self._reading("read events") as conn:
            self._task(conn, task_id)
            rows = conn.execute("SELECT * FROM task_events WHERE task_id = ? ORDER BY id DESC LIMIT ?",
                                (task_id, limit))
            return [event_of(r) for r in reversed(rows.fetchall())]

    def events_since(self, after_id: int, *, limit: int = 500) -> list[Event]:
        """Every task's events with an id above ``after_id``, oldest first (the messaging gateway's notices)."""
        with self._reading("read events") as conn:
            rows = conn.execute("SELECT * FROM task_events WHERE id > ? ORDER BY id LIMIT ?", (after_id, limit))
            return [event_of(r) for r in rows]

    def last_event_id(self) -> int:
        """The newest event's id (0 on an empty board)."""
        with self._reading("read events") as conn:
            return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM task_events").fetchone()[0])

    def runs(self, task_id: str | None = None) -> list[Run]:
        """The runs of ``task_id`` (all runs when None), oldest first."""
        with self._reading("read runs") as conn:
            if task_id is None:
                return [run_of(r) for r in conn.execute("SELECT * FROM task_runs ORDER BY id")]
            self._task(conn, task_id)
            rows = conn.execute("SELECT * FROM task_runs WHERE task_id = ? ORDER BY id", (task_id,))
            return [run_of(r) for r in rows]

    def run(self, run_id: int) -> Run:
        """The run ``run_id``; :class:`KanbanError` when there is none."""
        with self._reading("read a run") as conn:
            row = conn.execute("SELECT * FROM task_runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise KanbanError(f"unknown run id {run_id}")
            return run_of(row)

    def comments(self, task_id: str) -> list[Comment]:
        with self._reading("read comments") as conn:
            self._task(conn, task_id)
            rows = conn.execute("SELECT * FROM task_comments WHERE task_id = ? ORDER BY id", (task_id,))
            return [comment_of(r) for r in rows]

    def attachments(self, task_id: str) -> list[Attachment]:
        with self._reading("read attachments") as conn:
            self._task(conn, task_id)
            rows = conn.execute("SELECT * FROM task_attachments WHERE task_id = ? ORDER BY id", (task_id,))
            return [attachment_of(r) for r in rows]

    # ---- helpers inside a write ----------------------------------------------------------------

    def _event(self, conn: sqlite3.Connection, task_id: str, kind: str, actor: str, author: str, *,
               source: str | None = None, target: str | None = None, run_id: int | None = None,
               **payload: Any) -> None:
        conn.execute(
            "INSERT INTO task_events (task_id, kind, actor, author, source, target, run_id, payload, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (task_id, kind, actor, author, source, target, run_id,
             json.dumps(payload, ensure_ascii=False, sort_keys=True), _now()),
        )

    def _open_parents(self, conn: sqlite3.Connection, task_id: str) -> int:
        marks = ",".join("?" * len(FINISHED))
        row = conn.execute(
            f"SELECT COUNT(*) FROM task_links l JOIN tasks p ON p.id = l.parent_id"
            f" WHERE l.child_id = ? AND p.status NOT IN ({marks})", (task_id, *sorted(FINISHED))).fetchone()
        return int(row[0])

    def _set_status(self, conn: sqlite3.Connection, task: Task, target: str, actor: str, author: str, *,
                    run_id: int | None = None, **fields: Any) -> Task:
        """Move ``task`` to ``target`` (checked against the table), with its event; then keep children right."""
        row = transition(task.status, target, actor)
        if target != "blocked":
            fields.setdefault("block_kind", None)
            fields.setdefault("block_reason", None)
        sets = ", ".join(f"{k} = ?" for k in ("status", "updated_at", *fields))
        changed = conn.execute(f"UPDATE tasks SET {sets} WHERE id = ? AND status = ? RETURNING *",
                               (target, _now(), *fields.values(), task.id, task.status)).fetchone()
        if changed is None:  # pragma: no cover - the write transaction holds the lock
            raise KanbanError(f"task {task.id} changed while it was being moved")
        if target == "ready":
            self._wake(conn)
        extra = {k: v for k, v in fields.items() if k in ("block_kind", "block_reason") and v is not None}
        self._event(conn, task.id, row.action, actor, author, source=task.status, target=target,
                    run_id=run_id, **extra)
        if target in FINISHED:
            self._promote_children(conn, task.id)
        return task_of(changed)

    def _promote_children(self, conn: sqlite3.Connection, task_id: str) -> None:
        rows = conn.execute("SELECT t.* FROM task_links l JOIN tasks t ON t.id = l.child_id"
                            " WHERE l.parent_id = ? AND t.status = 'todo'", (task_id,)).fetchall()
        for child in map(task_of, rows):
            if self._open_parents(conn, child.id) == 0:
                self._set_status(conn, child, "ready", "board", "board")

    def _end_run(self, conn: sqlite3.Connection, task: Task, outcome: str, *, summary: str | None = None,
                 error: str | None = None, cost_usd: float | None = None) -> int | None:
        run_id = task.current_run_id
        if run_id is not None:
            conn.execute("UPDATE task_runs SET ended_at = ?, outcome = ?, summary = ?, error = ?,"
                         " cost_usd = COALESCE(?, cost_usd) WHERE id = ? AND ended_at IS NULL",
                         (_now(), outcome, summary, error, cost_usd, run_id))
        return run_id

    # ---- creating and linking ------------------------------------------------------------------

    def create(self, title: str, *, created_by: str, actor: str = "person", assignee: str | None = None,
               body: str = "", priority: int = 0, parents: Sequence[str] = (), triage: bool = False,
               idempotency_key: str | None = None, workspace_kind: str = "scratch",
               workspace_path: str | None = None, origin: str | None = None) -> tuple[Task, bool]:
        """A new task (``ready``, ``todo`` while a parent is open, ``triage`` when asked); ``(task, created)``.

        With an ``idempotency_key`` already used, the existing task is returned and ``created`` is False.
        """
        title = title.strip()
        if not title or len(title) > MAX_TITLE:
            raise KanbanError(f"a task needs a title of 1 to {MAX_TITLE} characters")
        if len(body) > MAX_BODY:
            raise KanbanError(f"the body is longer than {MAX_BODY} characters")
        if workspace_kind not in WORKSPACE_KINDS:
            raise KanbanError(f"workspace_kind must be one of {', '.join(WORKSPACE_KINDS)}, got {workspace_kind!r}")
        if workspace_kind == "scratch" and workspace_path:
            raise KanbanError("a scratch workspace is made by the board; give workspace_path only with dir or worktree")
        if workspace_kind != "scratch" and not (workspace_path and Path(workspace_path).is_absolute()):
            raise KanbanError(f"workspace_kind {workspace_kind} needs an absolute workspace_path")
        with self._writing("create a task") as conn:
            if idempotency_key is not None:
                row = conn.execute("SELECT * FROM tasks WHERE idempotency_key = ?", (idempotency_key,)).fetchone()
                if row is not None:
                    return task_of(row), False
            for parent in parents:
                self._task(conn, parent)
            task_id = "t_" + secrets.token_hex(4)
            now = _now()
            conn.execute(
                "INSERT INTO tasks (id, title, body, assignee, status, priority, created_by, created_at, updated_at,"
                " idempotency_key, workspace_kind, workspace_path, origin)"
                " VALUES (?, ?, ?, ?, 'todo', ?, ?, ?, ?, ?, ?, ?, ?)",
                (task_id, title, body, assignee, priority, created_by, now, now, idempotency_key, workspace_kind,
                 workspace_path, origin))
            for parent in dict.fromkeys(parents):
                conn.execute("INSERT INTO task_links (parent_id, child_id) VALUES (?, ?)", (parent, task_id))
            self._event(conn, task_id, "created", actor, created_by, target="todo", title=title,
                        assignee=assignee, priority=priority, parents=list(dict.fromkeys(parents)))
            task = self._task(conn, task_id)
            if triage:
                task = self._set_status(conn, task, "triage", "person" if actor == "person" else "orchestrator",
                                        created_by)
            elif self._open_parents(conn, task_id) == 0:
                task = self._set_status(conn, task, "ready", "board", "board")
            return task, True

    def link(self, parent_id: str, child_id: str, *, actor: str, author: str) -> None:
        """Make ``parent_id`` a parent of ``child_id``; a self-link or a cycle is refused."""
        if parent_id == child_id:
            raise KanbanError("a task cannot be its own parent")
        with self._writing("link tasks") as conn:
            self._task(conn, parent_id)
            child = self._task(conn, child_id)
            loop = conn.execute(
                "WITH RECURSIVE below(id) AS (SELECT CAST(? AS TEXT) UNION SELECT l.child_id FROM task_links l"
                " JOIN below b ON l.parent_id = b.id) SELECT 1 FROM below WHERE id = ?",
                (child_id, parent_id)).fetchone()
            if loop is not None:
                raise KanbanError(f"linking {parent_id} → {child_id} would make a cycle ({child_id} is already"
                                  f" above {parent_id})")
            cur = conn.execute("INSERT INTO task_links (parent_id, child_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                               (parent_id, child_id))
            if cur.rowcount == 0:
                return
            self._event(conn, child_id, "linked", actor, author, parent=parent_id)
            if child.status == "ready" and self._open_parents(conn, child_id) > 0:
                self._set_status(conn, child, "todo", "board", "board")

    # ---- moving --------------------------------------------------------------------------------

    def move(self, task_id: str, target: str, *, actor: str, author: str, reason: str | None = None,
             block_kind: str | None = None, expected: str | None = None) -> Task:
        """Move a task to ``target`` as ``actor`` (any row of the state machine, e.g. the person's CLI).

        With ``expected``, a task in another status is refused (``kanban_unblock`` only unblocks).
        """
        if target == "blocked":
            return self.block(task_id, reason or "blocked by hand", kind=block_kind or "needs_input", actor=actor,
                              author=author)
        with self._writing("move a task") as conn:
            task = self._task(conn, task_id)
            if expected is not None and task.status != expected:
                raise KanbanError(f"task {task_id} is {task.status}, not {expected}")
            if task.status == "blocked" and target == "ready" and self._open_parents(conn, task_id):
                target = "todo"
            outcome = {"archived": "archived", "ready": "reclaimed"}.get(target)
            run_id = self._end_run(conn, task, outcome, summary=reason) if task.status == "running" and outcome \
                else None
            fields: dict[str, Any] = {"retry_at": None} if target == "ready" else {}  # a person's "now"
            if task.status == "running":
                fields.update(current_run_id=None, claimed_by=None)
            return self._set_status(conn, task, target, actor, author, run_id=run_id, **fields)

    def block(self, task_id: str, reason: str, *, kind: str, actor: str, author: str) -> Task:
        """Block a task with a kind and a reason (a running task's run ends as ``blocked``)."""
        if kind not in BLOCK_KINDS:
            raise KanbanError(f"block kind must be one of {', '.join(BLOCK_KINDS)}, got {kind!r}")
        if not reason.strip():
            raise KanbanError("blocking needs a reason")
        with self._writing("block a task") as conn:
            task = self._task(conn, task_id)
            transition(task.status, "blocked", actor)
            run_id = self._end_run(conn, task, "blocked", summary=reason) if task.status == "running" else None
            return self._set_status(conn, task, "blocked", actor, author, run_id=run_id, block_kind=kind,
                                    block_reason=reason, current_run_id=None, claimed_by=None)

    def finish(self, task_id: str, target: str, *, actor: str, author: str, summary: str,
               result: str | None = None, cost_usd: float | None = None) -> Task:
        """End the running attempt as ``done`` (complete) or ``review`` (request review), recording the run."""
        if target not in ("done", "review"):
            raise KanbanError(f"a run finishes as done or review, not {target}")
        with self._writing("finish a task") as conn:
            task = self._task(conn, task_id)
            transition(task.status, target, actor)
            run_id = self._end_run(conn, task, "completed" if target == "done" else "review", summary=summary,
                                   cost_usd=cost_usd)
            return self._set_status(conn, task, target, actor, author, run_id=run_id, result=result or summary,
                                    current_run_id=None, claimed_by=None, failures=0, retry_at=None)

    def assign(self, task_id: str, assignee: str | None, *, actor: str, author: str) -> Task:
        """Give a task to a profile (or to nobody); a running task keeps its run until reconciled."""
        with self._writing("assign a task") as conn:
            task = self._task(conn, task_id)
            if task.status in FINISHED:
                raise KanbanError(f"task {task_id} is {task.status}; it can no longer be reassigned")
            conn.execute("UPDATE tasks SET assignee = ?, updated_at = ? WHERE id = ?", (assignee, _now(), task_id))
            self._event(conn, task_id, "assigned", actor, author, previous=task.assignee, assignee=assignee)
            return self._task(conn, task_id)

    # ---- dispatching ---------------------------------------------------------------------------

    def claim(self, claimer: str, *, assignees: Iterable[str] | None = None,
              task_id: str | None = None, exclude: Iterable[str] = (), max_running: int = 0,
              max_per_assignee: int = 0, now: float | None = None) -> tuple[Task, Run] | None:
        """Claim the best ready task (or ``task_id``) for ``claimer``: it becomes running with a new run.

        Highest priority first, then oldest; only assigned tasks (in ``assignees`` when given). None when
        nothing is ready; tasks in ``exclude`` are skipped. Atomic across processes: the status check and
        the update are one transaction, and so are the limits, which count every dispatcher's tasks:
        ``max_running`` tasks running on the whole board, ``max_per_assignee`` per profile (0: no limit).
        A task retried after a failure waits until its ``retry_at``.
        """
        names = list(assignees) if assignees is not None else None
        with self._writing("claim a task", serial=False) as conn:
            if max_running or max_per_assignee:
                self._limits_lock(conn)
            if max_running and conn.execute("SELECT COUNT(*) FROM tasks WHERE status = 'running'").fetchone()[0] \
                    >= max_running:
                return None
            sql = ("SELECT * FROM tasks WHERE status = 'ready' AND assignee IS NOT NULL"
                   " AND (retry_at IS NULL OR retry_at <= ?)")
            params: list[Any] = [_now() if now is None else now]
            if max_per_assignee:
                sql += (" AND assignee NOT IN (SELECT assignee FROM tasks WHERE status = 'running'"
                        " AND assignee IS NOT NULL GROUP BY assignee HAVING COUNT(*) >= ?)")
                params.append(max_per_assignee)
            if task_id is not None:
                sql += " AND id = ?"
                params.append(task_id)
            skipped = list(exclude)
            if skipped:
                sql += f" AND id NOT IN ({','.join('?' * len(skipped))})"
                params.extend(skipped)
            if names is not None:
                sql += f" AND assignee IN ({','.join('?' * len(names))})"
                params.extend(names)
            row = conn.execute(sql + " ORDER BY priority DESC, created_at, id LIMIT 1" + self._claim_clause(),
                               params).fetchone()
            if row is None:
                return None
            task = task_of(row)
            if self._open_parents(conn, task.id):
                self._set_status(conn, task, "todo", "board", "board")
                return None
            now = _now()
            run = run_of(conn.execute(  # attempt: one more than the task's runs so far
                "INSERT INTO task_runs (task_id, attempt, profile, claimed_by, started_at, heartbeat_at)"
                " SELECT ?, COUNT(*) + 1, ?, ?, ?, ? FROM task_runs WHERE task_id = ? RETURNING *",
                (task.id, task.assignee, claimer, now, now, task.id)).fetchone())
            task = self._set_status(conn, task, "running", "dispatcher", claimer, run_id=run.id,
                                    current_run_id=run.id, claimed_by=claimer, last_heartbeat_at=now)
            return task, run

    def set_run_pid(self, run_id: int, pid: int) -> None:
        with self._writing("record a worker pid", serial=False) as conn:
            conn.execute("UPDATE task_runs SET pid = ? WHERE id = ?", (pid, run_id))

    def heartbeat(self, task_id: str, *, author: str, note: str | None = None, now: float | None = None) -> Task:
        """The worker of a running task says it is alive (and optionally how it is doing)."""
        when = _now() if now is None else now
        with self._writing("record a heartbeat", serial=False) as conn:
            task = self._task(conn, task_id)
            if task.status != "running":
                raise KanbanError(f"task {task_id} is {task.status}, not running; a heartbeat needs a running task")
            conn.execute("UPDATE tasks SET last_heartbeat_at = ? WHERE id = ?", (when, task_id))
            conn.execute("UPDATE task_runs SET heartbeat_at = ? WHERE id = ?", (when, task.current_run_id))
            self._event(conn, task_id, "heartbeat", "worker", author, run_id=task.current_run_id,
                        **({"note": note} if note else {}))
            return self._task(conn, task_id)

    def fail_run(self, task_id: str, run_id: int, *, outcome: str, error: str, claimer: str,
                 max_failures: int, cost_usd: float | None = None, backoff_s: float = 0.0,
                 max_backoff_s: float = 3600.0, now: float | None = None) -> Task | None:
        """End run ``run_id`` of a still-running task as failed or stale: back to ready, or blocked (kind
        ``failed``) once the task has failed ``max_failures`` times. None when the run is no longer current.

        Back in ready, the task is not claimed again for ``backoff_s × 2^(failures - 1)`` seconds (at most
        ``max_backoff_s``).
        """
        if outcome not in ("failed", "stale"):
            raise KanbanError(f"a run fails as failed or stale, not {outcome}")
        with self._writing("fail a run") as conn:
            task = self._task(conn, task_id)
            if task.status != "running" or task.current_run_id != run_id:
                return None
            self._end_run(conn, task, outcome, error=error, cost_usd=cost_usd)
            failures = task.failures + 1
            common: dict[str, Any] = {"current_run_id": None, "claimed_by": None, "failures": failures}
            if failures >= max_failures:
                return self._set_status(conn, task, "blocked", "dispatcher", claimer, run_id=run_id,
                                        block_kind="failed", block_reason=f"gave up after {failures} failed runs:"
                                        f" {error}", **common)
            delay = min(backoff_s * 2 ** (failures - 1), max_backoff_s) if backoff_s > 0 else 0.0
            return self._set_status(conn, task, "ready", "dispatcher", claimer, run_id=run_id,
                                    retry_at=(_now() if now is None else now) + delay if delay else None, **common)

    def release(self, task_id: str, run_id: int, *, reason: str, claimer: str) -> Task | None:
        """Give a running task back to ready without counting a failure (its run ends ``reclaimed``), e.g.
        because it was reassigned while it ran. None when ``run_id`` is no longer its current run."""
        with self._writing("release a task") as conn:
            task = self._task(conn, task_id)
            if task.status != "running" or task.current_run_id != run_id:
                return None
            self._end_run(conn, task, "reclaimed", error=reason)
            return self._set_status(conn, task, "ready", "dispatcher", claimer, run_id=run_id, current_run_id=None,
                                    claimed_by=None)

    def stale_runs(self, timeout_s: float, *, now: float | None = None) -> list[Task]:
        """Running tasks whose last heartbeat is older than ``timeout_s``."""
        cutoff = (_now() if now is None else now) - timeout_s
        with self._reading("find stale tasks") as conn:
            rows = conn.execute("SELECT * FROM tasks WHERE status = 'running' AND last_heartbeat_at < ?", (cutoff,))
            return [task_of(r) for r in rows]

    # ---- comments and attachments --------------------------------------------------------------

    def comment(self, task_id: str, body: str, *, author: str, actor: str) -> int:
        if not body.strip():
            raise KanbanError("a comment needs a body")
        if len(body) > MAX_BODY:
            raise KanbanError(f"the comment is longer than {MAX_BODY} characters")
        with self._writing("add a comment") as conn:
            self._task(conn, task_id)
            cid = conn.execute("INSERT INTO task_comments (task_id, author, body, created_at) VALUES (?, ?, ?, ?)"
                               " RETURNING id", (task_id, author, body, _now())).fetchone()[0]
            self._event(conn, task_id, "commented", actor, author, comment_id=cid)
            return int(cid or 0)

    def attach(self, task_id: str, filename: str, data: bytes, *, uploaded_by: str, actor: str,
               content_type: str = "application/octet-stream", source_url: str | None = None) -> Attachment:
        """Store ``data`` as an attachment of the task (refused over :attr:`attachment_max_bytes`)."""
        from hermes.config.atomic import atomic_write

        name = _clean_filename(filename)
        if len(data) > self.attachment_max_bytes:
            raise KanbanError(f"attachment {name} is {len(data)} bytes, over the cap of {self.attachment_max_bytes}"
                              " bytes (kanban.attachment_max_bytes)")
        self.get(task_id)
        folder = self.files / "attachments" / task_id
        stored = folder / f"{secrets.token_hex(4)}-{name}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            atomic_write(stored, data)
        except OSError as exc:
            raise KanbanError(f"could not store attachment {name}: {exc}") from exc
        try:
            with self._writing("record an attachment") as conn:
                self._task(conn, task_id)
                aid = conn.execute(
                    "INSERT INTO task_attachments (task_id, filename, content_type, size, source_url, uploaded_by,"
                    " stored_path, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (task_id, name, content_type, len(data), source_url, uploaded_by, str(stored), _now())
                ).fetchone()[0]
                self._event(conn, task_id, "attached", actor, uploaded_by, attachment_id=aid, filename=name,
                            size=len(data))
                return attachment_of(conn.execute("SELECT * FROM task_attachments WHERE id = ?", (aid,)).fetchone())
        except HermesError:
            stored.unlink(missing_ok=True)
            raise
