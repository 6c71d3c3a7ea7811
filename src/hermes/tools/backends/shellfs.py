"""File primitives over a backend's commands, for backends that have no file API of their own (``modal``).

``stat`` is one ``stat -L -c`` line; a read is ``base64`` of the file (refused past the size asked for);
a write sends the bytes base64-encoded on stdin to a temporary file beside the target, which is then
renamed over it (atomic there). Each is one command on the backend. :class:`ShellFilesBackend` is the
base class of the backends whose files are all done this way (``docker``, ``modal``).
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import secrets
import shlex

from hermes.tools.backends.base import Backend, BackendError, FileStat

NEW_FILE_MODE = 0o644


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").strip()


def stat(backend: Backend, path: str) -> FileStat | None:
    q = shlex.quote(path)
    result = backend.exec(f"if [ -e {q} ]; then stat -L -c '%s %Y %f' -- {q}; else echo missing; fi", timeout=60)
    words = _text(result.output).split()
    if words == ["missing"]:
        return None
    if result.exit_code != 0 or len(words) != 3 or not words[0].isdigit():
        raise BackendError(f"cannot stat {path} on {backend.describe()}: {_text(result.output)[:200]}")
    return FileStat(int(words[0]), int(words[1]) * 1_000_000_000, int(words[2], 16))


def read_bytes(backend: Backend, path: str, max_bytes: int) -> bytes:
    found = stat(backend, path)
    if found is None:
        raise BackendError(f"{path} does not exist on {backend.describe()}")
    if found.size > max_bytes:
        raise BackendError(f"{path} on {backend.describe()} is {found.size:,} bytes, more than {max_bytes:,}")
    result = backend.exec(f"base64 -w0 -- {shlex.quote(path)}", timeout=300, max_bytes=found.size * 2 + 4096)
    if result.exit_code != 0:
        raise BackendError(f"cannot read {path} on {backend.describe()}: {_text(result.output)[:200]}")
    try:
        return base64.b64decode(result.output.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise BackendError(f"the backend's answer for {path} was cut or garbled; the file may be too large "
                           "for this backend's output limit") from None


def write_bytes(backend: Backend, path: str, data: bytes, mode: int | None) -> FileStat:
    folder, leaf = posixpath.split(path)
    temp = posixpath.join(folder, f".{leaf}.hermes-{secrets.token_hex(4)}.tmp")
    q = shlex.quote
    keep = f"{mode:o}" if mode is not None else None
    chmod = (f"chmod {keep} {q(temp)}" if keep else
             f"{{ if [ -e {q(path)} ]; then chmod --reference={q(path)} {q(temp)}; "
             f"else chmod {NEW_FILE_MODE:o} {q(temp)}; fi; }}")
    line = (f"mkdir -p -- {q(folder)} && base64 -d > {q(temp)} && {chmod} && mv -f -- {q(temp)} {q(path)} "
            f"|| {{ rm -f -- {q(temp)}; exit 1; }}")
    result = backend.exec(line, stdin=base64.b64encode(data) + b"\n", timeout=300)
    if result.exit_code != 0:
        raise BackendError(f"cannot write {path} on {backend.describe()}: {_text(result.output)[:200]}")
    found = stat(backend, path)
    if found is None:
        raise BackendError(f"{path} vanished on {backend.describe()} right after it was written")
    return found


class ShellFilesBackend(Backend):
    """A backend whose file primitives are the shell commands above (it implements ``exec`` and the rest)."""

    def stat(self, path: str) -> FileStat | None:
        return stat(self, path)

    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        return read_bytes(self, path, max_bytes)

    def write_bytes(self, path: str, data: bytes, mode: int | None = None) -> FileStat:
        return write_bytes(self, path, data, mode)
