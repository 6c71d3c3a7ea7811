"""The browser vault's store: site logins encrypted at rest (docs/tools/browser.md#the-vault).

The entries live in ``HERMES_HOME/browser/vault.bin`` (0600, written atomically): one AES-256-GCM
blob (a random 12-byte nonce, then the ciphertext of the JSON list of entries). The 32-byte key comes
from the OS keyring when the ``keyring`` package finds a usable backend (service
``hermes-browser-vault``, user = the HERMES_HOME path), else from ``HERMES_HOME/browser/vault.key``
(0600). :func:`key_store_of` says which, without creating anything.

An entry is a site (its origin, ``https://example.com``), a username, a password and optionally a TOTP
secret, named by an opaque handle (``v-`` and 10 hex digits). What the model may see is
:meth:`VaultEntry.public` — never the password or the TOTP secret.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hermes.config.atomic import atomic_write
from hermes.errors import ConfigError

KEYRING_SERVICE = "hermes-browser-vault"
KEY_BYTES = 32
NONCE_BYTES = 12
MAX_FIELD = 4096


@dataclass(frozen=True)
class VaultEntry:
    handle: str
    site: str
    username: str
    password: str
    totp_secret: str | None = None
    created: float = 0.0

    def public(self) -> dict[str, Any]:
        """What a tool result may carry: no password, no TOTP secret."""
        return {"handle": self.handle, "site": self.site, "username": self.username,
                "has_totp": bool(self.totp_secret)}


def site_of(url: str) -> str:
    """The origin an entry is kept under: ``scheme://host[:port]`` in lower case; a ConfigError for
    anything that is not an http(s) URL with a host."""
    text = url.strip()
    if "://" not in text:
        text = f"https://{text}"
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"not a site address: {url[:200]!r} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"not a site address: {url[:200]!r} (an http(s) URL with a host is needed)")
    default = 443 if parts.scheme == "https" else 80
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


def _usable_keyring() -> Any | None:
    """The keyring backend when the ``keyring`` package is installed and its backend can store secrets
    (not the "fail" or "null" ones of a headless machine); else None."""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:
        return None
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 0) <= 0:
        return None
    return backend


class Vault:
    """The vault of one HERMES_HOME."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.folder = home / "browser"
        self.path = self.folder / "vault.bin"
        self.key_path = self.folder / "vault.key"

    # -- the key ---------------------------------------------------------------------------------------
    def key_store(self) -> str:
        """Where the key is (or would be) kept, in words."""
        if self.key_path.exists():
            return f"key file {self.key_path} (0600)"
        backend = _usable_keyring()
        if backend is not None:
            return f"OS keyring ({type(backend).__module__}.{type(backend).__name__})"
        return f"key file {self.key_path} (0600; no usable OS keyring here)"

    def _key(self, create: bool) -> bytes | None:
        if self.key_path.exists():
            return base64.b64decode(self.key_path.read_text(encoding="ascii").strip())
        backend = _usable_keyring()
        if backend is not None:
            stored = backend.get_password(KEYRING_SERVICE, str(self.home))
            if stored:
                return base64.b64decode(stored)
        if not create:
            return None
        key = secrets.token_bytes(KEY_BYTES)
        encoded = base64.b64encode(key).decode("ascii")
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if backend is not None:
            try:
                backend.set_password(KEYRING_SERVICE, str(self.home), encoded)
                return key
            except Exception:  # a keyring that refuses writes: fall back to the file
                pass
        atomic_write(self.key_path, encoded + "\n", mode=0o600)
        return key

    # -- the entries -----------------------------------------------------------------------------------
    def entries(self) -> list[VaultEntry]:
        if not self.path.exists():
            return []
        key = self._key(create=False)
        if key is None:
            raise ConfigError(f"the vault {self.path} exists but its key is gone ({self.key_store()})")
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        blob = self.path.read_bytes()
        try:
            plain = AESGCM(key).decrypt(blob[:NONCE_BYTES], blob[NONCE_BYTES:], b"hermes-vault-v1")
        except (InvalidTag, ValueError):
            raise ConfigError(f"the vault {self.path} cannot be decrypted with its key ({self.key_store()})") from None
        return [VaultEntry(**item) for item in json.loads(plain)]

    def _write(self, entries: list[VaultEntry]) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        key = self._key(create=True)
        assert key is not None
        nonce = os.urandom(NONCE_BYTES)
        plain = json.dumps([asdict(e) for e in entries]).encode("utf-8")
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(self.path, nonce + AESGCM(key).encrypt(nonce, plain, b"hermes-vault-v1"), mode=0o600)

    def add(self, site: str, username: str, password: str, totp_secret: str | None = None) -> VaultEntry:
        """Store a login (replacing the entry of the same site and username); the new entry."""
        entry = self._checked(site, username, password, totp_secret)
        kept = [e for e in self.entries() if not (e.site == entry.site and e.username == username)]
        self._write([*kept, entry])
        return entry

    def add_many(self, logins: list[tuple[str, str, str, str | None]]) -> tuple[list[VaultEntry], list[str]]:
        """Store many (site, username, password, totp) logins in one write, each replacing the entry of the
        same site and username: the new entries, and why each refused one was refused."""
        added: list[VaultEntry] = []
        refused: list[str] = []
        for site, username, password, totp in logins:
            try:
                added.append(self._checked(site, username, password, totp))
            except ConfigError as exc:
                refused.append(f"{username} at {site[:100]}: {exc}")
        fresh = {(e.site, e.username) for e in added}
        kept = [e for e in self.entries() if (e.site, e.username) not in fresh]
        last = {(e.site, e.username): e for e in added}  # a login twice in the source: the last one wins
        if added:
            self._write([*kept, *last.values()])
        return list(last.values()), refused

    def _checked(self, site: str, username: str, password: str, totp_secret: str | None) -> VaultEntry:
        if not username or not password:
            raise ConfigError("a vault entry needs a username and a password")
        if len(username) > MAX_FIELD or len(password) > MAX_FIELD:
            raise ConfigError(f"a username or password longer than {MAX_FIELD} characters")
        if totp_secret:
            totp_secret = totp_secret.replace(" ", "").upper()
            try:
                base64.b32decode(totp_secret + "=" * (-len(totp_secret) % 8))
            except ValueError:
                raise ConfigError("the TOTP secret is not base32 (the text under a QR code)") from None
        return VaultEntry(f"v-{secrets.token_hex(5)}", site_of(site), username, password, totp_secret or None,
                          time.time())

    def remove(self, handle: str) -> VaultEntry | None:
        entries = self.entries()
        found = next((e for e in entries if e.handle == handle), None)
        if found is not None:
            self._write([e for e in entries if e.handle != handle])
        return found

    def find(self, handle: str) -> VaultEntry | None:
        return next((e for e in self.entries() if e.handle == handle), None)

    def for_site(self, url: str) -> list[VaultEntry]:
        """The entries kept for the origin of ``url`` (none for a page that is not http(s))."""
        try:
            origin = site_of(url)
        except ConfigError:
            return []
        return [e for e in self.entries() if e.site == origin]
