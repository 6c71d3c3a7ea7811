"""Who may use the app server: loopback binds need no token, any other bind needs the bearer token.

The token lives in ``HERMES_HOME/serve_token`` (mode 0600, created on first need; its value is never
printed or logged, only its path). On a loopback bind the token is still accepted, and a browser page
from another site (an ``Origin`` header that is not loopback) must present it too, so a web page the
person visits cannot drive their agent.
"""

from __future__ import annotations

import hmac
import secrets
from pathlib import Path

from hermes.net.local import is_loopback, origin_is_local

TOKEN_FILE = "serve_token"
#: the WebSocket subprotocol a browser client names (the server chooses it), and the prefix of the one
#: carrying its token
SUBPROTOCOL = "hermes"
TOKEN_SUBPROTOCOL = "hermes.token."
__all__ = ["SUBPROTOCOL", "TOKEN_SUBPROTOCOL",
           "Gate", "bearer_from", "ensure_token", "is_loopback", "origin_is_local", "read_token", "token_path"]


def token_path(home: Path) -> Path:
    return home / TOKEN_FILE


def ensure_token(home: Path) -> Path:
    """Create the token file when missing (0600, atomic); return its path."""
    from hermes.config.atomic import atomic_write

    path = token_path(home)
    if not path.exists() or not path.read_text(encoding="utf-8").strip():
        atomic_write(path, secrets.token_urlsafe(32) + "\n", mode=0o600)
    return path


def read_token(home: Path) -> str | None:
    path = token_path(home)
    try:
        value = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return value or None


def bearer_from(authorization: str | None, query_token: str | None,
                subprotocols: list[str] | None = None) -> str | None:
    """The token a client presented: ``Authorization: Bearer ...``, a ``hermes.token.TOKEN`` WebSocket
    subprotocol (how the desktop page sends it: a header, so it is in no address a proxy or a browser's
    history keeps) or the ``token`` query parameter."""
    if authorization and authorization[:7].lower() == "bearer ":
        return authorization[7:].strip() or None
    for offered in subprotocols or ():
        if offered.startswith(TOKEN_SUBPROTOCOL) and len(offered) > len(TOKEN_SUBPROTOCOL):
            return offered[len(TOKEN_SUBPROTOCOL):]
    return query_token or None


class Gate:
    """Decides whether a connection may use the API (see the module docstring)."""

    def __init__(self, bind_host: str, token: str | None, *, require_token: bool = False) -> None:
        # ``require_token``: also on loopback (a machine other people log in to: loopback is theirs too; a
        # server started over SSH, whose machine may have other users)
        self.token_required = require_token or not is_loopback(bind_host)
        self.token = token
        if self.token_required and not token:
            from hermes.errors import ConfigError

            raise ConfigError(f"binding {bind_host} needs a bearer token; none was set up")

    def allows(self, presented: str | None, origin: str | None) -> bool:
        if presented is not None:
            return self.token is not None and hmac.compare_digest(presented.encode(), self.token.encode())
        return not self.token_required and origin_is_local(origin)
