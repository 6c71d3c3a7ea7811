"""Evaluated prompt prefixes of the local model, saved under ``HERMES_HOME/cache/local_prefix``.

The system prompt and tool list are the same from one process to the next, and evaluating them is most
of a first turn's wait on a CPU. After a process evaluates that prefix it saves llama.cpp's KV state of
it here; the next process with a byte-identical prefix loads it instead of evaluating it again.

* The key is a SHA-256 of the model file's identity (resolved path, size, modification time), the
  engine, the context size and the prefix's tokens; a changed model, tool list or prompt is simply
  another key, so nothing stale is ever used.
* A file is written atomically (a temporary file, then ``os.replace``); one that fails to parse, or
  whose tokens differ from what was asked, is ignored and removed.
* The folder is bounded: at most :data:`MAX_FILES` files and :data:`MAX_BYTES` in all; the least
  recently used go first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from hermes.config.atomic import atomic_write

MAGIC = b"hermes-kv-prefix 1\n"
MAX_FILES = 8
MAX_BYTES = 256 * 2**20
MIN_TOKENS = 32  # shorter prefixes evaluate faster than a file loads


def prefix_key(model_path: str, engine: str, n_ctx: int, tokens: list[int]) -> str:
    """The file name for this prefix of this model under this engine and context size."""
    stat = Path(model_path).stat()
    identity = json.dumps([str(Path(model_path).resolve()), stat.st_size, stat.st_mtime_ns, engine, n_ctx])
    digest = hashlib.sha256(identity.encode("utf-8"))
    digest.update(b"\0" + b",".join(str(t).encode("ascii") for t in tokens))
    return digest.hexdigest()[:32] + ".kv"


class PrefixStore:
    """The folder of saved prefixes."""

    def __init__(self, folder: Path, max_files: int = MAX_FILES, max_bytes: int = MAX_BYTES) -> None:
        self.folder = folder
        self.max_files = max_files
        self.max_bytes = max_bytes

    def load(self, key: str, tokens: list[int]) -> bytes | None:
        """The saved state for ``tokens`` under ``key``, or None."""
        path = self.folder / key
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        header, _, data = raw[len(MAGIC):].partition(b"\n")
        try:
            saved = json.loads(header) if raw.startswith(MAGIC) else None
        except ValueError:
            saved = None
        if saved != tokens or not data:
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: pruned last
        return data

    def save(self, key: str, tokens: list[int], data: bytes) -> None:
        if not data or len(data) > self.max_bytes:
            return
        with contextlib.suppress(OSError):
            atomic_write(self.folder / key, MAGIC + json.dumps(tokens).encode("ascii") + b"\n" + data, mode=0o600)
            self._prune()

    def _prune(self) -> None:
        files = []
        for path in self.folder.glob("*.kv"):
            with contextlib.suppress(OSError):
                stat = path.stat()
                files.append((stat.st_mtime, stat.st_size, path))
        files.sort(reverse=True)  # newest first
        total = 0
        for index, (_, size, path) in enumerate(files):
            total += size
            if index >= self.max_files or total > self.max_bytes:
                with contextlib.suppress(OSError):
                    path.unlink()
