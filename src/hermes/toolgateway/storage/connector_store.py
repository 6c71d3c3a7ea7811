"""Connector accounts in the gateway database (requirement GW-12, the server's side).

One row per connected account of one user for one app (``gmail``, ``github``…):

* ``name`` — the user's (or the agent's) name for it, following :mod:`hermes.connectors.naming`, or
  NULL while unnamed; unique among the user's **active** accounts of that app;
* ``display_name`` — how the app itself calls the account (a mailbox address), shown when unnamed;
* ``credential`` — the provider token the gateway sends to the app for this account, sealed
  (:mod:`.sealed`); only :meth:`ConnectorStore.credential` reads it, nothing lists it, and retiring
  an account drops it;
* ``status`` — ``active`` or ``retired``. Reconnecting a broken account adds a new active account
  under the old one's name and retires the old one (``replaced_by`` points at the new one); retired
  accounts stay until the user deletes them, one by one.

Every method takes the owner's user id and touches only that user's rows, so one user can neither
see nor change another's accounts (an id of someone else's account is simply unknown).

The SQL is plain and portable (``?`` parameters, no ``INSERT OR …``, no ``RETURNING``) and runs on the
gateway's :class:`~hermes.toolgateway.storage.base.Database` (SQLite or PostgreSQL): conflicts are decided by
conditional statements, and the partial unique index only backs them up under races.
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes.connectors.naming import app_title, name_problem, valid_app
from hermes.errors import HermesError
from hermes.toolgateway.storage.base import Database
from hermes.toolgateway.storage.sqlite import as_database

STATUSES = ("active", "retired")
_COLUMNS = "id, user_id, app, name, display_name, status, created, retired, replaced_by"


class ConnectorStoreError(HermesError):
    """A connector account operation was refused; ``code`` is the machine reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _iso(ts: float | None) -> str | None:
    return None if ts is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


@dataclass(frozen=True)
class ConnectorAccount:
    """One stored connector account."""

    id: str
    user_id: int
    app: str
    name: str | None
    display_name: str
    status: str
    created: float
    retired: float | None
    replaced_by: str | None

    @classmethod
    def from_row(cls, row: Any) -> ConnectorAccount:
        retired = row["retired"]
        return cls(str(row["id"]), int(row["user_id"]), str(row["app"]), row["name"], str(row["display_name"]),
                   str(row["status"]), float(row["created"]), None if retired is None else float(retired),
                   row["replaced_by"])

    @property
    def active(self) -> bool:
        return self.status == "active"

    def as_json(self) -> dict[str, Any]:
        """The API's account object."""
        return {"id": self.id, "app": self.app, "app_title": app_title(self.app), "name": self.name,
                "display_name": self.display_name, "label": self.name or self.display_name,
                "status": self.status, "created_at": _iso(self.created), "retired_at": _iso(self.retired),
                "replaced_by": self.replaced_by}


def check_app(app: str) -> None:
    if not valid_app(app):
        raise ConnectorStoreError("invalid_app", "a connector id is 1-64 characters of a-z, 0-9, - and _, "
                                                 "starting with a letter or a digit")


def check_name(name: object) -> str:
    problem = name_problem(name)
    if problem is not None:
        raise ConnectorStoreError("invalid_name", problem)
    assert isinstance(name, str)
    return name


class ConnectorStore:
    """Connector account operations on the gateway's database connection."""

    def __init__(self, conn: Database | sqlite3.Connection, clock: Callable[[], float] = time.time) -> None:
        self.conn = as_database(conn)  # SQLite or PostgreSQL (hermes.toolgateway.storage)
        self.clock = clock

    # -- reading -------------------------------------------------------------------------------------
    def accounts(self, user_id: int, app: str | None = None, *,
                 include_retired: bool = True) -> list[ConnectorAccount]:
        """The user's accounts (of one app), active ones first, oldest first within each group."""
        sql = f"SELECT {_COLUMNS} FROM connector_accounts WHERE user_id = ?"
        params: list[Any] = [user_id]
        if app is not None:
            sql += " AND app = ?"
            params.append(app)
        if not include_retired:
            sql += " AND status = 'active'"
        rows = self.conn.execute(sql + " ORDER BY app, status, created, id", params).fetchall()
        return [ConnectorAccount.from_row(r) for r in rows]

    def get(self, user_id: int, account_id: str) -> ConnectorAccount:
        """The user's account with this id, or ``unknown_account``."""
        row = self.conn.execute(f"SELECT {_COLUMNS} FROM connector_accounts WHERE id = ? AND user_id = ?",
                                (account_id, user_id)).fetchone()
        if row is None:
            raise ConnectorStoreError("unknown_account", "no such connector account")
        return ConnectorAccount.from_row(row)

    def find(self, user_id: int, app: str, ref: str) -> ConnectorAccount:
        """An account of ``app`` by id, or by the name of an active account (the operator's way to point)."""
        for account in self.accounts(user_id, app):
            if account.id == ref or (account.active and account.name == ref):
                return account
        raise ConnectorStoreError("unknown_account", f"no {app} account {ref!r}")

    def _name_taken(self, user_id: int, app: str, name: str, except_id: str = "") -> bool:
        row = self.conn.execute(
            "SELECT id FROM connector_accounts WHERE user_id = ? AND app = ? AND name = ? AND status = 'active' "
            "AND id <> ?", (user_id, app, name, except_id)).fetchone()
        return row is not None

    # -- writing -------------------------------------------------------------------------------------
    def add(self, user_id: int, app: str, *, name: str | None = None, display_name: str | None = None,
            replaces: str | None = None, credential: Callable[[str], str] | None = None) -> ConnectorAccount:
        """Record a newly connected account; with ``replaces`` (an id or active name) it is a reconnect:
        the new account takes the old one's name (unless ``name`` is given) and the old one is retired.
        ``credential`` seals the provider token for the new account's id (``storage.sealed``)."""
        check_app(app)
        if name is not None:
            check_name(name)
        display = " ".join((display_name or "").split())[:200] or f"{app_title(app)} account"
        old = self.find(user_id, app, replaces) if replaces is not None else None
        if old is not None and not old.active:
            raise ConnectorStoreError("account_retired", "that account is already retired")
        if old is not None and name is None:
            name = old.name
        if name is not None and self._name_taken(user_id, app, name, old.id if old else ""):
            raise ConnectorStoreError("name_taken", f"another active {app} account is already named {name!r}")
        new_id = "ca_" + secrets.token_hex(8)
        now = self.clock()
        try:
            with self.conn.transaction():
                if old is not None:
                    self.conn.execute(
                        "UPDATE connector_accounts SET status = 'retired', retired = ?, replaced_by = ?, "
                        "credential = NULL WHERE id = ? AND user_id = ?", (now, new_id, old.id, user_id))
                self.conn.execute(
                    "INSERT INTO connector_accounts (id, user_id, app, name, display_name, status, created, "
                    "credential) VALUES (?, ?, ?, ?, ?, 'active', ?, ?)",
                    (new_id, user_id, app, name, display, now, credential(new_id) if credential else None))
        except self.conn.integrity_error:
            raise ConnectorStoreError("name_taken", f"another active {app} account is already named {name!r}") from None
        return self.get(user_id, new_id)

    def rename(self, user_id: int, account_id: str, name: str) -> ConnectorAccount:
        """Give an active account a (new) name; unique among the user's active accounts of that app."""
        check_name(name)
        account = self.get(user_id, account_id)
        if not account.active:
            raise ConnectorStoreError("account_retired", "a retired account cannot be renamed")
        if account.name == name:
            return account
        try:
            cur = self.conn.execute(
                "UPDATE connector_accounts SET name = ? WHERE id = ? AND user_id = ? AND status = 'active' "
                "AND NOT EXISTS (SELECT 1 FROM connector_accounts o WHERE o.user_id = ? AND o.app = ? "
                "AND o.name = ? AND o.status = 'active' AND o.id <> ?)",
                (name, account_id, user_id, user_id, account.app, name, account_id))
        except self.conn.integrity_error:
            cur = None
        if cur is None or cur.rowcount != 1:
            raise ConnectorStoreError("name_taken",
                                      f"another active {account.app} account is already named {name!r}")
        return self.get(user_id, account_id)

    def retire(self, user_id: int, account_id: str) -> ConnectorAccount:
        """Mark an account retired (kept and listed, no longer usable by tools)."""
        account = self.get(user_id, account_id)
        if account.active:
            self.conn.execute(
                "UPDATE connector_accounts SET status = 'retired', retired = ?, credential = NULL "
                "WHERE id = ? AND user_id = ? AND status = 'active'", (self.clock(), account_id, user_id))
        return self.get(user_id, account_id)

    def credential(self, user_id: int, account_id: str) -> str | None:
        """The sealed provider token of the user's active account (None: none stored); never in ``as_json``."""
        row = self.conn.execute("SELECT credential FROM connector_accounts WHERE id = ? AND user_id = ? "
                                "AND status = 'active'", (account_id, user_id)).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def replace_credential(self, user_id: int, account_id: str, old: str, new: str) -> bool:
        """Store a refreshed sealed token if the account still holds ``old`` (False: another process refreshed
        it first, or the account was retired; read it again)."""
        cur = self.conn.execute("UPDATE connector_accounts SET credential = ? WHERE id = ? AND user_id = ? "
                                "AND status = 'active' AND credential = ?", (new, account_id, user_id, old))
        return cur.rowcount == 1

    def delete(self, user_id: int, account_id: str) -> ConnectorAccount:
        """Delete one account for good (the user's own command only); returns what was deleted."""
        account = self.get(user_id, account_id)
        self.conn.execute("DELETE FROM connector_accounts WHERE id = ? AND user_id = ?", (account_id, user_id))
        return account
