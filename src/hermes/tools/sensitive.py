"""Which files the tools never read or write: by name, and by identity (device and inode).

**By name** (paths already resolved through every symlink, see :mod:`hermes.tools.paths`):

* *SSH key material*: every file inside a folder named ``.ssh`` — any user's home, ``/root``, a copy
  anywhere — except the public ones (``*.pub``, ``known_hosts``, ``authorized_keys``, ``config``) is
  never read; nothing inside a ``.ssh`` folder is ever written. The host keys
  ``/etc/ssh/ssh_host_*_key`` are never read.
* *Credential files of any user*: the files of :data:`HOME_SECRET_FILES` and the folders
  ``.gnupg``/``.password-store`` in any home folder (``$HOME``, ``/root``, ``/home/<name>``, the homes
  of the password database) are never read; the credential stores of :data:`HOME_CREDENTIAL_DIRS` and
  :data:`HOME_CREDENTIAL_FILES` there are never written.
* hermes's own ``.env`` and ``auth.json`` (never read nor written) and ``config.yaml`` (never written);
  the keys, tokens, cookies and logs it keeps in HERMES_HOME (:data:`HERMES_SECRET_DIRS`,
  :data:`HERMES_SECRET_FILES`: the browser vault and profiles, ``serve_token``, the tool gateway's
  secrets, logs, voice notes waiting to be transcribed — never read); ``/etc/shadow`` and friends.

**By identity**: a hard link gives a protected file a second name that the rules above do not know.
So a regular file with more than one link is compared — ``(st_dev, st_ino)`` — with the protected files
that exist (:class:`Identities`, built on first need, once per tool call or search): a hard link to
``.env`` is refused exactly like ``.env``. Files with a single link skip the comparison (their only
name is the one the rules already judged), which keeps searches cheap.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from hermes.config.paths import HermesPaths

#: credential stores in a home folder: never written (folders: nothing inside them either)
HOME_CREDENTIAL_DIRS = (".ssh", ".gnupg", ".aws", ".kube", ".docker", ".password-store", ".config/gcloud")
HOME_CREDENTIAL_FILES = (".netrc", ".git-credentials", ".pgpass", ".pypirc", ".npmrc")
#: files in a home folder that are never read
HOME_SECRET_FILES = (
    ".aws/credentials", ".netrc", ".git-credentials", ".pgpass", ".pypirc",
    ".docker/config.json", ".kube/config", ".config/gcloud/application_default_credentials.json",
    ".config/gcloud/credentials.db", ".config/gcloud/access_tokens.db",
    ".m2/settings.xml", ".cargo/credentials", ".cargo/credentials.toml", ".config/gh/hosts.yml",
    ".terraform.d/credentials.tfrc.json", ".claude/.credentials.json", ".config/hub",
)  # fmt: skip
#: folders in a home folder that are never read: key rings, cloud logins, browser profiles (cookies)
HOME_SECRET_DIRS = (".gnupg", ".password-store", ".azure", ".config/chromium", ".config/google-chrome",
                    ".mozilla")
#: start-up files of a home folder: what they name runs later (a shell or login starts, a desktop session,
#: a systemd user unit, every git command) — never written by the file tools
HOME_STARTUP_FILES = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".bash_env", ".profile",
    ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".login", ".logout",
    ".kshrc", ".mkshrc", ".inputrc", ".pam_environment", ".xprofile", ".xinitrc", ".xsession",
    ".xsessionrc", ".Xresources", ".Xdefaults", ".gitconfig", ".vimrc", ".exrc", ".emacs", ".curlrc",
    ".wgetrc", ".pythonrc", ".pythonrc.py", ".config/user-dirs.dirs",
)  # fmt: skip
#: start-up folders of a home folder (nothing inside them is written by the file tools either)
HOME_STARTUP_DIRS = (
    ".config/autostart", ".config/systemd", ".config/environment.d", ".config/git", ".config/fish",
    ".config/bash", ".config/zsh", ".config/plasma-workspace", ".config/upstart", ".config/openbox",
    ".config/i3", ".config/sway", ".config/hypr", ".config/nvim", ".config/pip", ".local/bin",
    ".local/share/systemd", ".local/share/applications", ".bashrc.d", ".profile.d", ".zshrc.d", ".oh-my-zsh",
    ".vim", ".emacs.d", ".ipython", ".jupyter", ".xsession.d", ".kde", ".gnome",
)  # fmt: skip
SYSTEM_SECRET_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
#: the files of a ``.ssh`` folder that hold no key material
SSH_PUBLIC_NAMES = frozenset({"known_hosts", "known_hosts.old", "authorized_keys", "authorized_keys2", "config"})
_BLOCKING_FILES = ("/proc/kmsg", "/dev/kmsg")
#: how many files of one credential folder the identity map takes (a huge password store stays cheap)
_MAX_FILES_PER_STORE = 2000


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(os.fspath(path)))


def _inside(path: Path | str, root: Path | str) -> bool:
    p, r = str(path), str(root)
    return p == r or p.startswith(r if r.endswith("/") else r + "/")


def current_home() -> Path:
    return _resolved_home(os.path.expanduser("~"))


@functools.lru_cache(maxsize=8)
def _resolved_home(home: str) -> Path:
    return _real(home)


@functools.lru_cache(maxsize=1)
def _account_homes() -> frozenset[str]:
    """Home folders of the password database (read once per process)."""
    try:
        import pwd

        homes = {entry.pw_dir for entry in pwd.getpwall()}
    except (ImportError, OSError, KeyError):
        return frozenset()
    return frozenset(os.path.realpath(h) for h in homes if h and h != "/" and os.path.isdir(h))


def _is_home(folder: str) -> bool:
    return (
        folder == str(current_home()) or folder == "/root" or os.path.dirname(folder) == "/home"
        or folder in _account_homes()
    )  # fmt: skip


def home_relative(path: Path) -> Iterator[str]:
    """``path`` relative to each home folder it lies in (``.aws/credentials`` for ``/home/bob/.aws/credentials``)."""
    parts = path.parts
    base = parts[0] if parts else ""
    for cut in range(1, len(parts)):
        if cut > 1:  # one step deeper (joining every prefix anew is quadratic: seconds for a 3,000-part path)
            base = os.path.join(base, parts[cut - 1])
        if _is_home(base):
            yield "/".join(parts[cut:])


def ssh_key_material(path: Path) -> bool:
    """A private-key-holding file by name: inside a ``.ssh`` folder and not public, or a host key."""
    name = path.name
    if ".ssh" in path.parts[:-1]:
        return not (name.endswith(".pub") or name in SSH_PUBLIC_NAMES)
    return str(path.parent) == "/etc/ssh" and name.startswith("ssh_host_") and name.endswith("_key")


def protected_hermes_file(path: Path) -> Path | None:
    for candidate in HermesPaths.current().protected_files():
        if path == _real(candidate):
            return candidate
    return None


def credential_store(path: Path) -> Path | None:
    """The credential store ``path`` lies in (so it is never written), or None."""
    parts = path.parts
    if ".ssh" in parts[:-1] or path.name == ".ssh":
        return Path(*parts[: parts.index(".ssh") + 1])
    for rel in home_relative(path):
        home = Path(str(path)[: len(str(path)) - len(rel) - 1])
        for store in HOME_CREDENTIAL_DIRS:
            if _inside(rel, store):
                return home / store
        if rel in HOME_CREDENTIAL_FILES:
            return path
    return None


def startup_location(path: Path) -> Path | None:
    """The start-up file or folder of a home folder that ``path`` is or lies in (never written), or None."""
    for rel in home_relative(path):
        home = Path(str(path)[: len(str(path)) - len(rel) - 1])
        if rel in HOME_STARTUP_FILES:
            return path
        for folder in HOME_STARTUP_DIRS:
            if _inside(rel, folder):
                return home / folder
    return None


def home_dot_location(path: Path) -> Path | None:
    """The dot-file or dot-folder of a home folder that ``path`` is or lies in (``~/.config`` for
    ``~/.config/app/x.toml``), or None."""
    for rel in home_relative(path):
        if rel.startswith("."):
            return Path(str(path)[: len(str(path)) - len(rel)] + rel.split("/", 1)[0])
    return None


#: HERMES_HOME folders holding keys, cookies or what programs printed: the browser's password vault
#: (``vault.key``, ``vault.bin``) and profiles, the logs, voice notes waiting to be transcribed
HERMES_SECRET_DIRS = ("browser", "logs", "cache/voice")
#: HERMES_HOME files holding tokens: the app server's, the self-hosted tool gateway's
HERMES_SECRET_FILES = ("serve_token", "toolgateway/secret", "toolgateway/admin_token")


def hermes_secret_location(path: Path) -> Path | None:
    """The folder or file of HERMES_HOME holding keys or tokens that ``path`` is or lies in, else None."""
    home = _real(HermesPaths.current().home)
    if not _inside(path, home) or path == home:
        return None
    rel = str(path)[len(str(home)) + 1:]
    for folder in HERMES_SECRET_DIRS:
        if _inside(rel, folder):
            return home / folder
    return path if rel in HERMES_SECRET_FILES else None


def sensitive_by_name(path: Path) -> str | None:
    """Why ``path`` may not be read, judged by its (resolved) name alone; None when it may."""
    if path.name in (".env", "auth.json") and protected_hermes_file(path) is not None:
        return "it holds hermes's own secrets"
    if hermes_secret_location(path) is not None:
        return "it holds hermes's own keys, tokens or logs"
    if ssh_key_material(path):
        return "it is SSH key material"
    if path.name.endswith(_DB_ENDINGS) and hermes_database(path):
        return ("it is one of hermes's own databases (reading it here would drop SQLite's locks on it; "
                "use session_search or 'hermes sessions' for past sessions)")
    for rel in home_relative(path):
        if rel in HOME_SECRET_FILES or any(_inside(rel, d) for d in HOME_SECRET_DIRS):
            return "it is a credential store"
    if str(path) in SYSTEM_SECRET_FILES:
        return "it holds system password hashes"
    if str(path) in _BLOCKING_FILES:
        return "reading it blocks"
    return None


def hidden_from_commands() -> tuple[list[Path], list[Path]]:
    """(folders, files) of credential material that sandboxed commands must not see: the current home
    folder's credential stores and secret files (``~/.ssh`` and the rest of :data:`HOME_CREDENTIAL_DIRS`)
    and the system's password files. Nothing is checked for existence."""
    dirs, files = _hidden_below(current_home())
    return list(dirs), list(files)


@functools.lru_cache(maxsize=8)
def _hidden_below(home: Path) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    dirs = [home / d for d in (*HOME_CREDENTIAL_DIRS, *HOME_SECRET_DIRS)]
    files = [home / f for f in (*HOME_CREDENTIAL_FILES, *HOME_SECRET_FILES)]
    files += [Path(f) for f in SYSTEM_SECRET_FILES]
    return tuple(dict.fromkeys(dirs)), tuple(dict.fromkeys(files))


# -- identities --------------------------------------------------------------------------------------
def _homes() -> list[Path]:
    found = {str(current_home()), "/root", *_account_homes()}
    with contextlib.suppress(OSError):
        found.update(entry.path for entry in os.scandir("/home") if entry.is_dir(follow_symlinks=False))
    return [Path(h) for h in sorted(found)]


def _files_under(folder: Path, limit: int = _MAX_FILES_PER_STORE) -> Iterator[Path]:
    """Regular files below ``folder`` (symlinks not followed), at most ``limit``."""
    count = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            count += 1
            if count > limit:
                return
            yield Path(dirpath, name)


def _read_protected() -> Iterator[tuple[Path, str]]:
    paths = HermesPaths.current()
    yield paths.env, "hermes's own secrets"
    yield paths.auth, "hermes's own secrets"
    for rel in HERMES_SECRET_FILES:
        yield paths.home / rel, "hermes's own keys, tokens or logs"
    for folder in HERMES_SECRET_DIRS:
        yield from ((p, "hermes's own keys, tokens or logs") for p in _files_under(paths.home / folder))
    for name in SYSTEM_SECRET_FILES:
        yield Path(name), "system password hashes"
    with contextlib.suppress(OSError):
        host_keys = [Path(e.path) for e in os.scandir("/etc/ssh")]
        yield from ((p, "an SSH host key") for p in host_keys if ssh_key_material(p))
    for home in _homes():
        for rel in HOME_SECRET_FILES:
            yield home / rel, "a credential store"
        for store in HOME_SECRET_DIRS:
            yield from ((p, "a credential store") for p in _files_under(home / store))
        yield from ((p, "SSH key material") for p in _files_under(home / ".ssh") if ssh_key_material(p))


def _write_protected() -> Iterator[tuple[Path, str]]:
    yield from _read_protected()
    yield HermesPaths.current().config, "hermes's own config.yaml"
    for home in _homes():
        for rel in HOME_CREDENTIAL_FILES:
            yield home / rel, "a credential store"
        for store in HOME_CREDENTIAL_DIRS:
            yield from ((p, "a credential store") for p in _files_under(home / store))


def _identity_map(candidates: Iterator[tuple[Path, str]]) -> dict[tuple[int, int], tuple[Path, str]]:
    found: dict[tuple[int, int], tuple[Path, str]] = {}
    for path, why in candidates:
        try:
            st = os.stat(path, follow_symlinks=False)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode):
            found.setdefault((st.st_dev, st.st_ino), (path, why))
    return found


class Identities:
    """``(st_dev, st_ino)`` of the protected files, each map built on its first use."""

    def __init__(self) -> None:
        self._read: dict[tuple[int, int], tuple[Path, str]] | None = None
        self._write: dict[tuple[int, int], tuple[Path, str]] | None = None

    @staticmethod
    def _linked(path: Path, st: os.stat_result | None) -> os.stat_result | None:
        """The stat of ``path`` when it is a regular file with more than one name, else None."""
        if st is None:
            try:
                st = os.stat(path)
            except (OSError, ValueError):
                return None
        return st if stat.S_ISREG(st.st_mode) and st.st_nlink > 1 else None

    def read_refusal(self, path: Path, st: os.stat_result | None = None) -> str | None:
        """Why reading ``path`` is refused because it is another name of a protected file, or None."""
        linked = self._linked(path, st)
        if linked is None:
            return None
        if self._read is None:
            self._read = _identity_map(_read_protected())
        hit = self._read.get((linked.st_dev, linked.st_ino))
        return None if hit is None else f"it is a hard link to {hit[0]} ({hit[1]})"

    def write_refusal(self, path: Path, st: os.stat_result | None = None) -> str | None:
        """Why writing ``path`` is refused because it is another name of a protected file, or None."""
        linked = self._linked(path, st)
        if linked is None:
            return None
        if self._write is None:
            self._write = _identity_map(_write_protected())
        hit = self._write.get((linked.st_dev, linked.st_ino))
        return None if hit is None else f"it is a hard link to {hit[0]} ({hit[1]})"


#: how the names of SQLite files end (the database and its journal companions)
_DB_ENDINGS = (".db", ".db-wal", ".db-shm", ".db-journal")


def hermes_database(path: Path) -> bool:
    """Whether ``path`` is a SQLite file of HERMES_HOME (``state.db``, ``kanban.db``, the gateway's
    ``toolgateway/gateway.db``, ``video_jobs.db``… and their ``-wal``/``-shm``/``-journal`` files).

    hermes holds connections to them in this very process: opening and closing any other descriptor of
    such a file drops the process's POSIX locks — SQLite's among them — after which another process
    closing the database believes it was the last one and deletes the WAL under the live connection.
    """
    return _inside(path, _real(HermesPaths.current().home))


def sensitive_for_reading(
    path: Path, identities: Identities | None = None, st: os.stat_result | None = None
) -> str | None:
    """Why ``path`` may not be read (by name, then by identity), or None.

    ``identities`` lets a search share one map over many files; ``st`` saves a stat the caller made.
    """
    why = sensitive_by_name(path)
    if why is not None:
        return why
    return (identities or Identities()).read_refusal(path, st)


# -- what git and hermes run later (never written by the file tools) ---------------------------------
#: HERMES_HOME folders whose contents hermes loads or runs later (plugins at start-up, skills and
#: memories into prompts, cron jobs on schedule, its logs), and its database files
HERMES_STATE_DIRS = ("plugins", "skills", "memories", "cron", "toolgateway", "logs", "kanban/logs",
                     "kanban/attachments", "browser")
HERMES_STATE_FILES = ("state.db", "kanban.db", "projects.json", "serve_token")


def git_exec_location(path: Path) -> Path | None:
    """The git configuration or hook that ``path`` is or lies in — ``.git/config``,
    ``.git/config.worktree``, ``.git/hooks/…`` (also of linked worktrees and submodules), or a ``.git``
    file (which can point git at another config) — else None: what they name runs with git commands."""
    parts = path.parts
    if path.name == ".git" and not path.is_dir():
        return path
    if ".git" not in parts[:-1]:
        return None
    inner = parts[len(parts) - parts[::-1].index(".git"):]
    if path.name in ("config", "config.worktree") or "hooks" in inner[:-1]:
        return path
    return None


def hermes_state_location(path: Path) -> Path | None:
    """The folder or file of HERMES_HOME that ``path`` is or lies in and that hermes loads or runs later
    (:data:`HERMES_STATE_DIRS`, :data:`HERMES_STATE_FILES` and their ``-wal``/``-shm``/``.wake``
    companions), else None. A worker's scratch workspace (``kanban/workspaces``) is not one of them."""
    home = _real(HermesPaths.current().home)
    if not _inside(path, home) or path == home:
        return None
    rel = str(path)[len(str(home)) + 1:]
    for folder in HERMES_STATE_DIRS:
        if _inside(rel, folder):
            return home / folder
    first = rel.split("/", 1)[0]
    if any(first == name or first.startswith((f"{name}-", f"{name}.")) for name in HERMES_STATE_FILES):
        return home / first
    return None
