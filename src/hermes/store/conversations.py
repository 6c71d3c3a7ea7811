"""Live conversations' stored sessions, and the people a messaging gateway lets in (SQLite, ``state.db``).

:class:`ConversationStore` maps a conversation key (any text a surface chooses; the messaging gateway
uses ``platform:chat:thread``) to the session that conversation continues, so a restarted process
resumes each chat where it was. It also keeps the people admitted to the messaging gateway by pairing
(``platform`` + ``user_id``). Both tables come from migration ``m003_conversations``.
"""

from __future__ import annotations

import time

from hermes.store.db import SQLiteStore


class ConversationStore(SQLiteStore):
    """Conversation keys → session ids, and the messaging gateway's admitted people."""

    # -- conversations -----------------------------------------------------------------------------

    def session_for(self, key: str) -> str | None:
        """The session ``key`` continues, or None (never seen, or reset)."""
        with self._reading("read a conversation") as conn:
            row = conn.execute("SELECT session_id FROM conversations WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row["session_id"])

    def bind(self, key: str, session_id: str) -> None:
        """From now on ``key`` continues ``session_id``."""
        with self._writing("store a conversation") as conn:
            conn.execute(
                "INSERT INTO conversations (key, session_id, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT(key) DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at",
                (key, session_id, time.time()),
            )

    def key_for(self, session_id: str) -> str | None:
        """The conversation that continues ``session_id`` now, or None."""
        with self._reading("read a conversation") as conn:
            row = conn.execute("SELECT key FROM conversations WHERE session_id = ? ORDER BY updated_at DESC LIMIT 1",
                               (session_id,)).fetchone()
        return None if row is None else str(row["key"])

    def unbind(self, key: str) -> bool:
        """Forget which session ``key`` continues (its next message starts a new one); the session is kept."""
        with self._writing("reset a conversation") as conn:
            return conn.execute("DELETE FROM conversations WHERE key = ?", (key,)).rowcount > 0

    def count(self, prefix: str = "") -> int:
        """How many conversations have a key starting with ``prefix``."""
        with self._reading("count conversations") as conn:
            row = conn.execute("SELECT count(*) FROM conversations WHERE substr(key, 1, ?) = ?",
                               (len(prefix), prefix)).fetchone()
        return int(row[0])

    # -- admitted people ----------------------------------------------------------------------------

    def admit(self, platform: str, user_id: str, user_name: str | None = None, how: str = "pairing") -> None:
        with self._writing("admit a person") as conn:
            conn.execute(
                "INSERT INTO messaging_access (platform, user_id, user_name, granted_at, how) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(platform, user_id) DO UPDATE SET user_name = excluded.user_name",
                (platform, user_id, user_name, time.time(), how),
            )

    def is_admitted(self, platform: str, user_id: str) -> bool:
        with self._reading("check a person") as conn:
            row = conn.execute("SELECT 1 FROM messaging_access WHERE platform = ? AND user_id = ?",
                               (platform, user_id)).fetchone()
        return row is not None

    def revoke(self, platform: str, user_id: str) -> bool:
        with self._writing("revoke a person") as conn:
            return conn.execute("DELETE FROM messaging_access WHERE platform = ? AND user_id = ?",
                                (platform, user_id)).rowcount > 0

    def admitted(self, platform: str | None = None) -> list[tuple[str, str, str | None]]:
        """``(platform, user_id, user_name)`` of every admitted person (of ``platform`` when given)."""
        where, params = ("WHERE platform = ?", (platform,)) if platform else ("", ())
        with self._reading("list admitted people") as conn:
            rows = conn.execute(f"SELECT platform, user_id, user_name FROM messaging_access {where}"
                                " ORDER BY platform, user_id", params).fetchall()
        return [(r["platform"], r["user_id"], r["user_name"]) for r in rows]
