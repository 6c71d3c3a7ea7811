"""Stored conversations: :class:`SessionStore` keeps sessions and their messages in SQLite.

Each message is kept exactly as the OpenAI chat message dict it was (JSON), next to the text that
search looks at: user and assistant content, tool results, and tool call names and arguments (system
prompts are not indexed). That text is indexed by an external-content FTS5 table, ranked with bm25.

One store holds one connection, shared by the agent's worker threads; a lock serialises its use.
Every sqlite failure surfaces as :class:`~hermes.errors.StoreError`.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from hermes.errors import SessionNotFound, StoreError
from hermes.store.db import SQLiteStore

#: The shortest id prefix :meth:`SessionStore.get_session` accepts.
MIN_PREFIX = 4
#: Markers around matched terms in :attr:`SearchHit.snippet`.
SNIPPET_OPEN = "**"
SNIPPET_CLOSE = "**"
SNIPPET_ELLIPSIS = "…"
SNIPPET_TOKENS = 16
#: Roles whose text is not indexed for search.
UNINDEXED_ROLES = frozenset({"system", "developer"})
#: Only the most recent this many matches are ranked (all when fewer pass the filters): common words stay fast.
RANK_WINDOW = 5000
_MAX_ROWID = 2**63 - 1
#: Where to look: a session's row ids, or a date range's (ids grow with time: a hint, not a filter); NULL: none.
_ROW_RANGE = ("SELECT CASE WHEN ?3 NOTNULL THEN (SELECT min(id) FROM messages WHERE session_id = ?3) WHEN ?1 ISNULL"
              " THEN 0 ELSE (SELECT id FROM messages WHERE created_at >= ?1 ORDER BY created_at LIMIT 1) END, CASE"
              " WHEN ?3 NOTNULL THEN (SELECT max(id) FROM messages WHERE session_id = ?3) WHEN ?2 ISNULL THEN ?4"
              " ELSE (SELECT id FROM messages WHERE created_at < ?2 ORDER BY created_at DESC LIMIT 1) END")
_DETAIL = ("SELECT m.id AS message_id, m.session_id, m.role, m.created_at, s.surface, s.title, snippet(messages_fts, 0,"
           " ?, ?, ?, ?) AS snippet FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON"
           " s.id = m.session_id WHERE messages_fts MATCH ? AND messages_fts.rowid IN ({marks})")

_TERM = re.compile(r'"([^"]*)"|([^\s"]+)')
_WORD = re.compile(r"\w", re.UNICODE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class SessionInfo:
    """One stored session, without its messages."""

    id: str
    created_at: float
    updated_at: float
    surface: str
    model: str
    title: str | None
    message_count: int
    toolsets: list[str]
    tools: list[str]
    parent_id: str | None
    meta: dict[str, Any]


@dataclass(frozen=True)
class SearchHit:
    """One message matching a search.

    ``score`` is bm25 negated: higher is a better match. ``snippet`` is a one-line excerpt with matched
    terms between :data:`SNIPPET_OPEN` and :data:`SNIPPET_CLOSE`.
    """

    session_id: str
    message_id: int
    role: str
    snippet: str
    score: float
    created_at: float
    surface: str
    title: str | None


def new_session_id(now: float | None = None) -> str:
    """A sortable, readable id: UTC date and time plus 6 random hex digits (``20261129-233455-a1b2c3``)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(3)}"


def searchable_text(message: dict[str, Any]) -> str:
    """The text of ``message`` that search indexes ('' for system prompts and messages without text)."""
    if message.get("role") in UNINDEXED_ROLES:
        return ""
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
    if isinstance(message.get("refusal"), str):
        parts.append(message["refusal"])
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name, arguments = function.get("name"), function.get("arguments")
            parts.extend(x if isinstance(x, str) else json.dumps(x) for x in (name, arguments) if x)
    return "\n".join(p for p in parts if p.strip())


def fts_query(query: str, *, any_term: bool = False) -> str:
    """Turn free text into a safe FTS5 query: every term quoted, so no input is FTS syntax.

    ``"a phrase"`` stays a phrase; a trailing ``*`` on a term is kept as a prefix search; terms with
    no letters or digits are dropped. Terms are ANDed (ORed with ``any_term``). '' when nothing is left.
    """
    terms: list[str] = []
    for match in _TERM.finditer(_CONTROL.sub(" ", query)):
        phrase, word = match.group(1), match.group(2)
        text = phrase if phrase is not None else word.replace('"', "")
        prefix = phrase is None and text.endswith("*")
        text = text.strip().rstrip("*") if prefix else text.strip()
        if not _WORD.search(text):
            continue
        quoted = '"' + text.replace('"', '""') + '"'
        terms.append(quoted + "*" if prefix else quoted)
    return (" OR " if any_term else " ").join(terms)


class SessionStore(SQLiteStore):
    """Sessions and messages in one SQLite file (see the module docstring)."""

    @classmethod
    def open_default(cls) -> SessionStore:
        """The store of the current HERMES_HOME (``state.db``)."""
        from hermes.config.paths import HermesPaths

        return cls(HermesPaths.current().database)

    # -- plumbing ---------------------------------------------------------------------------------

    @staticmethod
    def _info(row: sqlite3.Row) -> SessionInfo:
        return SessionInfo(
            id=row["id"], created_at=row["created_at"], updated_at=row["updated_at"],
            surface=row["surface"], model=row["model"], title=row["title"],
            message_count=row["message_count"], toolsets=json.loads(row["toolsets"]),
            tools=json.loads(row["tools"]), parent_id=row["parent_id"], meta=json.loads(row["meta"]),
        )

    def _find(self, conn: sqlite3.Connection, session_id: str) -> sqlite3.Row:
        key = session_id.strip()
        row: sqlite3.Row | None = conn.execute("SELECT * FROM sessions WHERE id = ?", (key,)).fetchone()
        if row is not None:
            return row
        if len(key) < MIN_PREFIX:
            hint = f" (an id prefix needs at least {MIN_PREFIX} characters)" if key else ""
            raise SessionNotFound(f"no session with id {key!r}{hint}")
        rows = conn.execute(
            "SELECT * FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT 6",
            (key, key + "\U0010ffff"),
        ).fetchall()
        if not rows:
            raise SessionNotFound(f"no session with id {key!r}")
        if len(rows) > 1:
            shown = ", ".join(r["id"] for r in rows[:5]) + (", …" if len(rows) > 5 else "")
            raise SessionNotFound(
                f"session id prefix {key!r} is ambiguous: it matches {shown}; give more characters"
            )
        found: sqlite3.Row = rows[0]
        return found

    @staticmethod
    def _json(value: Any, what: str) -> str:
        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"{what} cannot be stored as JSON: {exc}") from exc

    # -- sessions ---------------------------------------------------------------------------------

    def create_session(
        self, *, surface: str, model: str, toolsets: list[str], tools: list[str],
        title: str | None = None, parent_id: str | None = None, meta: dict[str, Any] | None = None,
    ) -> str:
        """Start a new, empty session and return its id."""
        data = (self._json(list(toolsets), "toolsets"), self._json(list(tools), "tools"),
                self._json(dict(meta or {}), "meta"))
        with self._writing("create a session") as conn:
            if parent_id is not None and conn.execute(
                "SELECT 1 FROM sessions WHERE id = ?", (parent_id,)
            ).fetchone() is None:
                raise SessionNotFound(f"no parent session with id {parent_id!r}")
            now = time.time()
            for _ in range(10):
                session_id = new_session_id(now)
                try:
                    conn.execute(
                        "INSERT INTO sessions (id, created_at, updated_at, surface, model, title, toolsets,"
                        " tools, parent_id, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (session_id, now, now, surface, model, title, *data[:2], parent_id, data[2]),
                    )
                    return session_id
                except sqlite3.IntegrityError:
                    continue
            raise StoreError("could not find a free session id")

    def get_session(self, session_id: str) -> SessionInfo:
        """The session with this id, or with this unique id prefix (at least 4 characters)."""
        with self._reading("read a session") as conn:
            return self._info(self._find(conn, session_id))

    def latest_session(self, surface: str | None = None) -> SessionInfo | None:
        """The most recently updated session (of ``surface`` when given), or None."""
        found = self.list_sessions(limit=1, surface=surface)
        return found[0] if found else None

    def list_sessions(self, *, limit: int = 50, surface: str | None = None) -> list[SessionInfo]:
        """Sessions, most recently updated first."""
        where, params = ("WHERE surface = ?", [surface]) if surface is not None else ("", [])
        with self._reading("list sessions") as conn:
            rows = conn.execute(
                f"SELECT * FROM sessions {where} ORDER BY updated_at DESC, id DESC LIMIT ?",
                (*params, max(limit, 0)),
            ).fetchall()
        return [self._info(r) for r in rows]

    def previews(self, session_ids: Sequence[str]) -> dict[str, str]:
        """The first user message's text of each session that has one (for listings)."""
        out: dict[str, str] = {}
        with self._reading("read session previews") as conn:
            for sid in session_ids:
                row = conn.execute(
                    "SELECT text FROM messages WHERE session_id = ? AND role = 'user' ORDER BY seq LIMIT 1",
                    (sid,),
                ).fetchone()
                if row is not None and row["text"]:
                    out[sid] = row["text"]
        return out

    def set_title(self, session_id: str, title: str) -> None:
        """Name the session (an id prefix is accepted)."""
        with self._writing("set a session title") as conn:
            row = self._find(conn, session_id)
            conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (title, row["id"]))

    def update_meta(self, session_id: str, **meta: Any) -> None:
        """Merge ``meta`` into the session's meta (keys given replace the stored ones)."""
        with self._writing("update session meta") as conn:
            row = self._find(conn, session_id)
            merged = {**json.loads(row["meta"]), **meta}
            conn.execute("UPDATE sessions SET meta = ? WHERE id = ?", (self._json(merged, "meta"), row["id"]))

    def delete_session(self, session_id: str) -> None:
        """Delete the session, its messages and their search index entries."""
        with self._writing("delete a session") as conn:
            sid = self._find(conn, session_id)["id"]
            conn.execute("DELETE FROM messages WHERE session_id = ?", (sid,))
            conn.execute("DELETE FROM sessions WHERE id = ?", (sid,))

    # -- messages ---------------------------------------------------------------------------------

    def append_message(self, session_id: str, message: dict[str, Any]) -> int:
        """Store ``message`` (an OpenAI chat message dict) at the end of the session; return its row id."""
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise StoreError("a message must be a dict with a string 'role'")
        data = self._json(message, "the message")
        text = searchable_text(message)
        with self._writing("store a message") as conn:
            now = time.time()
            row = conn.execute(
                "UPDATE sessions SET updated_at = max(updated_at, ?), message_count = message_count + 1"
                " WHERE id = ? RETURNING message_count",
                (now, session_id),
            ).fetchone()
            if row is None:
                raise SessionNotFound(f"no session with id {session_id!r}")
            cur = conn.execute(
                "INSERT INTO messages (session_id, seq, role, created_at, data, text)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, row[0] - 1, message["role"], now, data, text),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid

    def truncate_messages(self, session_id: str, keep: int) -> int:
        """Delete the session's messages after the first ``keep`` (and their search entries); how many went."""
        with self._writing("truncate a session") as conn:
            sid = self._find(conn, session_id)["id"]
            gone = conn.execute("DELETE FROM messages WHERE session_id = ? AND seq >= ?", (sid, max(keep, 0))).rowcount
            conn.execute(
                "UPDATE sessions SET message_count = (SELECT count(*) FROM messages WHERE session_id = ?),"
                " updated_at = max(updated_at, ?) WHERE id = ?",
                (sid, time.time(), sid),
            )
            return int(gone)

    def messages(self, session_id: str) -> list[dict[str, Any]]:
        """The session's messages in order, exactly as they were appended."""
        with self._reading("read messages") as conn:
            sid = self._find(conn, session_id)["id"]
            rows = conn.execute("SELECT data FROM messages WHERE session_id = ? ORDER BY seq", (sid,))
            return [json.loads(r["data"]) for r in rows]

    def export(self, session_id: str) -> dict[str, Any]:
        """``{"session": {...SessionInfo fields...}, "messages": [...]}`` in one consistent read."""
        with self._reading("export a session") as conn:
            conn.execute("BEGIN")  # one snapshot for both reads, even with other writers around
            try:
                info = self.get_session(session_id)
                return {"session": asdict(info), "messages": self.messages(info.id)}
            finally:
                conn.execute("COMMIT")

    # -- search -----------------------------------------------------------------------------------

    def search(
        self, query: str, *, limit: int = 20, surface: str | None = None, since: float | None = None,
        until: float | None = None, session_id: str | None = None,
    ) -> list[SearchHit]:
        """Messages matching ``query``, best first (bm25).

        Any string is accepted: terms are quoted (see :func:`fts_query`); all terms must match, and
        when no message has them all, messages with any of them are returned. ``since`` is inclusive
        and ``until`` exclusive (``time.time()`` seconds); ``session_id`` must be a full id. Very
        common words rank only the most recent matches (see :data:`RANK_WINDOW`).
        """
        if limit <= 0:
            return []
        given = [(clause, value) for clause, value in (("s.surface = ?", surface), ("m.created_at >= ?", since),
                 ("m.created_at < ?", until), ("m.session_id = ?", session_id)) if value is not None]
        filters, params = "".join(f" AND {clause}" for clause, _ in given), [value for _, value in given]
        with self._reading("search messages") as conn:
            for match in dict.fromkeys(m for m in (fts_query(query), fts_query(query, any_term=True)) if m):
                hits = self._ranked(conn, match, limit, filters, params, since, until, session_id)
                if hits:
                    return hits
        return []

    def _ranked(self, conn: sqlite3.Connection, match: str, limit: int, filters: str, params: list[Any],
                since: float | None, until: float | None, session_id: str | None) -> list[SearchHit]:
        """Pick the best ``limit`` on the index alone (see :meth:`search`), then join and snippet only them."""
        hint = tuple(conn.execute(_ROW_RANGE, (since, until, session_id, _MAX_ROWID)).fetchone())
        exact = hint if session_id is not None else (0, _MAX_ROWID)
        if None in hint:
            return []
        join = " JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_id" if filters else ""
        top = (f"SELECT messages_fts.rowid AS id, bm25(messages_fts) AS rank FROM messages_fts{join} WHERE messages_fts"
               f" MATCH ? AND messages_fts.rowid BETWEEN ? AND ?{filters} ORDER BY rank, id DESC LIMIT ?")
        cut = conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid BETWEEN ? AND ? ORDER"
                           " BY rowid DESC LIMIT 1 OFFSET ?", (match, *hint, RANK_WINDOW - 1)).fetchone()
        window = (max(hint[0], cut[0]) if cut else hint[0], hint[1])
        rows = conn.execute(top, (match, *window, *params, limit)).fetchall()
        if len(rows) < limit and window != exact:  # too few in the window passed the filters: rank all
            rows = conn.execute(top, (match, *exact, *params, limit)).fetchall()
        best = {r["id"]: -float(r["rank"]) for r in rows}  # snippets and the joins for these rows only
        snippet_args = (SNIPPET_OPEN, SNIPPET_CLOSE, SNIPPET_ELLIPSIS, SNIPPET_TOKENS, match, *best)
        hits = [SearchHit(**{**dict(r), "snippet": " ".join((r["snippet"] or "").split())}, score=best[r["message_id"]])
                for r in conn.execute(_DETAIL.format(marks=",".join("?" * len(best))), snippet_args)]
        return sorted(hits, key=lambda h: (-h.score, -h.message_id))

    # -- lifetime ---------------------------------------------------------------------------------
