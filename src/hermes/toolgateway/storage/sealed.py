"""Provider tokens at rest: AES-256-GCM under a key derived from the gateway's signing secret.

:func:`sealing_key` derives the key (HMAC-SHA256 of the secret with a fixed label, so the signing key
itself never encrypts anything); :func:`seal` and :func:`unseal` turn a token into ``v1.<base64>`` and
back, the account id bound in as associated data — a sealed value copied onto another account does
not open. A value that does not open raises :class:`SealedError` (never the value).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from typing import Any

from hermes.errors import HermesError

_LABEL = b"hermes-connector-credential-v1"
_PREFIX = "v1."


class SealedError(HermesError):
    """A sealed credential does not open with this gateway's key."""


def sealing_key(secret: bytes) -> bytes:
    return hmac.new(secret, _LABEL, hashlib.sha256).digest()


def _aesgcm() -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise SealedError("sealing connector tokens needs the cryptography package: "
                          "pip install 'hermes[connectors]'") from None
    return AESGCM


def seal(key: bytes, account_id: str, plain: str) -> str:
    AESGCM = _aesgcm()

    nonce = os.urandom(12)
    box = AESGCM(key).encrypt(nonce, plain.encode("utf-8"), account_id.encode("utf-8"))
    return _PREFIX + base64.urlsafe_b64encode(nonce + box).decode("ascii")


def unseal(key: bytes, account_id: str, sealed: str) -> str:
    AESGCM = _aesgcm()
    from cryptography.exceptions import InvalidTag

    if not sealed.startswith(_PREFIX):
        raise SealedError("the stored connector credential has an unknown format")
    try:
        raw = base64.urlsafe_b64decode(sealed[len(_PREFIX):])
        plain: bytes = AESGCM(key).decrypt(raw[:12], raw[12:], account_id.encode("utf-8"))
        return plain.decode("utf-8")
    except (InvalidTag, ValueError):
        raise SealedError("the stored connector credential does not open with this gateway's key "
                          "(was the gateway secret replaced?)") from None
