"""Reading and editing ``HERMES_HOME/.env``.

The file holds secrets, so it is always written with mode 0600 and atomically. Values from the real
process environment win over the file (an exported variable is the user's most explicit choice).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from hermes.config.atomic import atomic_write

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        inner = value[1:-1]
        if value[0] == '"':
            inner = inner.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        return inner
    # Strip an inline comment after unquoted values: KEY=value # note
    hashpos = value.find(" #")
    return value[:hashpos].rstrip() if hashpos >= 0 else value


def parse_dotenv(text: str) -> dict[str, str]:
    """Parse ``KEY=value`` lines; blank lines and ``#`` comments are ignored."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        if m:
            out[m.group(1)] = _unquote(m.group(2))
    return out


def read_dotenv(path: Path) -> dict[str, str]:
    try:
        return parse_dotenv(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def _quote(value: str) -> str:
    if value and re.fullmatch(r"[A-Za-z0-9_./:@+,=-]*", value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def set_dotenv_value(path: Path, key: str, value: str | None) -> None:
    """Set (or with ``value=None`` remove) one key, keeping every other line as it was."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        raise ValueError(f"not a valid environment variable name: {key!r}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    out: list[str] = []
    done = False
    for line in lines:
        m = _LINE.match(line)
        if m and m.group(1) == key and not line.lstrip().startswith("#"):
            if value is not None and not done:
                out.append(f"{key}={_quote(value)}")
                done = True
            continue
        out.append(line)
    if value is not None and not done:
        out.append(f"{key}={_quote(value)}")
    atomic_write(path, "\n".join(out) + ("\n" if out else ""), mode=0o600)


class Environment:
    """A read-only view of variables: the process environment first, then ``.env``."""

    def __init__(self, process: Mapping[str, str], dotenv: Mapping[str, str]) -> None:
        self._process = process
        self._dotenv = dotenv

    @classmethod
    def load(cls, dotenv_path: Path) -> Environment:
        return cls(os.environ, read_dotenv(dotenv_path))

    def get(self, key: str, default: str | None = None) -> str | None:
        value = self._process.get(key)
        if value:
            return value
        value = self._dotenv.get(key)
        return value if value else default

    def has(self, key: str) -> bool:
        return bool(self.get(key))

    def source(self, key: str) -> str | None:
        """``"environment"``, ``".env"`` or None: where a variable's value comes from."""
        if self._process.get(key):
            return "environment"
        if self._dotenv.get(key):
            return ".env"
        return None

    def as_dict(self) -> dict[str, str]:
        merged = {k: v for k, v in self._dotenv.items() if v}
        merged.update({k: v for k, v in self._process.items() if v})
        return merged
