"""The registry hook for connector tools: ``connector_alias`` in their schema and the check at dispatch.

:class:`ConnectorDirectory` keeps the user's accounts (all apps) for ``ttl`` seconds. Building tool
definitions reads it — the first time, that is one request to the connector gateway; a failure is logged
and remembered for ``ttl`` (the tools are then shown without the alias) so a session start never waits
twice. At dispatch the cached list is used first; if the alias check fails on a list older than
``recheck_after`` seconds (a rename in another window), the list is fetched again and checked once more.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError, ToolArgumentError
from hermes.tools.registry import ToolEntry, ToolRegistry

if TYPE_CHECKING:  # the account rules are imported when a connector tool is first shown or called
    from hermes.connectors.accounts import Account

log = logging.getLogger("hermes.connectors")

Fetch = Callable[[], Sequence["Account"]]


def fetch_from_settings() -> list[Account]:
    """Every account of the user in ``HERMES_HOME`` (settings, portal login, ``CONNECTOR_GATEWAY_URL``)."""
    from hermes.config.settings import Settings
    from hermes.connectors.client import ConnectorClient

    with ConnectorClient.from_settings(Settings.load(), timeout=10.0) as client:
        return client.list().accounts


class ConnectorDirectory:
    """The accounts of every connector, fetched together and kept for a short while (thread-safe)."""

    def __init__(self, fetch: Fetch = fetch_from_settings, *, ttl: float = 60.0, recheck_after: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.fetch = fetch
        self.ttl = ttl
        self.recheck_after = recheck_after
        self.clock = clock
        self._lock = threading.Lock()
        self._accounts: list[Account] | None = None
        self._fetched = float("-inf")
        self._failed = float("-inf")

    def invalidate(self) -> None:
        """Forget the list (after naming or renaming an account)."""
        with self._lock:
            self._accounts = None
            self._fetched = self._failed = float("-inf")

    @property
    def age(self) -> float:
        return self.clock() - self._fetched

    def accounts(self, *, fresh: bool = False) -> list[Account]:
        """The cached list, fetched when missing, older than ``ttl`` or ``fresh``; errors propagate."""
        with self._lock:
            if fresh or self._accounts is None or self.clock() - self._fetched >= self.ttl:
                accounts = list(self.fetch())
                self._accounts, self._fetched = accounts, self.clock()
            return list(self._accounts)

    def accounts_for_schema(self) -> list[Account] | None:
        """Like :meth:`accounts`, but None (logged, remembered for ``ttl``) when the gateway cannot answer."""
        if self.clock() - self._failed < self.ttl:
            return None
        try:
            return self.accounts()
        except Exception as exc:  # building definitions must not fail because of the gateway
            shown = str(exc) if isinstance(exc, HermesError) else type(exc).__name__
            log.warning("connector accounts unavailable, tools shown without connector_alias: %s", shown)
            self._failed = self.clock()
            return None


class ConnectorHook:
    """:class:`hermes.tools.registry.ConnectorHook` backed by a :class:`ConnectorDirectory`."""

    def __init__(self, directory: ConnectorDirectory) -> None:
        self.directory = directory

    @staticmethod
    def app_of(entry: ToolEntry) -> str:
        return str(entry.options["connector"])

    def schema(self, entry: ToolEntry) -> dict[str, Any]:
        accounts = self.directory.accounts_for_schema()
        if accounts is None:
            return dict(entry.schema)
        from hermes.connectors.alias import inject_alias

        return inject_alias(entry.schema, self.app_of(entry), accounts)

    def bind(self, entry: ToolEntry, args: dict[str, Any]) -> tuple[ToolEntry, dict[str, Any]]:
        from hermes.connectors.alias import finish_with_account, resolve_alias

        app = self.app_of(entry)
        try:
            rest, account = resolve_alias(args, app, self.directory.accounts())
        except ToolArgumentError:
            if self.directory.age < self.directory.recheck_after:
                raise
            rest, account = resolve_alias(args, app, self.directory.accounts(fresh=True))
        inner = entry.handler

        def handler(call_args: dict[str, Any], **kw: Any) -> Any:
            return finish_with_account(inner(call_args, connector_account=account, **kw), account)

        return replace(entry, handler=handler), rest


def install(registry: ToolRegistry, directory: ConnectorDirectory | None = None) -> ConnectorHook:
    """Give ``registry``'s connector tools their alias handling; returns the hook."""
    hook = ConnectorHook(directory or ConnectorDirectory())
    registry.connector_hook = hook
    return hook
