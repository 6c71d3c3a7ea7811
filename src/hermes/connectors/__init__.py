"""Connector accounts on the client side (requirement GW-12, GW-13): the naming rule, the accounts the connector
gateway lists, its HTTP client, and the ``connector_alias`` rules.

* :mod:`.naming` — the naming rule, app titles and the exact sentences (shared with the gateway server);
* :mod:`.accounts` — :class:`Account` and finding an account by name, display name or id;
* :mod:`.client` — :class:`ConnectorClient` for ``/v1/connectors/*`` (token only to trusted origins);
* :mod:`.alias` — :func:`inject_alias`, :func:`resolve_alias`, :func:`with_account` (pure).

The agent side (the ``connector_accounts`` tool, the registry hook) is :mod:`hermes.tools.connectors`;
the commands are ``hermes connectors`` (:mod:`hermes.cli.connectors`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.connectors.accounts import Account, ConnectorError, find_account
    from hermes.connectors.alias import ALIAS_FIELD, inject_alias, resolve_alias, with_account
    from hermes.connectors.naming import NAME_RULE, RENAME_UNSUPPORTED, announcement, app_title, valid_name

#: where each name of ``__all__`` lives; loaded on first access, so that importing one submodule (the
#: connector tool imports :mod:`.naming` at every start-up) does not import the others
_HOMES = {
    "ALIAS_FIELD": "alias", "inject_alias": "alias", "resolve_alias": "alias", "with_account": "alias",
    "Account": "accounts", "ConnectorError": "accounts", "find_account": "accounts",
    "NAME_RULE": "naming", "RENAME_UNSUPPORTED": "naming", "announcement": "naming", "app_title": "naming",
    "valid_name": "naming",
}

__all__ = [
    "ALIAS_FIELD",
    "NAME_RULE",
    "RENAME_UNSUPPORTED",
    "Account",
    "ConnectorError",
    "announcement",
    "app_title",
    "find_account",
    "inject_alias",
    "resolve_alias",
    "valid_name",
    "with_account",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
