"""Reading the gateway's configuration file: the file itself and typed access to its tables.

:func:`read_file` loads TOML (``.toml``) or YAML; :class:`TableReader` reads one table with errors
that name the dotted key (``gateway config: relays.modal.max_idle must be …``): the typed
:class:`~hermes.config.reader.ConfigReader` in the gateway's wording. Every relay's own settings
module (``browser.config``, ``sandbox.config``; the uploads part of ``config``) reads its table
through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes.config.reader import ConfigReader
from hermes.errors import ConfigError


class TableReader(ConfigReader):
    """Typed access to one table of the file; ``prefix`` is its dotted path (``relays.modal.``).

    The :class:`~hermes.config.reader.ConfigReader` with the gateway's wording (``gateway config: …``),
    keys looked up as they are (a null value is a value, and a wrong one), booleans only as true/false
    and strings not stripped.
    """

    accepts_words = False

    def value(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def fail(self, key: str, what: str) -> ConfigError:
        """``gateway config: <dotted key> <what>`` as an error to raise."""
        return ConfigError(f"gateway config: {self.name(key)} {what}")

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
