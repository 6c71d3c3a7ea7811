"""Portal access tokens for client-side tests: the client reads a token's claims without verifying it."""

from __future__ import annotations

import base64
import json
from typing import Any


def jwt(claims: dict[str, Any]) -> str:
    """An unsigned JWT (``alg: none``) carrying ``claims``, the shape of a portal access token."""

    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part(claims)}.sig"
