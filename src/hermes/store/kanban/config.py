"""The ``kanban.*`` keys of config.yaml, read once into :class:`KanbanConfig` (see docs/configuration.md),
and :meth:`KanbanConfig.open_board`, the one place a process opens its board."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hermes.config.reader import ConfigReader
from hermes.errors import ConfigError
from hermes.store.kanban.board import ATTACHMENT_MAX_BYTES, Board
from hermes.store.postgres import mask_url

#: a board file chosen by the dispatcher for its workers (wins over everything else)
DB_ENV = "HERMES_KANBAN_DB"
#: a PostgreSQL board's URL, instead of writing the password into config.yaml (wins over kanban.database_url)
URL_ENV = "HERMES_KANBAN_DATABASE_URL"


#: what a chat hears about the tasks it asked for, by default: finished, waiting for review, stuck
NOTIFY_DEFAULT = ("done", "review", "blocked")


def _statuses(values: tuple[str, ...], where: str) -> tuple[str, ...]:
    from hermes.store.kanban.states import STATUSES

    wrong = [v for v in values if v not in STATUSES]
    if wrong:
        raise ConfigError(f"{where} in config.yaml: {', '.join(wrong)} is not a status (one of {', '.join(STATUSES)})")
    return values


def _database_url(value: str | None, where: str) -> str | None:
    if not value:
        return None
    if urlsplit(value).scheme.lower() not in ("postgresql", "postgres"):
        raise ConfigError(f"{where} must be a postgresql:// URL, not {mask_url(value)!r}")
    return value


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
    #: ``hermes gateway run`` also dispatches ready tasks (one more dispatcher, inside the gateway process)
    gateway_dispatch: bool = False
    #: the statuses a task's creating chat is told about by the messaging gateway (empty: no notices)
    notify: tuple[str, ...] = NOTIFY_DEFAULT
    #: most seconds between the gateway's kanban passes (a task becoming ready or a worker ending wakes it)
    gateway_interval_s: float = 5.0
    #: a PostgreSQL board shared by several machines (None: the SQLite file HERMES_HOME/kanban.db)
    database_url: str | None = field(default=None, repr=False)

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
            gateway_dispatch=read.flag("gateway_dispatch", False),
            notify=_statuses(read.strings("notify", NOTIFY_DEFAULT), read.name("notify")),
            gateway_interval_s=read.number("gateway_interval_seconds", 5.0, minimum=0.1),
            database_url=_database_url(read.text("database_url"), "kanban.database_url in config.yaml"),
        )

    def open_board(self, environ: Mapping[str, str] | None = None) -> Board:
        """The board this process works on: the file in ``HERMES_KANBAN_DB`` (a dispatcher's worker), else
        PostgreSQL at ``HERMES_KANBAN_DATABASE_URL`` or ``kanban.database_url``, else ``HERMES_HOME/kanban.db``."""
        env = os.environ if environ is None else environ
        cap = self.attachment_max_bytes
        path = env.get(DB_ENV)
        if path:
            return Board(Path(path), attachment_max_bytes=cap)
        url = _database_url(env.get(URL_ENV), URL_ENV) or self.database_url
        if url:
            import importlib.util

            if importlib.util.find_spec("psycopg") is None:
                raise ConfigError("kanban.database_url needs the psycopg package: pip install 'hermes[kanban-pg]'")
            from hermes.config.paths import hermes_home
            from hermes.store.kanban.pg import PgBoard

            return PgBoard(url, files=hermes_home() / "kanban", attachment_max_bytes=cap)
        return Board.open_default(attachment_max_bytes=cap)
