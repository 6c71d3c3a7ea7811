"""Round-trip editing of ``config.yaml``.

The program edits the user's file without losing comments, key order or formatting: ruamel.yaml's
round-trip mode keeps them. Reading for lookups is done on the same loaded document. ruamel is imported
only when a config file is actually read or written.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hermes.config.atomic import atomic_write
from hermes.errors import ConfigError

_MISSING = object()


def _yaml() -> Any:
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.indent(mapping=2, sequence=4, offset=2)
    y.width = 4096
    return y


def split_key(key: str) -> list[str]:
    parts = key.split(".")
    if not key or any(not p for p in parts):
        raise ConfigError(f"invalid config key {key!r}: use dotted names such as model.base_url")
    return parts


def parse_scalar(text: str) -> Any:
    """Turn a command-line value into a YAML value: ``true``, ``3``, ``[a, b]`` keep their types."""
    from ruamel.yaml import YAML

    try:
        value = YAML(typ="safe").load(text)
    except Exception:
        return text
    if value is None and text.strip() not in ("null", "~", ""):
        return text
    return value


class ConfigFile:
    """A loaded ``config.yaml`` that can be read with dotted keys and saved back faithfully."""

    def __init__(self, path: Path, data: Any | None = None, text: str = "") -> None:
        self.path = path
        self._data = data
        self._text = text

    @classmethod
    def load(cls, path: Path) -> ConfigFile:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path, None, "")
        if not text.strip():
            return cls(path, None, text)
        try:
            data = _yaml().load(text)
        except Exception as exc:
            raise ConfigError(f"{path} is not valid YAML: {exc}") from None
        if data is not None and not isinstance(data, dict):
            raise ConfigError(f"{path} must hold a mapping at the top level")
        return cls(path, data, text)

    @property
    def data(self) -> dict[str, Any]:
        return self._data if isinstance(self._data, dict) else {}

    def get(self, key: str, default: Any = None) -> Any:
        node: Any = self.data
        for part in split_key(key):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    def has(self, key: str) -> bool:
        return self.get(key, _MISSING) is not _MISSING

    def set(self, key: str, value: Any) -> None:
        from ruamel.yaml.comments import CommentedMap

        if self._data is None:
            self._data = CommentedMap()
        parts = split_key(key)
        node = self._data
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = CommentedMap()
                node[part] = child
            elif not isinstance(child, dict):
                raise ConfigError(f"cannot set {key}: {part} holds a {type(child).__name__}, not a mapping")
            node = child
        node[parts[-1]] = value

    def delete(self, key: str) -> bool:
        parts = split_key(key)
        node: Any = self.data
        for part in parts[:-1]:
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        if isinstance(node, dict) and parts[-1] in node:
            del node[parts[-1]]
            return True
        return False

    def dump(self) -> str:
        if self._data is None:
            return ""
        buf = io.StringIO()
        _yaml().dump(self._data, buf)
        return buf.getvalue()

    def save(self) -> None:
        atomic_write(self.path, self.dump())
        self._text = self.dump()

    def flat_items(self) -> Iterator[tuple[str, Any]]:
        """Every leaf as ``(dotted.key, value)``, in file order."""

        def walk(prefix: str, node: Any) -> Iterator[tuple[str, Any]]:
            if isinstance(node, dict) and node:
                for k, v in node.items():
                    yield from walk(f"{prefix}.{k}" if prefix else str(k), v)
            else:
                yield prefix, node

        if self.data:
            yield from walk("", self.data)
