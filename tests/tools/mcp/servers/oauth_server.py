"""An MCP server behind OAuth, written with the SDK: its own authorization server (metadata, dynamic
client registration, authorization code + PKCE, refresh) and a protected Streamable HTTP endpoint.

``--http PORT`` serves ``http://127.0.0.1:PORT/mcp``; ``--ttl S`` is the access tokens' lifetime. The
authorization endpoint approves at once (the person "clicks allow"): it redirects to the client's
loopback callback with the code. Tools: ``whoami`` (the client id, and — like a careless server — the
bearer token it was sent), ``stats`` (how many codes, refreshes and registrations this process saw).
"""

from __future__ import annotations

import argparse
import secrets
import time
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

STATS = {"registrations": 0, "codes": 0, "refreshes": 0}


class Provider:
    def __init__(self, ttl: int) -> None:
        self.ttl = ttl
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        STATS["registrations"] += 1
        self.clients[str(client_info.client_id)] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or ["notes"], expires_at=time.time() + 300,
            client_id=str(client.client_id), code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = "at-" + secrets.token_hex(12), "rt-" + secrets.token_hex(12)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + self.ttl, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, expires_in=self.ttl, refresh_token=refresh, scope=" ".join(scopes))

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        STATS["codes"] += 1
        self.codes.pop(authorization_code.code, None)
        return self._issue(str(client.client_id), authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        STATS["refreshes"] += 1
        self.refresh.pop(refresh_token.token, None)
        return self._issue(str(client.client_id), scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(getattr(token, "token", ""), None)

    async def exchange_identity_assertion(self, *args: Any) -> OAuthToken:
        raise NotImplementedError("not offered by this server")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, required=True)
    parser.add_argument("--ttl", type=int, default=3600)
    args = parser.parse_args()
    base = f"http://127.0.0.1:{args.http}"
    app = MCPServer("notes", auth_server_provider=Provider(args.ttl), auth=AuthSettings(
        issuer_url=base, resource_server_url=f"{base}/mcp", validate_token_resource=False,
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["notes"],
                                                              default_scopes=["notes"]),
        required_scopes=["notes"]))

    @app.tool()
    def whoami(ctx: Context) -> str:
        """Who the server thinks you are (and, carelessly, the token you sent)."""
        request = ctx.request_context.request
        header = request.headers.get("authorization", "") if request is not None else ""
        return f"client ok; you sent {header}"

    @app.tool()
    def stats() -> dict[str, int]:
        """How many registrations, code exchanges and refreshes this server saw."""
        return dict(STATS)

    import uvicorn

    uvicorn.run(app.streamable_http_app(), host="127.0.0.1", port=args.http, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
