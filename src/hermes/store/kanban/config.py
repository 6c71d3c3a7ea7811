"""The ``kanban.*`` keys of config.yaml, read once into :class:`KanbanConfig` (see docs/configuration.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes.config.reader import ConfigReader
from hermes.store.kanban.board import ATTACHMENT_MAX_BYTES


@dataclass(frozen=True)
class KanbanConfig:
    attachment_max_bytes: int = ATTACHMENT_MAX_BYTES
    #: a running task whose worker has not sent a heartbeat for this long is reclaimed
    heartbeat_timeout_s: float = 900.0
    #: a worker's own activity records a heartbeat at most this often
    heartbeat_every_s: float = 60.0
    #: failed or stale runs after which a task is blocked (kind ``failed``)
    max_failures: int = 3
    #: tasks one dispatcher runs at once
    max_parallel: int = 2
    #: seconds a worker may run before the dispatcher stops it
    max_runtime_s: float = 3600.0
    #: tasks running on the whole board at once, all dispatchers together (0: no limit)
    max_running: int = 0
    #: tasks of one assignee running at once, all dispatchers together (0: no limit)
    max_per_assignee: int = 0
    #: first wait before a failed task is claimed again; doubles with each failure, up to max_backoff_s
    retry_backoff_s: float = 30.0
    max_backoff_s: float = 3600.0
    #: times a worker that ends its turn with its run still open is told to finish it
    nudges: int = 2

    @classmethod
    def from_config(cls, data: Mapping[str, Any]) -> KanbanConfig:
        """The ``kanban`` table of ``data`` (a whole config.yaml mapping); a bad value is a ConfigError."""
        read = ConfigReader(data).table("kanban")
        return cls(
            attachment_max_bytes=read.integer("attachment_max_bytes", ATTACHMENT_MAX_BYTES, minimum=1),
            heartbeat_timeout_s=read.number("heartbeat_timeout_seconds", 900.0, minimum=1.0),
            heartbeat_every_s=read.number("heartbeat_every_seconds", 60.0, minimum=0.0),
            max_failures=read.integer("max_failures", 3, minimum=1, maximum=100),
            max_parallel=read.integer("max_parallel", 2, minimum=1, maximum=256),
            max_runtime_s=read.number("max_runtime_seconds", 3600.0, minimum=1.0),
            max_running=read.integer("max_running", 0, minimum=0),
            max_per_assignee=read.integer("max_per_assignee", 0, minimum=0),
            retry_backoff_s=read.number("retry_backoff_seconds", 30.0, minimum=0.0),
            max_backoff_s=read.number("max_backoff_seconds", 3600.0, minimum=0.0),
            nudges=read.integer("nudges", 2, minimum=0, maximum=10),
        )
