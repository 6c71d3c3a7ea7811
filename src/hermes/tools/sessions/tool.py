"""``session_search`` — full-text search over past sessions, and reading one of them (requirement T-SS).

The agent loop answers this tool itself (requirement REG-7): it needs the session's store and its own id
(the current session is left out of results by default). Search goes through
:meth:`hermes.store.sessions.SessionStore.search` (SQLite FTS5, bm25 ranking, snippets); no model is
called. Hits are grouped by session, best session first.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

from hermes.errors import SessionNotFound, ToolError
from hermes.tools.registry import registry
from hermes.tools.sessions.dates import FORMS, format_when, parse_when
from hermes.tools.toolsets import Surface

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.store.sessions import SearchHit, SessionStore

DEFAULT_LIMIT = 20
MAX_LIMIT = 50
DEFAULT_PAGE = 30
MAX_PAGE = 100
#: per-message caps when reading a session back
TOOL_RESULT_CHARS = 400
CONTENT_CHARS = 3000
ARGUMENT_CHARS = 300
MATCHES_PER_SESSION = 3
_MAX_FETCH = 1000

SESSION_SEARCH_SCHEMA: dict[str, Any] = {
    "name": "session_search",
    "description": (
        "Search your past conversations with this person (full-text, ranked, with snippets; the current "
        "session is left out unless include_current=true). Use it when the person refers to earlier work "
        "('like we did last week', 'that bug from before') or when past context would help. Terms are "
        "matched as words (all terms first, then any); \"quoted phrases\" and prefix* work. Then use "
        "action='read' with a session_id to read that session's messages page by page."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["search", "read"], "default": "search",
                       "description": "'search' (default) or 'read' one session."},
            "query": {"type": "string", "maxLength": 500, "description": "Words to look for (search)."},
            "surface": {"type": "string", "enum": [s.value for s in Surface],
                        "description": "Only sessions from this surface (cli, cron, messaging, ...)."},
            "since": {"type": "string", "maxLength": 64, "description": f"Only messages from then on: {FORMS}."},
            "until": {"type": "string", "maxLength": 64,
                      "description": "Only messages before then (a bare date includes that whole day)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                      "description": "Most matching messages to return (search)."},
            "include_current": {"type": "boolean", "default": False,
                                "description": "Also search the current session."},
            "session_id": {"type": "string", "maxLength": 100,
                           "description": "The session to read (read); an id or a unique prefix of 4+ characters."},
            "offset": {"type": "integer", "minimum": 0, "default": 0,
                       "description": "Index of the first message to show (read)."},
            "page_size": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": DEFAULT_PAGE,
                          "description": "Messages per page (read)."},
        },
    },
}


class SearchingSession(Protocol):
    """What the handler needs from the running session (:class:`hermes.tools.session.ToolSession`)."""

    session_id: str | None
    store: SessionStore | None
    settings: Settings | None
    state: dict[str, Any]


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" … [{len(text) - limit} more characters]"


def _int_arg(args: dict[str, Any], name: str, default: int, low: int, high: int | None = None) -> int:
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ToolError(f"'{name}' must be an integer")
    number = int(value)
    if number < low or (high is not None and number > high):
        raise ToolError(f"'{name}' must be between {low} and {high}" if high else f"'{name}' must be at least {low}")
    return number


def _str_arg(args: dict[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolError(f"'{name}' must be a string")
    return value.strip() or None


def _store_for(session: SearchingSession) -> SessionStore | None:
    """The session's store; otherwise the HERMES_HOME database when it exists (never created here)."""
    if session.store is not None:
        return session.store
    from hermes.store.sessions import SessionStore  # SQLite: loaded when the tool is first used

    cached = session.state.get("session_search.store")
    if isinstance(cached, SessionStore):
        return cached
    from hermes.config.paths import HermesPaths

    path = session.settings.paths.database if session.settings is not None else HermesPaths.current().database
    if not path.exists():
        return None
    store = SessionStore(path)
    session.state["session_search.store"] = store
    return store


def search_sessions(args: dict[str, Any], store: SessionStore | None, current: str | None) -> dict[str, Any]:
    """Run a search; returns the result payload. Raises ToolError for bad arguments."""
    query = _str_arg(args, "query")
    if not query:
        raise ToolError("'query' is required for action 'search': the words to look for")
    limit = _int_arg(args, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    surface = _str_arg(args, "surface")
    if surface is not None and surface not in {s.value for s in Surface}:
        raise ToolError(f"'surface' must be one of {', '.join(s.value for s in Surface)}")
    since_text, until_text = _str_arg(args, "since"), _str_arg(args, "until")
    since = parse_when(since_text, "since") if since_text else None
    until = parse_when(until_text, "until", end=True) if until_text else None
    if since is not None and until is not None and since >= until:
        raise ToolError(f"'since' ({since_text}) must be earlier than 'until' ({until_text})")
    exclude = None if args.get("include_current") is True else current
    hits: list[SearchHit] = []
    if store is not None:
        fetch = limit if exclude is None else limit + 10
        while True:
            found = store.search(query, limit=fetch, surface=surface, since=since, until=until)
            hits = [h for h in found if h.session_id != exclude][:limit]
            if len(hits) >= limit or len(found) < fetch or fetch >= _MAX_FETCH:
                break
            fetch = min(fetch * 4, _MAX_FETCH)
    groups: dict[str, dict[str, Any]] = {}
    for hit in hits:
        group = groups.setdefault(hit.session_id, {
            "session_id": hit.session_id, "title": hit.title, "surface": hit.surface,
            "best_score": round(hit.score, 3), "matches": [], "more_matches": 0,
        })
        if len(group["matches"]) < MATCHES_PER_SESSION:
            group["matches"].append({"when": format_when(hit.created_at), "role": hit.role, "snippet": hit.snippet})
        else:
            group["more_matches"] += 1
    results = list(groups.values())
    payload: dict[str, Any] = {"query": query, "matching_messages": len(hits), "sessions": results}
    if not results:
        payload["note"] = "No past session matches. Try fewer or different words, or widen the filters."
    else:
        payload["note"] = "Best match first. Read one with action='read' and its session_id."
    return payload


def _message_view(index: int, message: dict[str, Any]) -> dict[str, Any]:
    role = str(message.get("role", "?"))
    view: dict[str, Any] = {"index": index, "role": role}
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(p.get("text", "[non-text part]") if isinstance(p, dict) else str(p) for p in content)
    if content:
        view["content"] = _clip(str(content), TOOL_RESULT_CHARS if role == "tool" else CONTENT_CHARS)
    calls = [c.get("function") or {} for c in message.get("tool_calls") or () if isinstance(c, dict)]
    if calls:
        view["tool_calls"] = [{"name": f.get("name"), "arguments": _clip(str(f.get("arguments") or ""),
                                                                         ARGUMENT_CHARS)} for f in calls]
    return view


def read_session(args: dict[str, Any], store: SessionStore | None) -> dict[str, Any]:
    """One page of a stored session's messages (system prompts left out, tool results shortened)."""
    session_id = _str_arg(args, "session_id")
    if not session_id:
        raise ToolError("'session_id' is required for action 'read' (take it from a search result)")
    offset = _int_arg(args, "offset", 0, 0)
    page = _int_arg(args, "page_size", DEFAULT_PAGE, 1, MAX_PAGE)
    if store is None:
        raise ToolError(f"no session with id {session_id!r}: nothing has been stored yet")
    try:
        info = store.get_session(session_id)
    except SessionNotFound as exc:
        raise ToolError(str(exc)) from None
    messages = store.messages(info.id)
    shown = [(i, m) for i, m in enumerate(messages) if m.get("role") not in ("system", "developer")]
    window = [(i, m) for i, m in shown if i >= offset][:page]
    later = [i for i, _ in shown if i > (window[-1][0] if window else offset)]
    return {
        "session": {"id": info.id, "title": info.title, "surface": info.surface, "model": info.model,
                    "started": format_when(info.created_at), "updated": format_when(info.updated_at),
                    "message_count": info.message_count},
        "messages": [_message_view(i, m) for i, m in window],
        "next_offset": later[0] if later and window else None,
        "note": "Tool results and long messages are shortened; the system prompt is left out.",
    }


def handle_session_search(args: dict[str, Any], session: SearchingSession) -> str:
    """The handler of ``session_search``."""
    store = _store_for(session)
    if args.get("action", "search") == "read":
        return json.dumps(read_session(args, store), ensure_ascii=False)
    if args.get("action", "search") not in (None, "search"):
        raise ToolError("'action' must be 'search' or 'read'")
    return json.dumps(search_sessions(args, store, session.session_id), ensure_ascii=False)


registry.register(
    name="session_search",
    toolset="session_search",
    schema=SESSION_SEARCH_SCHEMA,
    handler=lambda args, *, session, **kw: handle_session_search(args, session),
    check_fn=None,
    requires_env=[],
    needs_session=True,
)
