"""The user's connector accounts, cached: what ``connector_alias`` is offered and checked against.

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
from typing import TYPE_CHECKING

from hermes.errors import HermesError

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


_shared: ConnectorDirectory | None = None


def shared_directory() -> ConnectorDirectory:
    """The process-wide cache of the accounts in ``HERMES_HOME`` (sessions without their own)."""
    global _shared
    if _shared is None:
        _shared = ConnectorDirectory()
    return _shared
