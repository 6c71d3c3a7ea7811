"""``hermes toolgateway migrate --to postgresql://…``: copy a SQLite gateway database into PostgreSQL.

Every table of the SQLite file (users, tokens and their families, refresh tokens, device codes, login
links, usage, quota counters, connector accounts, uploads, relay jobs — whatever the file holds, found
in ``sqlite_master``, so a table added by a later migration is copied too) goes into the same table of
the PostgreSQL database, which is first brought to the current schema (:mod:`.pg_schema`). Parents are
copied before children (the foreign keys decide the order).

* **Idempotent.** Rows keep their primary keys and are inserted with ``ON CONFLICT DO NOTHING``: a
  second run finds every row already there and inserts none (a row that conflicts on another unique
  column — a user name — is not inserted either). The identity sequences (``users.id``, ``usage.id``)
  are moved past the copied ids, so the next user or usage row PostgreSQL creates gets a fresh id.
* **All or nothing.** The whole copy is one PostgreSQL transaction: a failure (a value PostgreSQL
  refuses, a lost connection) leaves the target as it was.
* **Verifiable.** For every table, the row count and a checksum of both sides are compared: the checksum
  is the sum (mod 2²⁵⁶) of the SHA-256 of each row's canonical form, so it does not depend on row order
  or collation. A target that holds rows the source lacks (a gateway already ran on it) or a row that
  differs is reported as a mismatch.

Run it while no gateway process writes the SQLite file (stop the server first).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.errors import StoreError
from hermes.toolgateway.storage.sqlite_schema import SQLITE_ONLY_TABLES

#: rows per INSERT batch
BATCH = 500
_MOD = 1 << 256


@dataclass(frozen=True)
class TableCopy:
    """What the copy did to one table and what the comparison found."""

    table: str
    source_rows: int
    copied: int
    target_rows: int
    source_checksum: str
    target_checksum: str

    @property
    def matches(self) -> bool:
        return self.source_rows == self.target_rows and self.source_checksum == self.target_checksum

    @property
    def already_there(self) -> int:
        return self.source_rows - self.copied


def _canonical(value: Any) -> str:
    if value is None:
        return "N"
    if isinstance(value, bool):
        return f"i{int(value)}"
    if isinstance(value, int):
        return f"i{value}"
    if isinstance(value, float):
        return f"i{int(value)}" if value.is_integer() and abs(value) < 2**53 else f"f{value!r}"
    if isinstance(value, bytes | bytearray | memoryview):
        return "b" + bytes(value).hex()
    return "t" + str(value).replace("\\", "\\\\").replace("\x1f", "\\u")


def checksum(rows: Iterable[Iterable[Any]]) -> tuple[int, str]:
    """``(row count, checksum)`` of ``rows`` (values in column order), independent of their order.

    Numbers compare by value (an integral REAL equals the same INTEGER), so SQLite's and PostgreSQL's
    spellings of one value give one checksum."""
    total = count = 0
    for row in rows:
        digest = hashlib.sha256("\x1f".join(_canonical(v) for v in row).encode("utf-8", "surrogatepass")).digest()
        total = (total + int.from_bytes(digest, "big")) % _MOD
        count += 1
    return count, f"{total:064x}"


def source_tables(src: sqlite3.Connection) -> list[str]:
    """The SQLite file's own tables, parents before children (by foreign key); not SQLite's bookkeeping."""
    names = [r[0] for r in src.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                       "AND name NOT LIKE 'sqlite_%' ORDER BY name") if r[0] not in SQLITE_ONLY_TABLES]
    parents = {n: {r[2] for r in src.execute(f'PRAGMA foreign_key_list("{n}")')} - {n} for n in names}
    ordered: list[str] = []
    while len(ordered) < len(names):
        ready = [n for n in names if n not in ordered and parents[n] <= set(ordered)]
        if not ready:  # a cycle: take the rest as they are (the copy's single transaction still holds)
            ready = [n for n in names if n not in ordered]
        ordered += ready
    return ordered


def _columns(src: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in src.execute(f'PRAGMA table_info("{table}")')]


def _target_columns(conn: Any, table: str) -> list[str]:
    return [r[0] for r in conn.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = "
                                       "current_schema() AND table_name = %s", (table,))]


def _batches(cursor: sqlite3.Cursor) -> Iterator[list[tuple[Any, ...]]]:
    while True:
        rows = cursor.fetchmany(BATCH)
        if not rows:
            return
        yield [tuple(r) for r in rows]


def _count(conn: Any, table: str) -> int:
    return int(conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])


def _copy_table(src: sqlite3.Connection, conn: Any, table: str) -> int:
    """Insert the rows of ``table`` the target lacks; returns how many were inserted."""
    columns = _columns(src, table)
    missing = sorted(set(columns) - set(_target_columns(conn, table)))
    if missing:
        raise StoreError(f"PostgreSQL table {table} has no column {', '.join(missing)}: "
                         "the two databases are at different schema versions")
    quoted = ", ".join(f'"{c}"' for c in columns)
    insert = (f'INSERT INTO "{table}" ({quoted}) VALUES ({", ".join(["%s"] * len(columns))}) '
              "ON CONFLICT DO NOTHING")
    before = _count(conn, table)
    with conn.cursor() as cur:
        for batch in _batches(src.execute(f'SELECT {quoted} FROM "{table}"')):
            cur.executemany(insert, batch)
    return _count(conn, table) - before


def _reset_identities(conn: Any, table: str) -> None:
    """Move each identity sequence of ``table`` past the largest id now in it."""
    rows = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                        "AND table_name = %s AND is_identity = 'YES'", (table,)).fetchall()
    for (column,) in rows:
        conn.execute(f"SELECT setval(pg_get_serial_sequence(%s, %s), "
                     f'GREATEST((SELECT MAX("{column}") FROM "{table}"), 1), '
                     f'(SELECT MAX("{column}") FROM "{table}") IS NOT NULL)', (table, column))


def copy_database(db_path: Path, url: str) -> list[TableCopy]:
    """Copy every table of the SQLite gateway database at ``db_path`` into PostgreSQL at ``url``.

    Raises :class:`~hermes.errors.StoreError` when either side cannot be opened or the copy fails
    (nothing is then changed in PostgreSQL)."""
    import psycopg

    from hermes.toolgateway.storage.base import mask_url, scrub
    from hermes.toolgateway.storage.postgres import PostgresDatabase

    if not db_path.is_file():
        raise StoreError(f"no SQLite gateway database at {db_path}")
    try:
        src = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {db_path}: {exc}") from None
    target = PostgresDatabase(url)  # creates or upgrades the schema
    try:
        conn = target.connection()
        tables = source_tables(src)
        unknown = [t for t in tables if not _target_columns(conn, t)]
        if unknown:
            raise StoreError(f"PostgreSQL at {mask_url(url)} has no table {', '.join(unknown)}: "
                             "upgrade hermes where the SQLite file was written, or migrate with that version")
        copied: dict[str, int] = {}
        try:
            with conn.transaction():
                for table in tables:
                    copied[table] = _copy_table(src, conn, table)
                    _reset_identities(conn, table)
        except psycopg.Error as exc:
            raise StoreError(f"copying into {mask_url(url)} failed, nothing was changed there: "
                             f"{scrub(str(exc).strip(), url)}") from None
        results = []
        for table in tables:
            columns = ", ".join(f'"{c}"' for c in _columns(src, table))
            n_src, sum_src = checksum(src.execute(f'SELECT {columns} FROM "{table}"'))
            n_dst, sum_dst = checksum(conn.execute(f'SELECT {columns} FROM "{table}"'))
            results.append(TableCopy(table, n_src, copied[table], n_dst, sum_src, sum_dst))
        return results
    finally:
        src.close()
        target.close()


def render(results: Sequence[TableCopy]) -> list[str]:
    """The report ``migrate`` prints: one line per table, then the verdict."""
    head = ("TABLE", "SOURCE", "COPIED", "ALREADY THERE", "TARGET", "CHECKSUM")
    rows = [head] + [(r.table, str(r.source_rows), str(r.copied), str(r.already_there), str(r.target_rows),
                      f"{r.source_checksum[:16]} " + ("match" if r.matches else f"MISMATCH (target "
                                                                                 f"{r.target_checksum[:16]})"))
                     for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    bad = [r.table for r in results if not r.matches]
    total = sum(r.source_rows for r in results)
    if bad:
        lines.append(f"MISMATCH in {', '.join(bad)}: the target holds rows the source does not, or different ones")
    else:
        lines.append(f"all {len(results)} tables match: {total} rows, {sum(r.copied for r in results)} copied now")
    return lines
