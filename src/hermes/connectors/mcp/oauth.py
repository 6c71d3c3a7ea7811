"""OAuth for remote MCP servers (``auth: oauth``): the MCP authorization spec through the SDK's provider.

The ``mcp`` SDK's :class:`~mcp.client.auth.OAuthClientProvider` does the protocol: on a 401 it reads
the server's protected-resource metadata (RFC 9728), the authorization server's metadata (RFC 8414),
registers a client dynamically (RFC 7591) when none is stored, runs the authorization-code grant with
PKCE (S256) and the ``resource`` indicator (RFC 8707), and refreshes with the refresh token. hermes adds:

* **storage** — ``HERMES_HOME/mcp-tokens/<server>.json`` (0600 in a 0700 folder, written atomically):
  the tokens with their absolute expiry (``expires_at``) and the registered client. The SDK keeps only
  a relative ``expires_in``; :class:`_Provider` restores the expiry on load, so a restart refreshes an
  expired token instead of asking for a new login, and tokens are refreshed :data:`REFRESH_MARGIN`
  seconds **before** they lapse;
* **who may log in** — only ``hermes mcp login NAME`` (:class:`LoopbackLogin`: the address printed and
  opened in the browser, the answer taken on ``http://127.0.0.1:<port>/callback``). A session's
  background connection never starts a login: with no usable token it fails at once with
  :data:`LOGIN_NEEDED`;
* **secrecy** — the token values are :func:`token_secrets`, masked in every result and message of that
  server; they are never printed, logged or handed to the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from hermes.errors import McpError

#: tokens are refreshed this many seconds before their expiry
REFRESH_MARGIN = 60.0
LOGIN_NEEDED = "needs a login: run 'hermes mcp login {name}'"
CLIENT_NAME = "hermes"


def token_path(token_dir: Path, server: str) -> Path:
    return token_dir / f"{server}.json"


class TokenFile:
    """``<server>.json``: ``{"tokens": {...}, "expires_at": ts, "client": {...}}``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write(self, data: dict[str, Any]) -> None:
        from hermes.config.atomic import atomic_write

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(self.path.parent, 0o700)
        atomic_write(self.path, json.dumps(data, indent=1), mode=0o600)

    def update(self, **values: Any) -> None:
        data = self.read()
        data.update(values)
        self.write(data)

    def has_tokens(self) -> bool:
        tokens = self.read().get("tokens")
        return isinstance(tokens, dict) and bool(tokens.get("access_token") or tokens.get("refresh_token"))

    def forget(self) -> bool:
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True


_secret_cache: dict[Path, tuple[float, tuple[str, ...]]] = {}


def token_secrets(token_dir: Path, server: str) -> tuple[str, ...]:
    """The server's stored token values (masked wherever its results or errors are shown); cached by mtime."""
    path = token_path(token_dir, server)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return ()
    cached = _secret_cache.get(path)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    tokens = TokenFile(path).read().get("tokens") or {}
    values = tuple(str(tokens[k]) for k in ("access_token", "refresh_token")
                   if isinstance(tokens, dict) and isinstance(tokens.get(k), str) and len(tokens[k]) >= 4)
    _secret_cache[path] = (mtime, values)
    return values


class _Storage:
    """The SDK's ``TokenStorage`` on a :class:`TokenFile`."""

    def __init__(self, file: TokenFile) -> None:
        self.file = file
        self.on_tokens: Callable[[float | None], None] = lambda _expiry: None

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        tokens = self.file.read().get("tokens")
        return OAuthToken.model_validate(tokens) if isinstance(tokens, dict) else None

    async def set_tokens(self, tokens: Any) -> None:
        expires_at = time.time() + tokens.expires_in if tokens.expires_in else None
        self.file.update(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires_at)
        self.on_tokens(expires_at)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        client = self.file.read().get("client")
        return OAuthClientInformationFull.model_validate(client) if isinstance(client, dict) else None

    async def set_client_info(self, client_info: Any) -> None:
        self.file.update(client=client_info.model_dump(mode="json", exclude_none=True))


def _refresh_at(expires_at: float | None) -> float | None:
    return None if expires_at is None else float(expires_at) - REFRESH_MARGIN


class LoopbackLogin:
    """The person's side of one login: the address to open, the answer on a loopback callback."""

    def __init__(self, show: Callable[[str], None], *, port: int = 0, timeout: float = 300.0) -> None:
        self.show = show
        self.timeout = timeout
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", port))
        self._sock.listen(8)
        self.port = int(self._sock.getsockname()[1])

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def redirect(self, url: str) -> None:
        self.show(url)

    async def callback(self) -> Any:
        from mcp.shared.auth import AuthorizationCodeResult

        answer: asyncio.Future[dict[str, list[str]]] = asyncio.get_running_loop().create_future()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
                while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                    pass
                parts = line.split(" ")
                target = urlsplit(parts[1]) if len(parts) >= 2 else None
                ok = target is not None and target.path == "/callback"
                params = parse_qs(target.query) if target is not None else {}
                body = ("Logged in; you can close this tab and go back to hermes." if ok and "code" in params
                        else "This login did not succeed; see hermes for why.").encode()
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain; charset=utf-8\r\n"
                             + f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode() + body)
                await writer.drain()
                if ok and not answer.done():
                    answer.set_result(params)
            except (OSError, TimeoutError, ValueError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(serve, sock=self._sock)
        try:
            params = await asyncio.wait_for(answer, self.timeout)
        except TimeoutError:
            raise McpError(f"no answer from the browser within {self.timeout:g} s; run the login again") from None
        finally:
            server.close()
        if "error" in params:
            why = params.get("error_description", params["error"])[0]
            raise McpError(f"the authorization server refused the login: {why[:200]}")
        code = params.get("code", [""])[0]
        return AuthorizationCodeResult(code=code, state=params.get("state", [None])[0],
                                       iss=params.get("iss", [None])[0])


def provider_for(server: str, url: str, token_dir: Path, *, scope: str | None = None,
                 login: LoopbackLogin | None = None) -> Any:
    """The SDK's OAuth provider for one server, on its token file; ``login`` only for ``hermes mcp login``."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    file = TokenFile(token_path(token_dir, server))
    storage = _Storage(file)

    class _Provider(OAuthClientProvider):
        async def _initialize(self) -> None:
            await super()._initialize()
            # the SDK keeps no expiry for stored tokens: restore it, so an expired one is refreshed
            self.context.token_expiry_time = _refresh_at(file.read().get("expires_at"))

    async def refuse_redirect(_url: str) -> None:
        raise McpError(LOGIN_NEEDED.format(name=server))

    async def refuse_callback() -> Any:
        raise McpError(LOGIN_NEEDED.format(name=server))

    redirect = login.redirect_uri if login is not None else "http://127.0.0.1:1/callback"
    metadata = OAuthClientMetadata(redirect_uris=[redirect], client_name=CLIENT_NAME,  # type: ignore[list-item]
                                   grant_types=["authorization_code", "refresh_token"],
                                   response_types=["code"], token_endpoint_auth_method="none", scope=scope)
    provider = _Provider(url, metadata, storage,
                         redirect_handler=login.redirect if login is not None else refuse_redirect,
                         callback_handler=login.callback if login is not None else refuse_callback)

    def tokens_set(expires_at: float | None) -> None:  # refresh before the token lapses
        provider.context.token_expiry_time = _refresh_at(expires_at)

    storage.on_tokens = tokens_set
    return provider


def stored_redirect_port(token_dir: Path, server: str) -> int:
    """The loopback port of the client registered earlier (a new login reuses it), else 0 (any)."""
    client = TokenFile(token_path(token_dir, server)).read().get("client") or {}
    for uri in client.get("redirect_uris") or () if isinstance(client, dict) else ():
        parts = urlsplit(str(uri))
        if parts.hostname == "127.0.0.1" and parts.port:
            return int(parts.port)
    return 0
