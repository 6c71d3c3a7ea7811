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

The gateway (root, when it switches users) never follows a path component that the sandbox user
controls: folders inside a home are created and handed over through descriptors opened with
``O_NOFOLLOW`` (:meth:`SandboxFS.make_dirs`), trees are deleted the same way (:func:`_remove`), and a
command changes into its working directory only after it became the sandbox user
(:meth:`~hermes.toolgateway.sandbox.proc.Rlimits.preexec`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import logging
import os
import secrets
import stat
import time
from pathlib import Path
from typing import IO

from hermes.toolgateway.errors import GatewayHTTPError
from hermes.toolgateway.sandbox.proc import Identity

MAX_CWD = 4096
log = logging.getLogger("hermes.toolgateway.sandbox.engine")
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_dir(name: str | Path, dir_fd: int | None = None) -> int:
    """A descriptor of the folder ``name`` (in ``dir_fd``); NotADirectoryError when it is a symbolic link."""
    return os.open(name, DIR_FLAGS, dir_fd=dir_fd)


def child_dir(parent: int, name: str, mode: int, owner: Identity | None = None) -> tuple[int, bool]:
    """Open the folder ``name`` in the open folder ``parent``, creating it when missing; never follows a link.

    A folder created here gets exactly ``mode`` and, with ``owner``, that user as owner — both set
    through the new folder's own descriptor, so a symbolic link planted meanwhile is refused (OSError),
    not followed. Answers the descriptor and whether the folder was created.
    """
    if name in ("", ".", "..") or "/" in name:
        raise OSError(errno.EINVAL, f"not a folder name: {name!r}")
    try:
        os.mkdir(name, mode, dir_fd=parent)
        created = True
    except FileExistsError:
        created = False
    fd = open_dir(name, parent)
    try:
        if created and os.fstat(fd).st_uid == os.geteuid():  # ours: not a folder swapped in meanwhile
            os.fchmod(fd, mode)
            if owner is not None and owner.switch:
                os.fchown(fd, owner.uid, owner.gid)
    except BaseException:
        os.close(fd)
        raise
    return fd, created


def _mkdir(path: Path, mode: int) -> None:
    """Create a folder of the gateway's own (its parent is the gateway's too) and give it ``mode``."""
    parent = open_dir(path.parent)
    try:
        fd, _ = child_dir(parent, path.name, mode)
        try:
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
    finally:
        os.close(parent)


def _unlink(parent: int, name: str, *, folder: bool) -> None:
    """Delete one entry of an open folder; a read-only folder (the gateway's own user) is opened up first."""
    remove = os.rmdir if folder else os.unlink
    try:
        remove(name, dir_fd=parent)
    except PermissionError:
        os.fchmod(parent, stat.S_IRWXU)
        remove(name, dir_fd=parent)


def _descend(parent: int, name: str) -> int | None:
    """The open folder ``name`` of ``parent`` to empty, or None once a file or link of that name is deleted."""
    try:
        return open_dir(name, parent)
    except NotADirectoryError:  # a file, or a link (never followed)
        _unlink(parent, name, folder=False)
    except PermissionError:  # a folder the gateway's own user closed: open it up through a link-proof handle
        handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        try:
            if stat.S_ISDIR(os.fstat(handle).st_mode):
                os.chmod(f"/proc/self/fd/{handle}", stat.S_IRWXU)
        finally:
            os.close(handle)
        return open_dir(name, parent)
    except FileNotFoundError:
        pass
    return None


def _clear(top: int) -> int:
    """Delete everything inside the open folder ``top`` without following a link; how many entries failed.

    Depth first with a stack of open folders (no recursion, so any depth the descriptor limit allows).
    """
    failed = 0
    stack: list[tuple[int, str, list[str]]] = [(top, "", os.listdir(top))]
    try:
        while stack:
            fd, name, left = stack[-1]
            if left:
                entry = left.pop()
                try:
                    child = _descend(fd, entry)
                    if child is not None:
                        try:
                            stack.append((child, entry, os.listdir(child)))
                        except OSError:
                            os.close(child)
                            raise
                except OSError:
                    failed += 1
                continue
            stack.pop()
            if stack:
                os.close(fd)
                try:
                    _unlink(stack[-1][0], name, folder=True)
                except OSError:
                    failed += 1
    finally:
        for fd, _, _ in stack[1:]:
            os.close(fd)
    return failed


def _remove(path: Path) -> None:
    """Delete a tree that may hold read-only folders (best effort); never follows a symbolic link in it.

    Everything below ``path``'s parent (a folder of the gateway's own) is reached through folder
    descriptors opened with ``O_NOFOLLOW``: a link the sandbox user plants, even while this runs, is
    deleted, not followed, and no mode is changed through a name the sandbox user could swap.
    """
    try:
        parent = open_dir(path.parent)
    except OSError:
        return
    try:
        top = _descend(parent, path.name)
        if top is not None:
            try:
                failed = _clear(top)
            finally:
                os.close(top)
            if failed:
                log.warning("could not delete %d entries in %s", failed, path)
            _unlink(parent, path.name, folder=True)
    except OSError as exc:
        log.warning("could not delete %s: %s", path, exc)
    finally:
        os.close(parent)


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

    def _home(self, home: Path) -> Path:
        """Open (or create, with ``.tmp``, both the sandbox user's) a home whose parent is the gateway's."""
        parent = open_dir(home.parent)
        try:
            fd, fresh = child_dir(parent, home.name, 0o700)
            try:
                if fresh:  # .tmp is made while the home is still the gateway's, then the home is handed over
                    tmp, _ = child_dir(fd, ".tmp", 0o700, self.identity)
                    os.close(tmp)
                    if self.identity.switch:
                        os.fchown(fd, self.identity.uid, self.identity.gid)
                else:
                    os.fchmod(fd, 0o700)
            finally:
                os.close(fd)
        finally:
            os.close(parent)
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
        """Create ``path`` (inside ``home``) with every missing parent, owned by the sandbox user.

        The sandbox user controls every folder below ``home``, and may swap one for a symbolic link at
        any moment (after :func:`resolve_cwd` looked). So the walk goes down from ``home`` one folder
        descriptor at a time, each opened with ``O_NOFOLLOW``, and a new folder's mode and owner are set
        through its descriptor: a link or file on the way is an OSError, and nothing outside is touched.
        """
        try:
            parts = path.relative_to(home).parts
        except ValueError:
            raise OSError(errno.EINVAL, f"{path} is not inside {home}") from None
        fd = open_dir(home)
        try:
            for part in parts:
                child, _ = child_dir(fd, part, 0o700, self.identity)
                os.close(fd)
                fd = child
        finally:
            os.close(fd)


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


__all__ = ["DIR_FLAGS", "SandboxFS", "child_dir", "open_dir", "reachable_by", "resolve_cwd"]
