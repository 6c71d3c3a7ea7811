"""Typed reads of configuration keys: one place for what a bool, a number, a string or a list may be.

:data:`TRUE_WORDS` and :data:`FALSE_WORDS` are the words a yes/no setting may be written as (any case,
spaces around ignored), wherever hermes reads one: config.yaml keys, legacy ``use_gateway`` flags,
``HERMES_*`` environment switches. :func:`truth` parses one of them.

:class:`ConfigReader` reads dotted keys (``web.fetch_timeout``) of one mapping: each method takes the
key and a default (used when the key is absent or null) and raises one :class:`~hermes.errors.ConfigError`
naming the key for a value of the wrong kind, e.g. ``web.fetch_timeout in config.yaml must be a number
from 1 to 300``. The gateway's file reader (:class:`hermes.toolgateway.configread.TableReader`) is the
same reader with the gateway's wording and stricter booleans.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Self

from hermes.errors import ConfigError

#: words that mean yes
TRUE_WORDS = frozenset({"true", "yes", "on", "1"})
#: words that mean no
FALSE_WORDS = frozenset({"false", "no", "off", "0"})


def truth(text: str) -> bool | None:
    """True for a word of :data:`TRUE_WORDS`, False for one of :data:`FALSE_WORDS`, None for other text."""
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return None


class ConfigReader:
    """Typed access to one config mapping; ``prefix`` is the dotted path of the mapping (``relays.modal.``)."""

    #: whether a boolean key may be written as one of the yes/no words (config.yaml: yes)
    accepts_words = True

    def __init__(self, data: Mapping[str, Any], prefix: str = "") -> None:
        self.data = data
        self.prefix = prefix

    # -- naming and failing -------------------------------------------------------------------------------
    def name(self, key: str) -> str:
        """The dotted name of ``key``, as error messages show it."""
        return f"{self.prefix}{key}"

    def fail(self, key: str, what: str) -> ConfigError:
        """``<dotted key> in config.yaml <what>`` as an error to raise."""
        return ConfigError(f"{self.name(key)} in config.yaml {what}")

    # -- reading ----------------------------------------------------------------------------------------
    def value(self, key: str, default: Any = None) -> Any:
        """The raw value of a dotted key; ``default`` when absent, null, or when a parent is not a mapping."""
        node: Any = self.data
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return default if node is None else node

    def table(self, key: str) -> Self:
        """A reader of the mapping under ``key`` (an empty one when absent)."""
        value = self.value(key, {})
        if not isinstance(value, Mapping):
            raise self.fail(key, "must be a table")
        return type(self)(value, f"{self.name(key)}.")

    def flag(self, key: str, default: bool) -> bool:
        """true/false (or, where :attr:`accepts_words`, a yes/no word)."""
        value = self.value(key, default)
        if isinstance(value, bool):
            return value
        if self.accepts_words and isinstance(value, str):
            parsed = truth(value)
            if parsed is not None:
                return parsed
        raise self.fail(key, "must be true or false")

    def number(self, key: str, default: float, *, minimum: float = 0.0, maximum: float | None = None) -> float:
        """A finite int or float from ``minimum`` to ``maximum`` (no upper bound when None)."""
        value = self.value(key, default)
        top = math.inf if maximum is None else maximum
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                or not minimum <= value <= top:
            bound = f">= {minimum:g}" if maximum is None else f"from {minimum:g} to {maximum:g}"
            raise self.fail(key, f"must be a number {bound}")
        return float(value)

    def integer(self, key: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
        """A whole number (an int, not a float) from ``minimum`` to ``maximum``."""
        value = self.value(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum \
                or (maximum is not None and value > maximum):
            bound = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
            raise self.fail(key, f"must be a whole number {bound}")
        return value

    def text(self, key: str, default: str | None = None) -> str | None:
        """A string, stripped (numbers are read as their text); ``default`` when absent or blank."""
        value = self.value(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(key, f"must be a string, not {type(value).__name__}")
        return str(value).strip() or default

    def strings(self, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        """A list of non-empty strings, each stripped."""
        value = self.value(key, list(default))
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.fail(key, "must be a list of non-empty strings")
        return tuple(v.strip() for v in value)


__all__ = ["FALSE_WORDS", "TRUE_WORDS", "ConfigReader", "truth"]
