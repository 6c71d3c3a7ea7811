"""Connector accounts as the client sees them: parsed from the connector API, found by what people type.

An account is pointed at by its **name**, by its **display name** while it is unnamed, or by its id
(``ca_…``, shown by ``hermes connectors list --all``). Active accounts are matched before retired ones,
because a retired account keeps the name its replacement took over.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes.connectors.naming import app_title
from hermes.errors import GatewayError


class ConnectorError(GatewayError):
    """The connector gateway refused or failed, or an account reference matches nothing (or several)."""

    def __init__(self, message: str, *, code: str = "", status: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class Account:
    """One connector account of the logged-in user."""

    id: str
    app: str
    name: str | None
    display_name: str
    status: str = "active"
    app_title: str = ""
    created_at: str | None = None
    retired_at: str | None = None
    replaced_by: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Account:
        """Read one account object of the API; ConnectorError when it lacks an id or app."""
        ident, app = _text(data.get("id")), _text(data.get("app"))
        if ident is None or app is None:
            raise ConnectorError("the connector gateway sent an account without an id or app")
        return cls(id=ident, app=app, name=_text(data.get("name")),
                   display_name=_text(data.get("display_name")) or _text(data.get("label")) or ident,
                   status=_text(data.get("status")) or "active",
                   app_title=_text(data.get("app_title")) or app_title(app),
                   created_at=_text(data.get("created_at")), retired_at=_text(data.get("retired_at")),
                   replaced_by=_text(data.get("replaced_by")))

    @property
    def active(self) -> bool:
        return self.status == "active"

    @property
    def label(self) -> str:
        """What people see: the name, else the app's display name of the account."""
        return self.name or self.display_name

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "app": self.app, "app_title": self.app_title, "name": self.name,
                "display_name": self.display_name, "status": self.status, "created_at": self.created_at,
                "retired_at": self.retired_at, "replaced_by": self.replaced_by}


def parse_accounts(items: object) -> list[Account]:
    """The ``accounts`` array of a list answer (anything else: ConnectorError)."""
    if not isinstance(items, list) or not all(isinstance(i, Mapping) for i in items):
        raise ConnectorError("the connector gateway sent no account list")
    return [Account.from_json(i) for i in items]


def active_accounts(accounts: Iterable[Account], app: str) -> list[Account]:
    return [a for a in accounts if a.app == app and a.active]


def by_app(accounts: Iterable[Account]) -> dict[str, list[Account]]:
    """Accounts grouped by app, in the order the gateway listed them."""
    out: dict[str, list[Account]] = {}
    for account in accounts:
        out.setdefault(account.app, []).append(account)
    return out


def find_account(accounts: Sequence[Account], app: str, ref: str) -> Account:
    """The account of ``app`` that ``ref`` names: id, then active name or display name, then retired ones.

    Raises ConnectorError when nothing matches or when a display name is shared by several accounts.
    """
    mine = [a for a in accounts if a.app == app]
    for account in mine:
        if account.id == ref:
            return account
    for group in ([a for a in mine if a.active], [a for a in mine if not a.active]):
        named = [a for a in group if a.name == ref]
        if named:
            return named[0]
        shown = [a for a in group if a.name is None and a.display_name == ref]
        if len(shown) == 1:
            return shown[0]
        if len(shown) > 1:
            raise ConnectorError(f"several {app} accounts are shown as {ref!r}; use the id from "
                                 f"'hermes connectors list {app} --all'")
    known = ", ".join(a.label for a in mine if a.active) or "none"
    raise ConnectorError(f"no {app} account {ref!r} (active accounts: {known})")
