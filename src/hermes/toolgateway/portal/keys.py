"""Server secrets created on first start: the token-signing key and the admin token (files, mode 0600).

Two processes starting at once must end up with the same secret, so a file is created exactly once:
the value is written to a temporary file which is then *hard-linked* to the final name (``os.link``
fails when the name exists); the loser of the race reads the winner's file. A file readable by others
is refused: whoever reads it can mint tokens.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from pathlib import Path

from hermes.errors import ConfigError

_SECRET_BYTES = 32


def _read(path: Path) -> str:
    if os.name != "nt" and stat.S_IMODE(path.stat().st_mode) & 0o077:
        raise ConfigError(f"{path} is readable by other users; run 'chmod 600 {path}' (it signs gateway tokens)")
    value = path.read_text(encoding="ascii").strip()
    if not value:
        raise ConfigError(f"{path} is empty; delete it to let the gateway create a new one")
    return value


def _create_once(path: Path, value: str) -> str:
    """Write ``value`` to ``path`` unless it exists; return what ``path`` holds afterwards."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(path.parent, 0o700)
    if path.exists():
        return _read(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(value + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return _read(path)


def signing_secret(path: Path) -> bytes:
    """The HS256 key (32 random bytes, stored hex-encoded), created on first use."""
    text = _create_once(path, secrets.token_hex(_SECRET_BYTES))
    try:
        raw = bytes.fromhex(text)
    except ValueError as exc:
        raise ConfigError(f"{path} does not hold a hex secret; delete it to create a new one") from exc
    if len(raw) < 16:
        raise ConfigError(f"{path} holds a secret shorter than 16 bytes; delete it to create a new one")
    return raw


def admin_token(path: Path, configured: str | None = None) -> str:
    """The admin token: the configured one, else the one in ``path`` (created on first use)."""
    if configured:
        return configured
    return _create_once(path, "gwadm_" + secrets.token_urlsafe(32))
