"""What every hermes PostgreSQL client shares: rows like ``sqlite3.Row``, SQLite's ``?`` placeholders,
bounded waits on a silent server, and URLs whose passwords never reach a log or an error.

Used by the gateway server's database (:mod:`hermes.toolgateway.storage.postgres`, :mod:`~.pg_async`) and
the kanban board on PostgreSQL (:mod:`hermes.store.kanban.pg`). Standard library only at import time:
psycopg is imported by the modules that connect.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import RowMaker

CONNECT_TIMEOUT = 5
STATEMENT_TIMEOUT_MS = 5000
#: libpq connection parameters added unless the URL sets them: a silent peer is found within seconds
SESSION_DEFAULTS = {"keepalives": "1", "keepalives_idle": "5", "keepalives_interval": "2", "keepalives_count": "2",
                    "tcp_user_timeout": "3000"}
_SECRET_PARAMS = frozenset({"password", "sslpassword", "passfile"})


def session_options(url: str, *, statement_timeout_ms: int = STATEMENT_TIMEOUT_MS) -> dict[str, str]:
    """The connection parameters :data:`SESSION_DEFAULTS` and ``statement_timeout`` add to ``url``'s."""
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(url)
    extra = {k: v for k, v in SESSION_DEFAULTS.items() if k not in given}
    options = str(given.get("options") or "")
    if "statement_timeout" not in options:
        extra["options"] = f"{options} -c statement_timeout={statement_timeout_ms}".strip()
    return extra


class Row:
    """One result row: ``row["name"]`` and ``row[0]``, like ``sqlite3.Row``."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: Sequence[Any], index: dict[str, int]) -> None:
        self._values = values
        self._index = index

    def __getitem__(self, key: str | int) -> Any:
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def keys(self) -> list[str]:
        return list(self._index)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self._values, strict=False))!r})"


def rows(cursor: psycopg.Cursor[Any] | psycopg.AsyncCursor[Any]) -> RowMaker[Row]:
    """psycopg row factory: :class:`Row` s sharing one name → position map per result."""
    index: dict[str, int] = {}
    for position, column in enumerate(cursor.description or ()):
        index.setdefault(column.name, position)

    def make(values: Sequence[Any]) -> Row:
        return Row(values, index)

    return make


def placeholders(sql: str) -> str:
    """SQLite's ``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled). Our statements never
    put ``?`` inside string literals."""
    return sql.replace("%", "%%").replace("?", "%s")


def mask_url(url: str) -> str:
    """``url`` with its password (in the user part or a ``password=`` parameter) replaced by ``***``."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, hostport = netloc.rpartition("@")
            user, colon, _password = userinfo.partition(":")
            netloc = f"{user}:***@{hostport}" if colon else f"{user}@{hostport}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, "***" if k.lower() in _SECRET_PARAMS else v) for k, v in pairs], safe="*")
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return "<unparsable URL>"


def url_secrets(url: str) -> list[str]:
    """The secret strings in ``url`` (raw and decoded), to scrub from error messages."""
    found: list[str] = []
    try:
        parts = urlsplit(url)
    except ValueError:
        return found
    userinfo = parts.netloc.rpartition("@")[0]
    if ":" in userinfo:
        found.append(userinfo.partition(":")[2])
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() in _SECRET_PARAMS]
    out: list[str] = []
    for secret in found:
        for form in (secret, unquote(secret), quote(unquote(secret), safe="")):
            if form and form not in out:
                out.append(form)
    return out


def scrub(text: str, url: str) -> str:
    """``text`` (an error message) with every secret of ``url`` replaced by ``***``."""
    for secret in sorted(url_secrets(url), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
