"""Reading the gateway's configuration file: the file itself and typed access to its tables.

:func:`read_file` loads TOML (``.toml``) or YAML; :class:`TableReader` reads one table with errors
that name the dotted key (``gateway config: relays.modal.max_idle must be …``). Every relay's own
settings module (``browser.config``, ``sandbox.config``; the uploads part of ``config``) reads its table
through it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes.errors import ConfigError


class TableReader:
    """Typed access to one table of the file; ``prefix`` is its dotted path (``relays.modal.``)."""

    def __init__(self, data: Mapping[str, Any], prefix: str = "") -> None:
        self.data = data
        self.prefix = prefix

    def name(self, key: str) -> str:
        """The dotted name of ``key``, as error messages show it."""
        return f"{self.prefix}{key}"

    def fail(self, key: str, what: str) -> ConfigError:
        """``gateway config: <dotted key> <what>`` as an error to raise."""
        return ConfigError(f"gateway config: {self.name(key)} {what}")

    def table(self, key: str) -> TableReader:
        value = self.data.get(key, {})
        if not isinstance(value, Mapping):
            raise self.fail(key, "must be a table")
        return TableReader(value, f"{self.name(key)}.")

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self.data.get(key, default)
        if value is not None and not isinstance(value, str):
            raise self.fail(key, "must be a string")
        return value

    def word(self, key: str) -> str | None:
        """A non-empty string (numbers are accepted as text, e.g. a user id), stripped; None when absent."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
            raise self.fail(key, "must be a non-empty string")
        return str(value).strip()

    def choice(self, key: str, choices: tuple[str, ...], default: str) -> str:
        value = self.text(key, default) or default
        if value not in choices:
            raise self.fail(key, f"must be one of {', '.join(choices)}, not {value!r}")
        return value

    def number(self, key: str, default: float, *, minimum: float = 0.0, maximum: float | None = None) -> float:
        value = self.data.get(key, default)
        top = math.inf if maximum is None else maximum
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                or not minimum <= value <= top:
            bound = f">= {minimum:g}" if maximum is None else f"from {minimum:g} to {maximum:g}"
            raise self.fail(key, f"must be a number {bound}")
        return float(value)

    def integer(self, key: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum \
                or (maximum is not None and value > maximum):
            bound = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
            raise self.fail(key, f"must be a whole number {bound}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return value

    def strings(self, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        value = self.data.get(key, list(default))
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.fail(key, "must be a list of non-empty strings")
        return tuple(v.strip() for v in value)


def read_file(path: Path) -> Mapping[str, Any]:
    """The top-level table of the config file at ``path`` (TOML by suffix, else YAML)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the gateway config {path}: {exc}") from exc
    try:
        if path.suffix.lower() == ".toml":
            import tomllib

            data: Any = tomllib.loads(text)
        else:
            from ruamel.yaml import YAML

            data = YAML(typ="safe").load(text) or {}
    except Exception as exc:  # tomllib and ruamel raise their own error types
        raise ConfigError(f"the gateway config {path} is not valid: {exc}") from exc
    if not isinstance(data, Mapping):
        raise ConfigError(f"the gateway config {path} must be a table of keys")
    return data


__all__ = ["TableReader", "read_file"]
