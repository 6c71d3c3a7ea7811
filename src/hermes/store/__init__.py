"""The hermes SQLite store (``HERMES_HOME/state.db``): connection, migrations and sessions."""

from hermes.store.db import connect
from hermes.store.migrations import MIGRATIONS, migrate, schema_version
from hermes.store.sessions import SearchHit, SessionInfo, SessionStore, fts_query, searchable_text

__all__ = [
    "MIGRATIONS",
    "SearchHit",
    "SessionInfo",
    "SessionStore",
    "connect",
    "fts_query",
    "migrate",
    "schema_version",
    "searchable_text",
]
