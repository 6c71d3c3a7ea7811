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


_ESCAPES = {"n": "\n", '"': '"', "\\": "\\"}


class _BadValue(ValueError):
    """A value this parser cannot read; the message says why."""


def _unquote(value: str) -> str:
    """The value of ``KEY=<value>``: quoted (``"..."`` with ``\\"``, ``\\n``, ``\\\\`` escapes, or ``'...'``)
    followed by nothing or a ``# comment``; or unquoted, with an optional `` # comment``."""
    if value[:1] in ("'", '"'):
        quote, out, i = value[0], [], 1
        while i < len(value):
            c = value[i]
            if quote == '"' and c == "\\" and i + 1 < len(value):
                out.append(_ESCAPES.get(value[i + 1], c + value[i + 1]))
                i += 2
                continue
            if c == quote:
                rest = value[i + 1:].strip()
                if rest and not rest.startswith("#"):
                    raise _BadValue(f"text after the closing quote: {rest[:20]!r}")
                return "".join(out)
            out.append(c)
            i += 1
        raise _BadValue("its quote is never closed")
    # Strip an inline comment after unquoted values: KEY=value # note
    hashpos = value.find(" #")
    return value[:hashpos].rstrip() if hashpos >= 0 else value


#: problems already reported, so a command that reads .env several times warns once per line
_warned: set[tuple[str, int, str]] = set()


def _warn(where: str, lineno: int, why: str) -> None:
    if (where, lineno, why) not in _warned:
        _warned.add((where, lineno, why))
        import logging

        logging.getLogger("hermes.config").warning("%s line %d is skipped: %s", where, lineno, why)


def _undecodable(line: str) -> str | None:
    """Why ``line`` (decoded with ``surrogateescape``) is not UTF-8, or None."""
    for column, c in enumerate(line, 1):
        if "\udc80" <= c <= "\udcff":
            return f"byte 0x{ord(c) - 0xDC00:02x} at column {column} is not UTF-8"
    return None


def parse_dotenv(text: str, *, where: str = ".env") -> dict[str, str]:
    """Parse ``KEY=value`` lines; blank lines and ``#`` comments are ignored. A line that cannot be read
    is skipped with one warning naming ``where`` and the line's number; the rest still count."""
    out: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        bad = _undecodable(line)
        if bad is not None:
            _warn(where, lineno, bad)
            continue
        m = _LINE.match(line)
        if not m:
            _warn(where, lineno, "it is not KEY=value")
            continue
        try:
            out[m.group(1)] = _unquote(m.group(2))
        except _BadValue as exc:
            _warn(where, lineno, f"the value of {m.group(1)} cannot be read ({exc})")
    return out


def _read_text(path: Path) -> str:
    """The file's text; bytes that are not UTF-8 are kept as surrogate escapes, so nothing is lost."""
    return path.read_bytes().decode("utf-8", errors="surrogateescape")


def read_dotenv(path: Path) -> dict[str, str]:
    try:
        return parse_dotenv(_read_text(path), where=str(path))
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
        lines = _read_text(path).splitlines()
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
    text = "\n".join(out) + ("\n" if out else "")
    atomic_write(path, text.encode("utf-8", errors="surrogateescape"), mode=0o600)  # other lines byte for byte


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


def variable_set(name: str) -> bool:
    """Whether ``name`` has a non-blank value in the environment or in ``HERMES_HOME/.env`` (a file read,
    no network): the offline availability check of tools that need one key."""
    import os

    if os.environ.get(name, "").strip():
        return True
    from hermes.config.paths import HermesPaths

    try:
        return bool(read_dotenv(HermesPaths.current().env).get(name, "").strip())
    except (OSError, ValueError):
        return False
