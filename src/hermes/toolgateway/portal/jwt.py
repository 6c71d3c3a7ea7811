"""HS256 JSON Web Tokens (RFC 7519 / RFC 7515 compact form), standard library only.

The gateway signs its access tokens with one server secret; :func:`verify` accepts only ``HS256``
(``alg: none`` and every other algorithm are refused before any signature work), compares signatures
in constant time and checks ``exp`` and ``nbf``. Clients never verify — they only read the claims
(see :mod:`hermes.routing.credentials`) — so the payload stays plain base64url JSON.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

_HEADER = {"alg": "HS256", "typ": "JWT"}
_MAX_TOKEN = 16 * 1024


class InvalidToken(Exception):
    """The token is malformed, badly signed, or outside its validity window. ``reason`` is a code."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def b64url_encode(raw: bytes) -> str:
    """base64url without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Inverse of :func:`b64url_encode`; raises ValueError on bad input."""
    if any(c in "+/= \n" for c in text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _json_part(obj: Mapping[str, Any]) -> str:
    return b64url_encode(json.dumps(obj, separators=(",", ":"), sort_keys=True).encode("utf-8"))


_HEADER_PART = _json_part(_HEADER)


def _signature(secret: bytes, signing_input: str) -> bytes:
    return hmac.new(secret, signing_input.encode("ascii"), hashlib.sha256).digest()


def sign(claims: Mapping[str, Any], secret: bytes) -> str:
    """The compact JWT ``header.payload.signature`` for ``claims``."""
    signing_input = f"{_HEADER_PART}.{_json_part(claims)}"
    return f"{signing_input}.{b64url_encode(_signature(secret, signing_input))}"


def _decode_json(part: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(b64url_decode(part))
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidToken("malformed", f"the token's {what} is not base64url JSON") from exc
    if not isinstance(value, dict):
        raise InvalidToken("malformed", f"the token's {what} is not a JSON object")
    return value


def verify(token: str, secret: bytes, *, now: float, leeway: float = 0.0) -> dict[str, Any]:
    """The claims of ``token`` if it is a well-formed HS256 JWT signed with ``secret`` and valid at ``now``.

    Raises :class:`InvalidToken` with ``reason`` ``malformed``, ``bad_signature`` or ``expired``
    (also for a ``nbf`` in the future). A token without a numeric ``exp`` is ``malformed``: the gateway
    never issues one.
    """
    if not isinstance(token, str) or len(token) > _MAX_TOKEN or token.count(".") != 2:
        raise InvalidToken("malformed", "not a JWT")
    header_part, payload_part, sig_part = token.split(".")
    header = _decode_json(header_part, "header")
    if header.get("alg") != "HS256":
        raise InvalidToken("bad_signature", "the token is not signed with HS256")
    try:
        given = b64url_decode(sig_part)
    except (ValueError, binascii.Error) as exc:
        raise InvalidToken("malformed", "the token's signature is not base64url") from exc
    if not hmac.compare_digest(given, _signature(secret, f"{header_part}.{payload_part}")):
        raise InvalidToken("bad_signature", "the token's signature does not match this gateway")
    claims = _decode_json(payload_part, "payload")
    exp = claims.get("exp")
    if isinstance(exp, bool) or not isinstance(exp, int | float):
        raise InvalidToken("malformed", "the token has no numeric exp claim")
    if exp <= now - leeway:
        raise InvalidToken("expired", "the token has expired")
    nbf = claims.get("nbf")
    if isinstance(nbf, int | float) and not isinstance(nbf, bool) and nbf > now + leeway:
        raise InvalidToken("expired", "the token is not valid yet")
    return claims


def unverified_claims(token: str) -> dict[str, Any] | None:
    """The payload of a JWT without checking anything (to find the ``jti`` of a token being revoked)."""
    if not isinstance(token, str) or len(token) > _MAX_TOKEN or token.count(".") != 2:
        return None
    try:
        return _decode_json(token.split(".")[1], "payload")
    except InvalidToken:
        return None
