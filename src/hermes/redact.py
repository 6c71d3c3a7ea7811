"""Keeping secrets out of tool output and logs.

Any value of an environment variable whose name looks like it holds a secret (``*_KEY``, ``*_TOKEN``,
``*_SECRET``, ``*PASSWORD*``) is replaced by a short mask wherever it would otherwise be shown, and
common key shapes (``sk-...``, ``Bearer ...``) are masked even when their value is unknown.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

#: a secret word at the end of the name (OPENAI_API_KEY, GITHUB_TOKEN), or SECRET/PASSWORD anywhere;
#: names that point at a secret (MODEL_API_KEY_ENV, SSL_KEY_FILE) are not secrets themselves
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$|(?:^|_)(?:SECRET|PASSWORD|PASSWD)(?:_|$)",
    re.IGNORECASE,
)
_SHAPES = re.compile(
    r"(?P<bearer>\b[Bb]earer\s+)[A-Za-z0-9._~+/=-]{12,}"
    r"|\b(?:sk|rk|pk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9]{16,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
)
MASK = "***REDACTED***"
_MIN_SECRET_LEN = 8


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


_names_cache: tuple[tuple[object, ...], list[str]] = ((), [])


def _secret_names() -> list[str]:
    """Names of secret-looking variables in os.environ, rescanned whenever the set of names changes."""
    global _names_cache
    raw = getattr(os.environ, "_data", None)  # the undecoded mapping: its keys are compared at C speed
    keys: tuple[object, ...] = tuple(raw) if isinstance(raw, dict) else tuple(os.environ)
    if keys != _names_cache[0]:
        _names_cache = (keys, [k for k in os.environ if is_secret_name(k)])
    return _names_cache[1]


def secret_values(env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> list[str]:
    """Values worth masking: long enough to be unambiguous, longest first.

    For the process environment the secret-looking *names* are cached briefly (this runs on every
    tool result); their values are always read fresh.
    """
    if env is None and not extra:
        values = {v for k in _secret_names() if (v := os.environ.get(k)) and len(v) >= _MIN_SECRET_LEN}
        return sorted(values, key=len, reverse=True)
    source = os.environ if env is None else env
    values = {v for k, v in source.items() if v and len(v) >= _MIN_SECRET_LEN and is_secret_name(k)}
    values.update(v for v in extra if v and len(v) >= _MIN_SECRET_LEN)
    return sorted(values, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Mask the given secret values and any well-known key shapes in ``text``."""
    for value in secrets:
        if value in text:
            text = text.replace(value, MASK)

    def repl(m: re.Match[str]) -> str:
        return (m.group("bearer") or "") + MASK

    return _SHAPES.sub(repl, text)
