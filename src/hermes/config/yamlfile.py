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

        from hermes.config.yamlcomments import append_keeping_comments

        if self._data is None:
            self._data = CommentedMap()
        parts = split_key(key)
        # the deepest mapping that already exists on the path: a key added there is appended after its
        # last item, so the comment lines trailing that item must move along (see yamlcomments)
        anchor: Any = self._data
        depth = 0
        for part in parts[:-1]:
            child = anchor.get(part)
            if not isinstance(child, dict):
                break
            anchor, depth = child, depth + 1
        if parts[depth] in anchor or not len(anchor):
            self._assign(key, parts, value)
        else:
            append_keeping_comments(anchor, lambda: self._assign(key, parts, value))

    def _assign(self, key: str, parts: list[str], value: Any) -> None:
        from ruamel.yaml.comments import CommentedMap

        node: Any = self._data
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

    def delete_preserving_comments(self, key: str) -> bool:
        """Delete ``key`` and save at once, keeping the comments around it; emptied parent sections go too.

        ruamel attaches a comment block to the key *before* it, so deleting a key through ruamel would
        also drop a section header such as ``# agent settings`` below it. The key's lines are removed
        from the file text instead; if the result does not parse to exactly the expected document,
        ruamel's delete is used after all. The file must hold what this object holds (save pending changes
        first); this object then holds the file as written. Returns False when the key is not set.
        """
        if not self.has(key):
            return False
        # work on a fresh load: line numbers of keys set since the last load would be stale
        fresh = ConfigFile.load(self.path)
        parts = split_key(key)
        while fresh.has(".".join(parts)):
            fresh._delete_one(parts)
            parts = parts[:-1]
            if not parts:
                break
            parent = fresh.get(".".join(parts))
            if parent is not None and parent != {}:
                break
        self._data, self._text = fresh._data, fresh._text
        return True

    def _delete_one(self, parts: list[str]) -> None:
        import copy

        dotted = ".".join(parts)
        expected = ConfigFile(self.path, copy.deepcopy(self.data))
        expected.delete(dotted)
        text = self._text_without(parts)
        candidate = _parse(self.path, text) if text is not None else None
        parent = ".".join(parts[:-1])
        if text is not None and candidate is not None and _leaves(candidate, parent) == _leaves(expected, parent):
            atomic_write(self.path, text)
            self._data, self._text = candidate._data, text
            return
        self.delete(dotted)
        self.save()
        fresh = ConfigFile.load(self.path)
        self._data, self._text = fresh._data, fresh._text

    def _text_without(self, parts: list[str]) -> str | None:
        """The file text without the lines of ``parts``' node, or None when that cannot be done by lines."""
        parent: Any = self.data if len(parts) == 1 else self.get(".".join(parts[:-1]))
        lc = getattr(parent, "lc", None)
        fa = getattr(parent, "fa", None)
        if lc is None or (fa is not None and fa.flow_style()):
            return None
        try:
            line, col = lc.key(parts[-1])
        except (KeyError, TypeError):
            return None
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
        except OSError:
            return None
        end = line + 1
        while end < len(lines):
            text = lines[end]
            stripped = text.strip()
            indent = len(text) - len(text.lstrip(" "))
            if not stripped or stripped.startswith("#") or indent > col or (indent == col and stripped[0] == "-"):
                end += 1
                continue
            break
        # blank lines and comments at or left of the key's column introduce what follows: keep them
        while end > line + 1:
            text = lines[end - 1]
            stripped = text.strip()
            indent = len(text) - len(text.lstrip(" "))
            if stripped and not (stripped.startswith("#") and indent <= col):
                break
            end -= 1
        return "".join(lines[:line] + lines[end:])

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


def _leaves(cfg: ConfigFile, parent: str) -> list[tuple[str, Any]]:
    """Leaves for comparison; an emptied parent reads as ``{}`` through ruamel and ``null`` as text."""
    return [(k, v) for k, v in cfg.flat_items() if not (k == parent and (v is None or v == {}))]


def _parse(path: Path, text: str) -> ConfigFile | None:
    """``text`` loaded round-trip, or None when it is not a mapping document."""
    try:
        data = _yaml().load(text) if text.strip() else None
    except Exception:
        return None
    if data is not None and not isinstance(data, dict):
        return None
    return ConfigFile(path, data, text)
