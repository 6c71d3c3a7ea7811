"""Where sandboxes live on disk, and which working directories a command may use.

Layout under the engine's root (default ``<state dir>/sandboxes``; the gateway owns every folder
that is not a sandbox's home, mode 0711 — others may pass through but not list)::

    <root>/run/<process>/.lock        held (flock) by the gateway process that owns the folder
    <root>/run/<process>/<sandbox id>  the home of an ordinary sandbox (mode 0700, the sandbox user's)
    <root>/keep/<digest>/home          the home of a persistent one; <digest> from the user and logicalKey

When a gateway process starts, ``run/`` folders whose lock nobody holds (left by a process that died)
are deleted. A persistent home survives its sandbox and is handed to the next persistent sandbox of the
same user with the same ``logicalKey``; ``keep/<digest>``'s time stamp (set by the gateway, which the
sandbox user cannot change) records its last use, and homes unused for ``keep_days`` are deleted.

A working directory is confined to the sandbox's home **after resolving symbolic links**
(:func:`resolve_cwd`). That keeps well-meaning clients inside; it is not a security boundary (any
command can ``cd /``) — the Unix user is.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import IO

from hermes.toolgateway.errors import GatewayHTTPError
from hermes.toolgateway.sandbox_proc import Identity

MAX_CWD = 4096


def _mkdir(path: Path, mode: int) -> None:
    path.mkdir(mode=mode, exist_ok=True)
    os.chmod(path, mode)


def _remove(path: Path) -> None:
    """Delete a tree that may hold read-only folders; never follows symbolic links out of it."""

    def retry(func: object, name: str, exc: BaseException) -> None:
        with contextlib.suppress(OSError):
            parent = os.path.dirname(name)
            os.chmod(parent, stat.S_IRWXU)
            if os.path.isdir(name) and not os.path.islink(name):
                os.chmod(name, stat.S_IRWXU)
                shutil.rmtree(name, ignore_errors=True)
            else:
                os.unlink(name)

    if path.is_symlink():
        path.unlink()
    elif not path.exists():
        return
    elif sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=lambda func, name, info: retry(func, name, info[1]))


def reachable_by(path: Path, identity: Identity) -> Path | None:
    """The first existing folder on the way to ``path`` that ``identity`` may not pass through, or None."""
    current = Path("/")
    for part in path.parts[1:]:
        try:
            info = current.stat()
        except OSError:
            return None
        if info.st_uid == identity.uid:
            ok = bool(info.st_mode & stat.S_IXUSR)
        elif info.st_gid == identity.gid:
            ok = bool(info.st_mode & stat.S_IXGRP)
        else:
            ok = bool(info.st_mode & stat.S_IXOTH)
        if not ok:
            return current
        current = current / part
        if not current.exists():
            return None
    return None


class SandboxFS:
    """The root folder of one engine: this process's run folder, homes, persistent homes."""

    def __init__(self, root: Path, identity: Identity) -> None:
        self.root = root.resolve()
        self.identity = identity
        self.run_dir = self.root / "run" / f"p{os.getpid()}-{secrets.token_hex(4)}"
        self._lock: IO[bytes] | None = None

    def open(self) -> None:
        """Create the layout, take this process's lock, delete what dead processes left behind."""
        self.root.mkdir(parents=True, exist_ok=True)
        for folder in (self.root, self.root / "run", self.root / "keep", self.run_dir):
            _mkdir(folder, 0o711)
        lock = open(self.run_dir / ".lock", "wb")  # noqa: SIM115 - held until close()
        os.chmod(lock.fileno(), 0o600)
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._lock = lock
        for other in (self.root / "run").iterdir():
            if other != self.run_dir and self._abandoned(other):
                _remove(other)

    @staticmethod
    def _abandoned(folder: Path) -> bool:
        try:
            with open(folder / ".lock", "rb") as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except FileNotFoundError:
            return True
        except OSError:
            return False  # a live process holds it
        return True

    def close(self) -> None:
        """Delete this process's run folder and release the lock."""
        _remove(self.run_dir)
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _own(self, path: Path) -> None:
        if self.identity.switch:
            os.chown(path, self.identity.uid, self.identity.gid)

    def _home(self, home: Path) -> Path:
        fresh = not home.exists()
        _mkdir(home, 0o700)
        if fresh:
            self._own(home)
            tmp = home / ".tmp"
            _mkdir(tmp, 0o700)
            self._own(tmp)
        return home.resolve()

    def new_home(self, sandbox_id: str) -> Path:
        """A fresh home for an ordinary sandbox."""
        return self._home(self.run_dir / sandbox_id)

    def kept_home(self, owner: str, logical_key: str) -> Path:
        """The persistent home of ``owner``'s ``logical_key`` (created on first use), stamped as used now."""
        digest = hashlib.sha256(f"{owner}\n{logical_key}".encode()).hexdigest()[:32]
        holder = self.root / "keep" / digest
        _mkdir(holder, 0o711)
        self.stamp(holder / "home")
        return self._home(holder / "home")

    @staticmethod
    def stamp(home: Path) -> None:
        """Record that a persistent home was used now (its gateway-owned parent's time stamp)."""
        with contextlib.suppress(OSError):
            os.utime(home.parent)

    @staticmethod
    def remove(home: Path) -> None:
        """Delete a sandbox's home (and its gateway-owned holder for a persistent one)."""
        _remove(home.parent if home.name == "home" and home.parent.parent.name == "keep" else home)

    def prune_kept(self, older_than: float, in_use: set[Path]) -> int:
        """Delete persistent homes not used for ``older_than`` seconds and not in use; how many went."""
        gone = 0
        cutoff = time.time() - older_than
        with contextlib.suppress(OSError):
            for holder in (self.root / "keep").iterdir():
                home = holder / "home"
                if home.resolve() in in_use or holder.stat().st_mtime > cutoff:
                    continue
                _remove(holder)
                gone += 1
        return gone

    def make_dirs(self, path: Path, home: Path) -> None:
        """Create ``path`` (inside ``home``) with every missing parent, owned by the sandbox user."""
        missing: list[Path] = []
        current = path
        while current != home and not current.exists():
            missing.append(current)
            current = current.parent
        for folder in reversed(missing):
            _mkdir(folder, 0o700)
            self._own(folder)


def resolve_cwd(value: object, *, home: Path, base: Path, aliases: tuple[str, ...]) -> Path:
    """The real working directory for a requested ``cwd``, or 400 ``invalid_cwd`` when it leaves ``home``.

    Empty or missing: ``base``. ``~`` and ``~/x``, and each alias (``/root`` by default — the home of a
    Modal sandbox, which the upstream client sends) and paths below it: the same place under ``home``.
    A relative path: below ``base``. Another absolute path: itself. The result must lie inside ``home``
    once symbolic links are resolved.
    """
    if value is None or value == "":
        return base
    if not isinstance(value, str) or "\x00" in value or len(value) > MAX_CWD:
        raise GatewayHTTPError(400, "invalid_cwd", f"'cwd' must be a path of at most {MAX_CWD} characters")
    rest: str | None = None
    if value == "~" or value.startswith("~/"):
        rest = value[1:]
    for alias in aliases:
        if value == alias or value.startswith(alias + "/"):
            rest = value[len(alias):]
    wanted = home / rest.lstrip("/") if rest is not None else Path(value) if value.startswith("/") else base / value
    real = Path(os.path.realpath(wanted))
    if real != home and home not in real.parents:
        raise GatewayHTTPError(400, "invalid_cwd", f"'cwd' {value!r} is outside the sandbox (after resolving "
                               f"symbolic links); use a path inside the sandbox's home, {', '.join(aliases)} or ~")
    return real


__all__ = ["SandboxFS", "reachable_by", "resolve_cwd"]
