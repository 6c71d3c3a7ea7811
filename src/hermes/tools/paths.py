"""Path resolution and safety for every tool that touches local files (the file tools, media loading).

Every path a model sends goes through :func:`resolve_path` first: ``~`` is expanded, a relative path is
taken relative to the process's working directory, and :func:`os.path.realpath` resolves every symlink
*before* any check runs, so a link can never smuggle a write past the rules below.

Writes (``write_file``, ``patch``) are refused

* to system locations (``/etc``, ``/usr``, ``/bin``, ``/proc``, ``/var/lib`` …, see :data:`SYSTEM_DIRS`);
* to hermes's own ``config.yaml``, ``.env`` and ``auth.json`` (:meth:`HermesPaths.protected_files`),
  and to the parts of HERMES_HOME hermes loads or runs later — ``plugins/``, ``skills/``,
  ``memories/``, ``cron/``, its databases and logs (:func:`~hermes.tools.sensitive.hermes_state_location`),
  whatever the allowed roots say;
* to a repository's ``.git/config``, ``.git/hooks/…`` or a ``.git`` file (what they name runs with git);
* to credential stores in any user's home folder (``.ssh`` anywhere, ``~/.aws``, ``~/.gnupg``,
  ``~/.netrc`` …);
* to start-up files of any user's home folder — shell and login files (``~/.bashrc``, ``~/.profile``,
  ``~/.zshrc`` …), ``~/.gitconfig``, ``~/.config/git``, ``~/.config/autostart``, ``~/.config/systemd``,
  ``~/.local/bin`` … (:data:`~hermes.tools.sensitive.HOME_STARTUP_FILES`, ``HOME_STARTUP_DIRS``): what they
  name runs later, outside any sandbox;
* to any other dot-file or dot-folder of a home folder (``~/.config/app``, ``~/.hermes/skills``) unless
  an allowed root lies at or inside it (``file.allowed_roots: ['~/.config/myapp']``);
* to another name (a hard link) of any of those files: see :mod:`hermes.tools.sensitive`;
* outside the allowed roots: ``file.allowed_roots`` in config.yaml, by default the working directory,
  the home folder and the system temporary folder. A symlink whose target lies outside them is refused
  with a message naming where it leads.

While the OS sandbox is in force (:mod:`hermes.tools.sandbox`), a write inside the allowed roots but
outside what a sandboxed command may write (the workspace, ``sandbox.writable_paths``, the session's
temp folder) is an approval (pattern id ``sandbox_file_write``, :mod:`hermes.tools.approvals`).

Reads are allowed anywhere except sensitive files (:mod:`hermes.tools.sensitive`): SSH key material in
any ``.ssh`` folder, hermes's ``.env`` and ``auth.json``, the usual credential files of any user,
``/etc/shadow`` — and any hard link to one of them (same device and inode).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hermes.config.paths import HermesPaths
from hermes.errors import ConfigError, ToolError
from hermes.tools.context import session_of
from hermes.tools.sensitive import (
    Identities,
    credential_store,
    git_exec_location,
    hermes_state_location,
    home_dot_location,
    protected_hermes_file,
    sensitive_for_reading,
    startup_location,
)

__all__ = [
    "SYSTEM_DIRS", "VIRTUAL_DIRS", "Identities", "allowed_roots", "check_read", "check_write",
    "credential_store", "default_roots", "display", "file_setting", "lexical_path", "protected_hermes_file",
    "resolve_path", "sensitive_for_reading", "stat_or_none", "system_location",
]  # fmt: skip

#: never written, whatever the allowed roots say
HARD_SYSTEM_DIRS: tuple[str, ...] = (
    "/etc", "/bin", "/sbin", "/boot", "/proc", "/sys", "/dev", "/run",
    "/lib", "/lib32", "/lib64", "/libx32",
    "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libexec", "/usr/include",
    "/usr/share",
    "/var/lib", "/var/log", "/var/spool", "/var/cache", "/var/run", "/var/db", "/var/mail",
    "/System", "/Library", "/private/etc", "/private/var/db",
)  # fmt: skip
#: refused unless an allowed root lies inside them (a project in /usr/src/app or /var/www/site)
SOFT_SYSTEM_DIRS: tuple[str, ...] = ("/usr", "/var")
SYSTEM_DIRS = HARD_SYSTEM_DIRS + SOFT_SYSTEM_DIRS

#: kernel-provided trees: never walked by search_files (files there can block or never end)
VIRTUAL_DIRS = ("/proc", "/sys", "/dev")

_config_cache: dict[str, tuple[int, Any]] = {}


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(os.fspath(path)))


def _inside(path: Path | str, root: Path | str) -> bool:
    """``path`` is ``root`` or below it (both absolute and resolved; plain string work, no pathlib walk)."""
    p, r = str(path), str(root)
    return p == r or p.startswith(r if r.endswith("/") else r + "/")


def resolve_path(raw: str, field: str = "path") -> Path:
    """The real, absolute path for what the model sent (``~`` expanded, symlinks resolved)."""
    if not raw.strip():
        raise ToolError(f"'{field}' must not be empty")
    if "\x00" in raw:
        raise ToolError(f"'{field}' must not contain a NUL character")
    expanded = os.path.expanduser(raw)
    absolute = os.path.join(os.getcwd(), expanded)
    try:
        return _real(absolute)
    except (OSError, ValueError) as exc:
        raise ToolError(f"'{field}' cannot be resolved: {exc}") from None


def stat_or_none(path: Path, field: str = "path") -> os.stat_result | None:
    """``os.stat`` of ``path``; None when it does not exist, a :class:`ToolError` for other failures."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ToolError(f"'{field}': cannot use {path}: {exc.strerror or exc}") from None


def lexical_path(raw: str) -> Path:
    """The absolute path before symlinks are resolved (for messages about where a link leads)."""
    return Path(os.path.abspath(os.path.join(os.getcwd(), os.path.expanduser(raw))))


def display(path: Path) -> str:
    """How a path is shown to the model: relative to the working directory when inside it."""
    try:
        cwd = _real(os.getcwd())
    except OSError:
        return str(path)
    if _inside(path, cwd) and path != cwd:
        return str(path.relative_to(cwd))
    return str(path)


# -- allowed roots ------------------------------------------------------------------------------------
def default_roots() -> list[Path]:
    """The working directory, the home folder and the system temporary folder."""
    import tempfile  # ~4 ms with shutil and random; the tool modules import this one at start-up

    return [_real(os.getcwd()), _real(Path.home()), _real(tempfile.gettempdir())]


def file_setting(kw: dict[str, Any], key: str) -> Any:
    """``key`` (``file.allowed_roots``, ``file.search_time_limit``) from the session's settings, else
    from config.yaml (re-read when it changes); None when unset."""
    session = session_of(kw)
    if session is not None and session.settings is not None:
        return session.settings.get(key)
    config = HermesPaths.current().config
    try:
        mtime = config.stat().st_mtime_ns
    except OSError:
        return None
    cache_key = f"{config}\x00{key}"
    cached = _config_cache.get(cache_key)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    from hermes.config.yamlfile import ConfigFile

    value = ConfigFile.load(config).get(key)
    _config_cache[cache_key] = (mtime, value)
    return value


def allowed_roots(kw: dict[str, Any]) -> list[Path]:
    """The folders writes may go into: ``file.allowed_roots`` from config.yaml, else the defaults."""
    value = file_setting(kw, "file.allowed_roots")
    if value is None:
        return default_roots()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError("file.allowed_roots must be a list of folder paths (e.g. ['.', '~/projects'])")
    given = [os.path.join(os.getcwd(), os.path.expanduser(str(v))) for v in value]
    pins = file_setting(kw, "sandbox.folder_identities")
    if isinstance(pins, dict) and pins:  # an open desktop project: a folder swapped since approval is no root
        from hermes.tools.sandbox import changed_folder

        exact = {os.path.abspath(k): (v[0], v[1]) for k, v in pins.items() if isinstance(v, list) and len(v) == 2}
        given = [g for g in given if changed_folder(g, exact) is None]
    return [_real(g) for g in given]


# -- checks ---------------------------------------------------------------------------------------------
def _under_any(path: Path, dirs: Iterable[str | Path]) -> Path | None:
    for d in dirs:
        if _inside(path, d):
            return Path(d)
    return None


def system_location(path: Path, roots: Iterable[Path] = ()) -> Path | None:
    """The system folder ``path`` lies in, or None (soft ones are waived by an allowed root inside them)."""
    hard = _under_any(path, HARD_SYSTEM_DIRS)
    if hard is not None:
        return hard
    soft = _under_any(path, SOFT_SYSTEM_DIRS)
    if soft is None:
        return None
    for root in roots:
        if root != soft and _inside(root, soft) and _inside(path, root):
            return None
    return soft


def check_read(path: Path, field: str = "path") -> None:
    """Raise :class:`ToolError` when ``path`` is a sensitive file."""
    why = sensitive_for_reading(path)
    if why is not None:
        raise ToolError(f"'{field}': reading {path} is not allowed: {why}")


def check_write(path: Path, kw: dict[str, Any], raw: str | None = None, field: str = "path",
                tool: str = "write_file") -> None:
    """Raise :class:`ToolError` when writing ``path`` (already resolved) is not allowed, and
    :class:`~hermes.errors.ApprovalDenied` when it lies outside the OS sandbox's writable folders and the
    approval for that was refused (:func:`confine_write`)."""
    via = ""
    if raw is not None:
        lexical = lexical_path(raw)
        if lexical != path:
            via = f" ('{raw}' resolves through a symlink to {path})"
    protected = protected_hermes_file(path)
    if protected is not None:
        raise ToolError(
            f"'{field}': writing {path} is not allowed{via}: it is hermes's own {protected.name}; "
            "change settings with 'hermes config' instead"
        )
    state = hermes_state_location(path)
    if state is not None:
        raise ToolError(f"'{field}': writing {path} is not allowed{via}: {state} is part of HERMES_HOME that "
                        "hermes loads or runs later (plugins, skills, memories, cron jobs, databases, logs)")
    git = git_exec_location(path)
    if git is not None:
        raise ToolError(f"'{field}': writing {path} is not allowed{via}: it is git's configuration or a hook "
                        "(what git runs with every command there); change git settings yourself")
    store = credential_store(path)
    if store is not None:
        raise ToolError(f"'{field}': writing {path} is not allowed{via}: {store} is a credential store")
    startup = startup_location(path)
    if startup is not None:
        raise ToolError(f"'{field}': writing {path} is not allowed{via}: {startup} is a start-up file of a home "
                        "folder (what it names runs later: a shell, a login, autostart, git)")
    linked = Identities().write_refusal(path)
    if linked is not None:
        raise ToolError(f"'{field}': writing {path} is not allowed{via}: {linked}")
    roots = allowed_roots(kw)
    dot = home_dot_location(path)
    if dot is not None and not any(_inside(root, dot) and _inside(path, root) for root in roots):
        raise ToolError(f"'{field}': writing {path} is not allowed{via}: {dot} is a dot-file or dot-folder of a "
                        "home folder (settings programs read); a folder inside it can be named in "
                        "file.allowed_roots in config.yaml")
    system = system_location(path, roots)
    if system is not None:
        raise ToolError(f"'{field}': writing {path} is not allowed{via}: {system} is a system location")
    if not any(_inside(path, root) for root in roots):
        shown = ", ".join(str(r) for r in roots)
        raise ToolError(
            f"'{field}': writing {path} is not allowed{via}: it is outside the allowed roots ({shown}); "
            "the folders can be changed with file.allowed_roots in config.yaml"
        )
    confine_write(path, kw, tool)


class _Settings:
    """config.yaml as :func:`file_setting` reads it (the session's settings, else the file, re-read only
    when it changes), with the ``get(key, default)`` that ``sandbox.load_policy`` wants."""

    def __init__(self, kw: dict[str, Any]) -> None:
        self.kw = kw

    def get(self, key: str, default: Any = None) -> Any:
        value = file_setting(self.kw, key)
        return default if value is None else value


def confine_write(path: Path, kw: dict[str, Any], tool: str) -> None:
    """While commands run in the OS sandbox, a file tool writing where a sandboxed command could not
    (outside the workspace, ``sandbox.writable_paths`` and the session's temp folder) asks first, like
    ``terminal(sandbox=false)`` does: the pattern id ``sandbox_file_write``."""
    from hermes.tools import sandbox
    from hermes.tools.approvals import approve_file_write

    config = _Settings(kw)
    policy = sandbox.load_policy(config)
    if not policy.enabled:
        return
    temp = sandbox.existing_session_temp(str(kw.get("task_id") or "default"))
    if sandbox.outside_writable(policy, path, [sandbox.session_workspace(config)], temp):
        approve_file_write(kw, tool, path)
