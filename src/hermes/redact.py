"""Keeping secrets out of tool output and logs.

Any value of an environment variable whose name looks like it holds a secret (``*_KEY``, ``*_TOKEN``,
``*_SECRET``, ``*PASSWORD*``) is replaced by a short mask wherever it would otherwise be shown, and
common key shapes (``sk-...``, ``Bearer ...``) are masked even when their value is unknown.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

#: a secret word at the end of the name (OPENAI_API_KEY, GITHUB_TOKEN, HERMES_API_KEYS), or SECRET/PASSWORD
#: anywhere; names that point at a secret (MODEL_API_KEY_ENV, SSL_KEY_FILE) are not secrets themselves
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEYS?|KEYS?|TOKEN|SECRETS?|PASSWORD|PASSWD|CREDENTIALS?)$|(?:^|_)(?:SECRET|PASSWORD|PASSWD)(?:_|$)",
    re.IGNORECASE,
)
_SHAPES = re.compile(
    r"(?P<bearer>\b[Bb]earer\s+)[A-Za-z0-9._~+/=-]{12,}"
    r"|\b(?:sk|rk|pk)-(?:[A-Za-z0-9]+-){0,8}[A-Za-z0-9]{16,}"  # bounded: "sk-sk-sk-…" must stay linear
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
)
#: a text holding none of these has no match of _SHAPES (each alternative contains one of them)
_SHAPE_HINTS = ("earer", "sk-", "rk-", "pk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "xox", "AKIA")
MASK = "***REDACTED***"
_MIN_SECRET_LEN = 8


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


#: (the environment's raw names, the secret-looking names, their raw keys)
_names_cache: tuple[tuple[object, ...], list[str], list[object]] = ((), [], [])
#: (the raw values of the secret-looking names, the answer of secret_values() for them)
_values_cache: tuple[tuple[object, ...], list[str]] = ((), [])


def _raw_environ() -> dict[object, object] | None:
    """``os.environ``'s own encoded dict, when it has one (CPython does).

    Copying its keys or reading one value is a C-level operation, where iterating ``os.environ``
    decodes every name (about 0.3 µs each; with a hundred variables that alone would double the cost
    of a dispatch) and ``os.environ.get`` encodes the name and decodes the value.
    """
    data = getattr(os.environ, "_data", None)
    return data if isinstance(data, dict) else None


def _secret_names() -> tuple[list[str], list[object]]:
    """Secret-looking names in os.environ and their raw keys, rescanned whenever the set of names changes."""
    global _names_cache
    data = _raw_environ()
    keys = tuple(os.environ if data is None else data)
    if keys != _names_cache[0]:
        names = [k for k in os.environ if is_secret_name(k)]
        raw_keys: list[object] = [os.environ.encodekey(k) for k in names] if data is not None else list(names)
        _names_cache = (keys, names, raw_keys)
    return _names_cache[1], _names_cache[2]


def _sorted_secrets(values: Iterable[str]) -> list[str]:
    return sorted({v for v in values if v and len(v) >= _MIN_SECRET_LEN}, key=len, reverse=True)


def secret_values(env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> list[str]:
    """Values worth masking: long enough to be unambiguous, longest first.

    This runs on every tool result. For the process environment the secret-looking *names* are
    rescanned only when the set of names changes, and the answer is reused while their raw values
    are unchanged (compared on every call, so a changed value is seen at once).
    """
    global _values_cache
    if env is None and not extra:
        names, raw_keys = _secret_names()
        data = _raw_environ()
        if data is None:
            return _sorted_secrets(v for k in names if (v := os.environ.get(k)))
        raw = tuple(data.get(k) for k in raw_keys)
        if raw != _values_cache[0]:
            _values_cache = (raw, _sorted_secrets(v for k in names if (v := os.environ.get(k))))
        return list(_values_cache[1])
    source = os.environ if env is None else env
    values = {v for k, v in source.items() if v and len(v) >= _MIN_SECRET_LEN and is_secret_name(k)}
    values.update(v for v in extra if v and len(v) >= _MIN_SECRET_LEN)
    return sorted(values, key=len, reverse=True)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Mask the given secret values and any well-known key shapes in ``text``."""
    for value in secrets:
        if value in text:
            text = text.replace(value, MASK)

    if not any(hint in text for hint in _SHAPE_HINTS):
        return text  # the common case: scanning 50 kB with _SHAPES costs ~5 ms, these tests ~50 µs

    def repl(m: re.Match[str]) -> str:
        return (m.group("bearer") or "") + MASK

    return _SHAPES.sub(repl, text)
