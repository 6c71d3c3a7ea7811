"""The provider token an account's action is sent with: unsealed here only, refreshed before it lapses.

:meth:`TokenKeeper.current` opens the account's sealed credential. An OAuth account's token
(:class:`~hermes.toolgateway.connector_oauth.ProviderToken`) that has expired or will within
:data:`~hermes.toolgateway.connector_oauth.REFRESH_MARGIN` — by the gateway's clock, against the expiry
stored with it, so a gateway that was down for hours refreshes on its first call — is refreshed with
the app's provider first, and the new one sealed back in the same row (a conditional update: when
another gateway process refreshed first, its token is used). ``force=True`` refreshes whatever the
expiry says (the app answered 401). Refreshes of one account in this process are serialised.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from hermes.toolgateway.errors import GatewayHTTPError

if TYPE_CHECKING:
    from hermes.toolgateway.connector_apps import App
    from hermes.toolgateway.connector_oauth import ProviderToken
    from hermes.toolgateway.services import Gateway
    from hermes.toolgateway.storage.connector_store import ConnectorAccount, ConnectorStore


class TokenKeeper:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._locks: dict[str, asyncio.Lock] = {}

    def _open(self, store: ConnectorStore, app: App, account: ConnectorAccount) -> tuple[str, ProviderToken]:
        from hermes.toolgateway.connector_oauth import ProviderToken
        from hermes.toolgateway.storage.sealed import SealedError, unseal

        sealed = store.credential(account.user_id, account.id)
        if sealed is None:
            raise GatewayHTTPError(409, "no_credential", f"the {app.title} account "
                                   f"{account.name or account.display_name} has no token on this gateway; "
                                   "reconnect it")
        try:
            return sealed, ProviderToken.from_stored(unseal(self.gateway.sealing_key, account.id, sealed))
        except (SealedError, ValueError, KeyError) as exc:
            raise GatewayHTTPError(503, "credential_unreadable", str(exc) if isinstance(exc, SealedError) else
                                   "the stored connector credential is damaged; reconnect the account") from None

    async def current(self, store: ConnectorStore, app: App, account: ConnectorAccount, *,
                      force: bool = False) -> ProviderToken:
        sealed, token = self._open(store, app, account)
        provider = app.config.oauth
        if provider is None or token.refresh_token is None or not (force or token.due(self.gateway.clock())):
            return token
        lock = self._locks.setdefault(account.id, asyncio.Lock())
        async with lock:
            again, latest = self._open(store, app, account)
            if again != sealed and not latest.due(self.gateway.clock()):
                return latest  # refreshed meanwhile (here or by another process)
            return await self._refresh(store, app, account, again, latest)

    async def _refresh(self, store: ConnectorStore, app: App, account: ConnectorAccount, sealed: str,
                       token: ProviderToken) -> ProviderToken:
        from hermes.toolgateway.connector_oauth import ProviderError, refresh
        from hermes.toolgateway.storage.sealed import seal

        provider = app.config.oauth
        assert provider is not None
        label = account.name or account.display_name
        try:
            fresh = await refresh(provider, token, self.gateway.clock())
        except ProviderError as exc:
            raise GatewayHTTPError(502, "token_refresh_failed",
                                   f"the {app.title} account {label} needs reconnecting: {exc}") from None
        if not store.replace_credential(account.user_id, account.id, sealed,
                                        seal(self.gateway.sealing_key, account.id, fresh.stored())):
            _, fresh = self._open(store, app, account)  # another process stored its refresh first
        return fresh
