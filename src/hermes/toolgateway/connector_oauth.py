"""An app's OAuth2 provider: its config, the tokens the gateway keeps for an account, and the two grants.

``[connectors.apps.<app>.oauth]`` in the gateway config::

    authorize_url = "https://accounts.example.com/o/oauth2/auth"
    token_url = "https://oauth2.example.com/token"
    client_id = "1234.apps.example.com"
    client_secret_env = "GMAIL_CLIENT_SECRET"   # or client_secret = "…"; neither: a public client (PKCE only)
    scopes = ["mail.read", "mail.send"]
    userinfo_url = "https://example.com/userinfo"  # optional: the account's display name comes from it
    display_field = "email"                     # the userinfo field shown as the account's display name
    redirect_uri = "https://gw.example.com/relay/connector/v1/connectors/oauth/callback"
    authorize_params = { access_type = "offline", prompt = "consent" }

``redirect_uri`` is fixed by the config (default: ``[connectors] oauth_redirect_uri``, else the portal's
``public_url`` + ``/relay/connector/v1/connectors/oauth/callback``): nothing a client sends ever
chooses where the provider sends the person back.

An account connected through the flow stores a :class:`ProviderToken` — access token, refresh token,
expiry — sealed as one value (``oauth2:`` + JSON, :mod:`hermes.toolgateway.storage.sealed`), where an
operator-recorded account stores its bare token. The client secret is kept out of ``repr`` and never
leaves the gateway; provider errors are passed on with it and every token masked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes.errors import HermesError
from hermes.redact import redact

#: how long before its expiry a provider token is refreshed (so no call ever sends a lapsing one)
REFRESH_MARGIN = 120.0
#: an access token the provider gives no lifetime for is treated as good for this long
DEFAULT_LIFETIME = 3600.0
CALLBACK_SUFFIX = "/v1/connectors/oauth/callback"
CALLBACK_PATH = "/relay/connector" + CALLBACK_SUFFIX
_MARK = "oauth2:"


class ProviderError(HermesError):
    """The provider refused a grant (or could not be reached); the message is masked."""


@dataclass(frozen=True)
class OAuthProvider:
    """``[connectors.apps.<app>.oauth]``."""

    authorize_url: str
    token_url: str
    client_id: str
    redirect_uri: str
    client_secret: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ()
    userinfo_url: str | None = None
    display_field: str = "email"
    authorize_params: Mapping[str, str] = field(default_factory=dict)

    def secrets(self, *more: str | None) -> list[str]:
        return [s for s in (self.client_secret, *more) if s]

    def client(self, http_timeout: float = 30.0) -> Any:
        """authlib's async OAuth2 client for this provider (PKCE S256; a secret, when set, in the POST body)."""
        from authlib.integrations.httpx_client import AsyncOAuth2Client

        return AsyncOAuth2Client(
            client_id=self.client_id, client_secret=self.client_secret, scope=" ".join(self.scopes) or None,
            redirect_uri=self.redirect_uri, code_challenge_method="S256",
            token_endpoint_auth_method="client_secret_post" if self.client_secret else "none",
            timeout=http_timeout, trust_env=False, follow_redirects=False)


def _url(reader: Any, key: str, required: bool = True) -> str | None:
    value = reader.text(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        raise reader.fail(key, "must be an http(s) URL")
    return value


def provider_config(reader: Any, env: Mapping[str, str], default_redirect: str | None) -> OAuthProvider:
    """Read ``[connectors.apps.<app>.oauth]`` (a TableReader); ConfigError naming the key."""
    client_id = reader.text("client_id")
    if not client_id:
        raise reader.fail("client_id", "is required (the app's OAuth client id at the provider)")
    secret = reader.text("client_secret")
    secret_env = reader.text("client_secret_env")
    if secret is None and secret_env:
        secret = env.get(secret_env)
        if not secret:
            raise reader.fail("client_secret_env", f"names {secret_env}, which is not set")
    redirect = reader.text("redirect_uri") or default_redirect
    if not redirect or not redirect.startswith(("https://", "http://")) or not redirect.endswith(CALLBACK_SUFFIX):
        raise reader.fail("redirect_uri", f"must be the gateway's callback URL, ending in {CALLBACK_SUFFIX} (or set "
                                          "[connectors] oauth_redirect_uri or public_url)")
    raw_scopes = reader.value("scopes", [])
    scopes = raw_scopes.split() if isinstance(raw_scopes, str) else raw_scopes
    if not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes):
        raise reader.fail("scopes", "must be a list of strings (or one space-separated string)")
    extra = reader.value("authorize_params", {})
    if not isinstance(extra, Mapping) or not all(isinstance(v, str) for v in extra.values()):
        raise reader.fail("authorize_params", "must be a table of strings")
    reserved = {"state", "code_challenge", "code_challenge_method", "redirect_uri", "client_id", "response_type"}
    if reserved & set(extra):
        raise reader.fail("authorize_params", f"may not set {', '.join(sorted(reserved & set(extra)))}")
    return OAuthProvider(str(_url(reader, "authorize_url")), str(_url(reader, "token_url")), client_id, redirect,
                         secret or None, tuple(scopes), _url(reader, "userinfo_url", required=False),
                         reader.text("display_field", "email") or "email", {str(k): v for k, v in extra.items()})


@dataclass(frozen=True)
class ProviderToken:
    """What the gateway keeps for an account connected through OAuth (sealed; never sent to a client)."""

    access_token: str = field(repr=False)
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: float | None = None
    token_type: str = "Bearer"

    def due(self, now: float) -> bool:
        """Whether it should be refreshed before use (expired or within :data:`REFRESH_MARGIN`)."""
        return self.expires_at is not None and self.expires_at - now <= REFRESH_MARGIN

    def stored(self) -> str:
        """The plain text to seal."""
        return _MARK + json.dumps({"access_token": self.access_token, "refresh_token": self.refresh_token,
                                   "expires_at": self.expires_at, "token_type": self.token_type},
                                  separators=(",", ":"))

    @classmethod
    def from_stored(cls, plain: str) -> ProviderToken:
        """An unsealed credential: an OAuth token (``oauth2:`` + JSON) or an operator's bare token."""
        if not plain.startswith(_MARK):
            return cls(plain)
        data = json.loads(plain[len(_MARK):])
        expires = data.get("expires_at")
        return cls(str(data["access_token"]), data.get("refresh_token") or None,
                   None if expires is None else float(expires), str(data.get("token_type") or "Bearer"))

    @classmethod
    def from_grant(cls, grant: Mapping[str, Any], now: float, previous: ProviderToken | None = None) -> ProviderToken:
        """The provider's token answer; a refresh answer without a new refresh token keeps the old one."""
        access = grant.get("access_token")
        if not isinstance(access, str) or not access:
            raise ProviderError("the provider's token answer has no access_token")
        lifetime = grant.get("expires_in")
        try:
            seconds = float(lifetime) if lifetime is not None else DEFAULT_LIFETIME
        except (TypeError, ValueError):
            seconds = DEFAULT_LIFETIME
        refresh = grant.get("refresh_token") or (previous.refresh_token if previous else None)
        return cls(access, str(refresh) if refresh else None, now + max(seconds, 0.0),
                   str(grant.get("token_type") or "Bearer"))


def _provider_failure(what: str, exc: BaseException, provider: OAuthProvider, *known: str | None) -> ProviderError:
    detail = getattr(exc, "description", None) or getattr(exc, "error", None) or type(exc).__name__
    return ProviderError(redact(f"{what}: {detail}", provider.secrets(*known)))


async def exchange_code(provider: OAuthProvider, code: str, verifier: str, now: float) -> ProviderToken:
    """The authorization code (with its PKCE verifier) for tokens."""
    try:
        async with provider.client() as client:
            grant = await client.fetch_token(provider.token_url, grant_type="authorization_code", code=code,
                                             code_verifier=verifier)
    except Exception as exc:  # authlib's OAuthError, httpx's errors, a provider answering garbage
        raise _provider_failure("the provider refused the authorization code", exc, provider, code) from None
    return ProviderToken.from_grant(grant, now)


async def refresh(provider: OAuthProvider, token: ProviderToken, now: float) -> ProviderToken:
    """A fresh access token from the refresh token (ProviderError when there is none or it is refused)."""
    if not token.refresh_token:
        raise ProviderError("the provider gave this account no refresh token; reconnect it")
    try:
        async with provider.client() as client:
            grant = await client.refresh_token(provider.token_url, refresh_token=token.refresh_token)
    except Exception as exc:
        raise _provider_failure("the provider refused to refresh the token", exc, provider, token.refresh_token,
                                token.access_token) from None
    return ProviderToken.from_grant(grant, now, token)


async def display_name(provider: OAuthProvider, token: ProviderToken) -> str | None:
    """The account's name at the app (``display_field`` of the userinfo answer), or None."""
    if provider.userinfo_url is None:
        return None
    import httpx

    try:
        async with httpx.AsyncClient(timeout=30.0, trust_env=False) as http:
            resp = await http.get(provider.userinfo_url,
                                  headers={"authorization": f"{token.token_type} {token.access_token}",
                                           "accept": "application/json"})
        value = resp.json().get(provider.display_field) if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return str(value)[:200] if isinstance(value, str | int) else None
