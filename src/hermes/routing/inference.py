"""The Nous Portal login as the model key: Nous inference takes the login's access token (scope
``inference:invoke``) when ``NOUS_API_KEY`` is not set.

:meth:`hermes.config.settings.Settings.model` only says that the key is to come from the login
(``portal_key``); the session wiring calls :func:`session_model` (or :func:`with_portal_key`), which
reads the stored token without touching the network and attaches a provider that refreshes it when
it is due — called before each model request, so a session outliving the one-hour token keeps working.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes.config.settings import ModelSettings, Settings


def with_portal_key(model: ModelSettings, settings: Settings) -> ModelSettings:
    """``model`` with the portal login as its key when it takes one and a login is stored."""
    if not model.portal_key or model.api_key is not None:
        return model
    from hermes.routing.credentials import load_credentials

    auth_path = settings.paths.auth
    env = settings.env.as_dict()
    token = load_credentials(auth_path, env).access_token
    if token is None:
        return model

    def fresh() -> str | None:
        from hermes.routing.portal_auth import fresh_credentials

        return fresh_credentials(auth_path, env).access_token

    source = f"the Nous Portal login ({auth_path}; renew with 'hermes portal login')"
    return replace(model, api_key=token, api_key_source=source, key_provider=fresh)


def session_model(settings: Settings) -> ModelSettings:
    """The model endpoint a session uses: :meth:`Settings.model` with the portal key attached."""
    return with_portal_key(settings.model(), settings)
