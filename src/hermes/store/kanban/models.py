"""What the board holds, as frozen values read from its rows."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass
from typing import Any

WORKSPACE_KINDS = ("scratch", "dir", "worktree")


@dataclass(frozen=True)
class Task:
    """One card on the board."""

    id: str
    title: str
    body: str
    assignee: str | None
    status: str
    priority: int
    created_by: str
    created_at: float
    updated_at: float
    idempotency_key: str | None
    workspace_kind: str
    workspace_path: str | None
    block_kind: str | None
    block_reason: str | None
    result: str | None
    current_run_id: int | None
    claimed_by: str | None
    last_heartbeat_at: float | None
    failures: int
    #: after a failed run: not claimed before this time (exponential backoff)
    retry_at: float | None
    #: who asked for it, to tell them about its transitions: ``session:<id>`` or ``chat:<platform>:<chat>:<thread>``
    origin: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Run:
    """One attempt at a task: from its claim to its outcome."""

    id: int
    task_id: str
    attempt: int
    profile: str | None
    claimed_by: str
    started_at: float
    ended_at: float | None
    heartbeat_at: float | None
    outcome: str | None
    summary: str | None
    error: str | None
    cost_usd: float | None
    pid: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Event:
    """One entry of a task's append-only history."""

    id: int
    task_id: str
    kind: str
    actor: str
    author: str
    source: str | None
    target: str | None
    run_id: int | None
    payload: dict[str, Any]
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Comment:
    id: int
    task_id: str
    author: str
    body: str
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Attachment:
    id: int
    task_id: str
    filename: str
    content_type: str
    size: int
    source_url: str | None
    uploaded_by: str
    stored_path: str
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _fields(row: sqlite3.Row) -> dict[str, Any]:
    return dict(zip(row.keys(), tuple(row), strict=True))


def task_of(row: sqlite3.Row) -> Task:
    return Task(**_fields(row))


def run_of(row: sqlite3.Row) -> Run:
    return Run(**_fields(row))


def event_of(row: sqlite3.Row) -> Event:
    values = _fields(row)
    values["payload"] = json.loads(values["payload"])
    return Event(**values)


def comment_of(row: sqlite3.Row) -> Comment:
    return Comment(**_fields(row))


def attachment_of(row: sqlite3.Row) -> Attachment:
    return Attachment(**_fields(row))
