"""The OS sandbox that ``terminal``, ``process_manage`` and ``execute_code`` run commands in (Linux, bubblewrap).

A sandboxed command runs under ``bwrap`` in new user, mount, PID, IPC, UTS and network namespaces with
every capability dropped, so the rules hold for root too:

* the whole file system is mounted **read-only**; writable are only the workspace (the session's
  working directory), the paths listed in ``sandbox.writable_paths`` (an open desktop project adds its
  folders there) and the session's temp folder, which the command sees as ``/tmp`` (``TMPDIR=/tmp``) —
  never ``/``, the home folder itself, a system folder, a credential store, a start-up folder or
  HERMES_HOME (:func:`writable_refusal`, checked again for every command), nor a pinned folder that is no
  longer the one approved (:func:`changed_folder`);
* **hidden** (an empty folder without write permission, or ``/dev/null`` for a file): HERMES_HOME except its
  ``skills`` and ``plugins`` folders, the home folder's credential stores (``~/.ssh``, ``~/.aws``,
  ``~/.gnupg``, ``.netrc``, … :func:`hermes.tools.sensitive.hidden_from_commands`), ``/etc/shadow``, the
  other users' home folders, the host's ``/tmp`` and ``/run`` (where the sockets of tmux, Docker, D-Bus
  and other daemons live) and the host's processes (a fresh ``/proc``);
* **no network** unless allowed (``sandbox.network``, or per command after an approval): only a
  private loopback interface exists;
* **no secrets in the environment** (:func:`scrub_env`, used for every terminal child, sandboxed or
  not): variables whose name or value says they hold a secret — ``*_KEY``, ``*_TOKEN``, ``*_SECRET``,
  ``*PASSWORD*``, ``DATABASE_URL``, ``*_DSN``, ``PGPASSWORD``, a URL with a password, a value shaped
  like a provider key or equal to one hermes holds — are removed unless ``terminal.env_passthrough``
  names them.

Modes (``sandbox.mode``): ``workspace-write`` (default), ``read-only`` (only the temp folder is
writable) and ``full-access`` (no sandbox; only by the person's explicit setting). Where a sandbox
cannot be set up (not Linux, no ``bwrap``, user namespaces disabled) :func:`support` says what is
missing and commands run unsandboxed under the approval rules for unsandboxed commands.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import re
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from hermes.config.paths import HermesPaths
from hermes.errors import ConfigError


class Process(Protocol):
    """What the tools use of a started command: :class:`subprocess.Popen` or a command in a long-lived
    sandbox (:class:`hermes.tools.sandbox_pool.SandboxedProcess`). ``pid`` leads its process group."""

    @property
    def pid(self) -> int: ...

    returncode: int | None
    stdin: IO[bytes] | None
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


MODES = ("workspace-write", "read-only", "full-access")
DEFAULT_MODE = "workspace-write"
#: folders of HERMES_HOME a sandboxed command may read (skills carry scripts that commands run)
HOME_VISIBLE = ("skills", "plugins")
#: host folders replaced inside the sandbox (``/tmp`` by the session's temp folder, ``/run`` by nothing)
_PRIVATE_TMP = "/tmp"
_HIDDEN_RUN = "/run"
#: kept visible under /run when the network is allowed (resolv.conf may point into it)
_RUN_NETWORK = ("/run/systemd/resolve", "/run/resolvconf", "/run/NetworkManager")
_TEMP_PREFIXES = ("hermes-code-", "hermes-sandbox-")
_PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Policy:
    """What ``sandbox.*`` in config.yaml asks for."""

    mode: str = DEFAULT_MODE
    writable_paths: tuple[str, ...] = ()
    network: bool = False
    #: folders approved with their (device, inode) (``sandbox.folder_identities``, set by an open desktop
    #: project): one that resolves elsewhere or is another folder now is never made writable
    pinned: Mapping[str, tuple[int, int]] = field(default_factory=dict, hash=False)

    @property
    def enabled(self) -> bool:
        return self.mode != "full-access"


@dataclass(frozen=True)
class Support:
    """Whether a sandbox can be set up here; ``missing`` names what is missing when not."""

    available: bool
    backend: str | None
    missing: str | None = None
    bwrap: str | None = None


def load_policy(config: Any = None) -> Policy:
    """``sandbox.mode``, ``sandbox.writable_paths`` and ``sandbox.network`` from ``config`` (anything with
    ``get(key, default)``; None: HERMES_HOME's config.yaml). A malformed value is a :class:`ConfigError`."""
    if config is None:
        from hermes.config.yamlfile import ConfigFile

        path = HermesPaths.current().config
        try:
            config = ConfigFile.load(path)
        except ConfigError:
            config = ConfigFile(path)
    mode = str(config.get("sandbox.mode", DEFAULT_MODE) or DEFAULT_MODE).strip().lower().replace("_", "-")
    if mode not in MODES:
        raise ConfigError(f"sandbox.mode must be one of {', '.join(MODES)} (got {mode!r})")
    raw_paths = config.get("sandbox.writable_paths", [])
    if isinstance(raw_paths, str):
        raw_paths = [raw_paths]
    if not isinstance(raw_paths, list) or not all(isinstance(p, str) and p.strip() for p in raw_paths):
        raise ConfigError("sandbox.writable_paths must be a list of folder paths (e.g. ['~/.cache', '/srv/data'])")
    network = config.get("sandbox.network", False)
    if not isinstance(network, bool):
        raise ConfigError(f"sandbox.network must be true or false (got {network!r})")
    raw_pins = config.get("sandbox.folder_identities", {}) or {}
    pinned: dict[str, tuple[int, int]] = {}
    if isinstance(raw_pins, dict):
        for folder, pin in raw_pins.items():
            if isinstance(folder, str) and isinstance(pin, list | tuple) and len(pin) == 2 \
                    and all(isinstance(n, int) for n in pin):
                pinned[os.path.abspath(folder)] = (pin[0], pin[1])
    if not isinstance(raw_pins, dict) or len(pinned) != len(raw_pins):
        raise ConfigError("sandbox.folder_identities must map folder paths to [device, inode]")
    return Policy(mode=mode, writable_paths=tuple(raw_paths), network=network, pinned=pinned)


_support_lock = threading.Lock()
_support: Support | None = None


def _probe() -> Support:
    if not sys.platform.startswith("linux"):
        return Support(False, None, f"the sandbox needs Linux (this is {sys.platform})")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Support(False, None, "bubblewrap is not installed (no 'bwrap' on PATH; Debian/Ubuntu: "
                                    "apt-get install bubblewrap)")
    try:
        limit = Path("/proc/sys/user/max_user_namespaces").read_text(encoding="ascii").strip()
    except OSError:
        limit = ""
    if limit == "0":
        return Support(False, None, "user namespaces are disabled (/proc/sys/user/max_user_namespaces is 0)",
                       bwrap)
    import subprocess

    argv = [bwrap, *_NAMESPACES, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=_PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Support(False, None, f"bwrap could not be started: {exc}", bwrap)
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return Support(False, None, "bwrap cannot create a sandbox here (user namespaces refused?): "
                                    + (why[-1] if why else f"exit status {done.returncode}"), bwrap)
    return Support(True, "bubblewrap", None, bwrap)


def support(refresh: bool = False) -> Support:
    """Whether commands can be sandboxed here (probed once per process by starting ``bwrap true``; no
    network)."""
    global _support
    with _support_lock:
        if _support is None or refresh:
            _support = _probe()
        return _support


# -- the mount plan ----------------------------------------------------------------------------------
def _real(path: str | Path) -> str:
    return os.path.realpath(os.path.expanduser(os.fspath(path)))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def writable_refusal(path: str, hermes_home: str | None = None, *, workspace: bool = True) -> str | None:
    """Why the resolved folder ``path`` must never become writable as a whole (None: it may). The same
    rules hold for the session's workspace, every ``sandbox.writable_paths`` entry and every folder of a
    desktop project: not ``/``, the home folder or a folder holding it, HERMES_HOME (but a kanban task's
    scratch workspace), a system folder, a credential store or secret folder (``~/.ssh``, ``~/.gnupg``,
    ``~/.aws``, browser profiles, :func:`hermes.tools.sensitive.hidden_from_commands`) or a start-up
    folder. A ``workspace`` (not named by the person in ``sandbox.writable_paths``) is also never inside a
    dot-folder of the home folder (``~/.config``, ``~/.local``)."""
    from hermes.tools.paths import credential_store, system_location
    from hermes.tools.sensitive import hidden_from_commands, startup_location

    hermes_home = hermes_home or _real(HermesPaths.current().home)
    home = _real(Path.home())
    if path == "/":
        return "it is the whole file system"
    if _inside(home, path):
        return "it is the home folder" if path == home else f"it holds the home folder {home}"
    if _inside(path, hermes_home):  # all of HERMES_HOME but a kanban task's own scratch workspace
        scratch = os.path.join(hermes_home, "kanban", "workspaces")
        if path == scratch or not _inside(path, scratch):
            return f"it is inside HERMES_HOME ({hermes_home})"
    store = credential_store(Path(path))
    if store is None:
        store = next((d for d in hidden_from_commands()[0] if _inside(path, _real(d))), None)
    if store is not None:
        return f"it is inside {store}, which holds keys or logins (a credential store)"
    if workspace and path != home and _inside(path, home) and path[len(home):].lstrip("/").startswith("."):
        return "it is inside a dot-folder of the home folder (shell start-up files, autostart entries, git settings)"
    start = startup_location(Path(path))
    if start is not None:
        return f"it is inside {start}, whose files run later outside any sandbox (a start-up folder)"
    system = system_location(Path(path))
    if system is not None:
        return f"it is inside the system folder {system}"
    return None


def changed_folder(raw: str, pins: Mapping[str, tuple[int, int]]) -> str | None:
    """Why the folder ``raw`` is no longer the one the person approved (None: it is, or none was pinned):
    ``pins`` maps each approved folder (resolved when approved) to its (device, inode) then. A path that
    now resolves elsewhere (a symlink swapped in) or names another folder (removed and made again) is not it."""
    lexical = os.path.abspath(os.path.expanduser(raw))
    pin = pins.get(lexical)
    if pin is None:
        return None
    real = _real(raw)
    if real != lexical:
        return f"it now leads to {real}, not to the folder that was approved"
    try:
        found = os.stat(real)
    except OSError:
        return "it is gone"
    if (found.st_dev, found.st_ino) != tuple(pin):
        return "it was replaced by another folder after it was approved"
    return None


@dataclass
class Plan:
    """The folders one sandboxed command gets; :meth:`argv` turns it into a ``bwrap`` command line."""

    workdir: str
    temp_dir: str
    writable: list[str] = field(default_factory=list)
    network: bool = False
    refused: list[str] = field(default_factory=list)  # workspace candidates left read-only (too broad)
    reasons: dict[str, str] = field(default_factory=dict)  # why each refused folder is
    tmpdir: str = _PRIVATE_TMP  # TMPDIR inside
    readable: list[str] = field(default_factory=list)  # shown read-only although under the host's /tmp
    #: the working directory when it lies outside every writable folder (it is then read-only)
    outside: str | None = None

    def argv(self, bwrap: str, command: Sequence[str]) -> list[str]:
        """The ``bwrap`` command line that runs ``command`` in this sandbox."""
        return [*self.shape(bwrap), "--chdir", self.workdir, "--setenv", "TMPDIR", self.tmpdir, "--", *command]

    def shape(self, bwrap: str) -> list[str]:
        """The ``bwrap`` command line up to the working directory: everything that makes one sandbox
        different from another (commands of one shape share a supervisor, :mod:`hermes.tools.sandbox_pool`)."""
        hermes_home = _real(HermesPaths.current().home)
        args = [bwrap, *_NAMESPACES]
        if self.network:
            args.append("--share-net")
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                 "--bind", self.temp_dir, _PRIVATE_TMP, *_EMPTY, _HIDDEN_RUN]
        if self.network:
            for keep in _RUN_NETWORK:
                if os.path.isdir(keep):
                    args += ["--ro-bind", keep, keep]
        binds = sorted(set(self.writable), key=lambda p: (p.count("/"), p))
        for path in binds:
            args += ["--bind", path, path]
        for path in self.readable:
            if not any(_inside(path, w) for w in binds) and (_inside(path, _PRIVATE_TMP) or _inside(path, _HIDDEN_RUN)):
                args += ["--ro-bind", path, path]
        hidden_dirs, hidden_files = _hidden(hermes_home)
        hidden_dirs = [d for d in hidden_dirs if self._visible(d)]
        # what lies inside a hidden folder but must stay: writable paths, HERMES_HOME's skills
        inner = [(path, "--bind") for path in binds if any(_inside(path, d) for d in hidden_dirs)]
        if hermes_home in hidden_dirs:
            inner += [(os.path.join(hermes_home, n), "--ro-bind") for n in HOME_VISIBLE
                      if os.path.isdir(os.path.join(hermes_home, n))]
        for path in hidden_dirs:
            args += [*_EMPTY, path]
        for path, _ in inner:  # mount points (made by bwrap, which may still write there)
            args += ["--dir", path]
        for path, how in inner:
            args += [how, path, path]
        shown = [path for path, _ in inner]
        for path in hidden_files:
            seen = self._visible(path) and not any(_inside(path, d) for d in hidden_dirs)
            if (seen or any(_inside(path, s) for s in shown)) and os.path.isfile(path):
                args += ["--ro-bind", "/dev/null", path]
        return args

    def _visible(self, path: str) -> bool:
        """Whether ``path`` is seen inside at all (the host's /tmp and /run are replaced)."""
        if not (_inside(path, _PRIVATE_TMP) or _inside(path, _HIDDEN_RUN)):
            return os.path.lexists(path)
        return any(_inside(path, w) for w in (*self.writable, *self.readable)) and os.path.lexists(path)


#: an empty folder the command cannot write into (mode 0555; cheaper than a tmpfs and a read-only remount,
#: which costs a mount operation more per hidden folder; what a command could put there after a chmod
#: is thrown away with the sandbox)
_EMPTY = ("--perms", "0555", "--tmpfs")
#: new namespaces for everything, no capabilities left (also when hermes runs as root); the sandbox
#: dies with hermes
_NAMESPACES = ("--unshare-all", "--unshare-user", "--cap-drop", "ALL", "--die-with-parent")


def _hidden(hermes_home: str) -> tuple[list[str], list[str]]:
    from hermes.tools.sensitive import hidden_from_commands

    dirs, files = hidden_from_commands()
    home = _real(Path.home())
    hidden = [hermes_home, *(_real(d) for d in dirs if os.path.lexists(d))]
    for parent in ("/home", "/root", "/Users"):
        if _inside(home, parent) and parent != home and os.path.isdir(parent):
            try:
                others = [os.path.join(parent, n) for n in os.listdir(parent)]
            except OSError:
                others = []
            hidden += [p for p in others if os.path.isdir(p) and not _inside(home, p)]
        elif not _inside(home, parent) and os.path.isdir(parent):
            hidden.append(parent)
    temp_root = _real(tempfile.gettempdir())
    if temp_root != _PRIVATE_TMP:  # other runs' temp folders, when the host's temp is not /tmp
        with contextlib.suppress(OSError):
            hidden += [os.path.join(temp_root, n) for n in os.listdir(temp_root) if n.startswith(_TEMP_PREFIXES)]
    # only files that exist and that this user could open need covering (one stat for most candidates)
    candidates = [*files, *HermesPaths.current().protected_files()]
    secret_files = [_real(f) for f in candidates if os.access(f, os.R_OK)]
    kept = [d for d in dict.fromkeys(hidden) if os.path.isdir(d)]
    return sorted(kept, key=lambda p: (p.count("/"), p)), list(dict.fromkeys(secret_files))


@functools.lru_cache(maxsize=1)
def _runtime_folders() -> tuple[str, ...]:
    """The Python that runs hermes and hermes's own code, kept visible (read-only) inside the sandbox even
    when they live under the host's /tmp or /run (a checkout and its venv in /tmp): execute_code's
    script and commands such as ``.venv/bin/python -m pytest`` need them. Found once per process (the
    interpreter and hermes's code do not move while it runs)."""
    import sys

    found = [sys.prefix, sys.exec_prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)),
             str(Path(__file__).resolve().parents[2])]  # .../src (or site-packages) holding hermes
    return tuple(p for p in dict.fromkeys(_real(f) for f in found) if os.path.isdir(p))


def session_workspace(config: Any) -> str:
    """The session's working directory: ``terminal.cwd`` from ``config`` (anything with ``get``), else
    hermes's own."""
    configured = config.get("terminal.cwd")
    if isinstance(configured, str) and configured:
        return os.path.abspath(os.path.expanduser(configured))
    return os.getcwd()


def writable_folders(policy: Policy, workspaces: Iterable[str], extra_writable: Iterable[str] = (),
                     reasons: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    """(writable, refused): the folders a sandboxed command may write — in ``workspace-write`` mode the
    ``workspaces`` and ``sandbox.writable_paths`` that :func:`writable_refusal` and :func:`changed_folder`
    let through (the others are the second list, why in ``reasons``); in every mode ``extra_writable``
    (hermes's own run folders) — resolved, existing ones only. Resolved again for every command, so a
    folder swapped for a symlink since is judged by where it leads now. The session's temp folder comes
    on top."""
    hermes_home = _real(HermesPaths.current().home)
    writable: list[str] = []
    refused: list[str] = []
    why_refused = reasons if reasons is not None else {}
    if policy.mode == "workspace-write":
        candidates = [(raw, True) for raw in workspaces] + [(raw, False) for raw in policy.writable_paths]
        for raw, workspace in candidates:
            path = _real(raw)
            exists = os.path.isdir(path) if workspace else os.path.exists(path)
            if path in writable or not exists:
                continue
            why = changed_folder(raw, policy.pinned) or writable_refusal(path, hermes_home, workspace=workspace)
            if why is None:  # (a workspace refused as a dot-folder may still be named in writable_paths)
                writable.append(path)
                if path in refused:
                    refused.remove(path)
            elif path not in refused:
                refused.append(path)
                why_refused[path] = why
    for raw in extra_writable:
        path = _real(raw)
        if os.path.exists(path) and path not in writable:
            writable.append(path)
    return writable, refused


def outside_writable(policy: Policy, path: str | Path, workspaces: Iterable[str], temp_dir: str | Path | None
                     ) -> bool:
    """Whether writing ``path`` (resolved) leaves what a sandboxed command could write: the file tools
    ask first then (:func:`hermes.tools.approvals.approve_file_write`). Never while no sandbox is in force."""
    if not policy.enabled or not support().available:
        return False
    writable, _ = writable_folders(policy, workspaces)
    if temp_dir:
        writable.append(_real(temp_dir))
    target = _real(path)
    return not any(_inside(target, w) for w in writable)


def plan(policy: Policy, *, workdir: str, temp_dir: str, workspaces: Iterable[str] = (),
         extra_writable: Iterable[str] = (), network: bool = False, tmpdir: str = _PRIVATE_TMP) -> Plan:
    """The sandbox for one command run in ``workdir``: ``workspaces`` (the session's working directory)
    become writable in ``workspace-write`` mode unless too broad, and so do ``sandbox.writable_paths`` and
    ``extra_writable`` (e.g. ``execute_code``'s run folder). ``workdir`` itself — the model's choice — is
    only seen; outside all of those it stays read-only (:attr:`Plan.outside`)."""
    result = Plan(workdir=_real(workdir), temp_dir=_real(temp_dir), network=network, tmpdir=tmpdir)
    given = list(workspaces)
    spaces = [c for c in dict.fromkeys(_real(w) for w in given) if os.path.isdir(c)]
    result.readable = list(dict.fromkeys([result.workdir, *spaces, *_runtime_folders()]))
    result.writable, result.refused = writable_folders(policy, given, extra_writable, result.reasons)
    if (result.workdir not in result.refused and not _inside(result.workdir, result.temp_dir)
            and not any(_inside(result.workdir, w) for w in result.writable)):
        result.outside = result.workdir
    return result


# -- the environment ---------------------------------------------------------------------------------
#: names that hold secrets although :func:`hermes.redact.is_secret_name` does not say so: database
#: URLs and DSNs (they carry passwords), client password variables (``PGPASSWORD``, ``MYSQL_PWD``)
_SECRET_ENV_NAME = re.compile(
    r"PASSWORD|PASSWD|_(?:PASS|PWD)$|(?:^|_)(?:DSN|AUTH|COOKIE|PAT|PRIVATE_KEY|ACCESS_KEY(?:_ID)?|CONNECTION_STRING)$"
    r"|(?:^|_)DATABASE_UR[LI]$",
    re.IGNORECASE,
)
#: a URL with a password in it: ``scheme://user:password@host``
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@")


def secret_env_reason(name: str, value: str, known: Iterable[str] = ()) -> str | None:
    """Why the variable ``name=value`` holds a secret (None: it looks harmless). ``known`` are secret
    values hermes knows (the values of its secret-named variables), so a copy under another name is one too."""
    from hermes.redact import is_secret_name, redact

    if is_secret_name(name) or _SECRET_ENV_NAME.search(name):
        return "its name says it holds a secret"
    if "://" in value and _URL_PASSWORD.search(value):
        return "its value is a URL with a password"
    if value in known or (len(value) >= 8 and redact(value) != value):
        return "its value is a key"
    return None


def scrub_env(source: Mapping[str, str], allow: Iterable[str] = ()) -> dict[str, str]:
    """``source`` without the variables that hold secrets (:func:`secret_env_reason`), except the names or
    shell-style patterns in ``allow`` (``terminal.env_passthrough``: the person's choice)."""
    import fnmatch

    from hermes.redact import secret_values

    allowed = [p for p in allow if isinstance(p, str) and p]
    known = frozenset(secret_values(source))
    return {
        k: v for k, v in source.items()
        if secret_env_reason(k, v, known) is None or any(k == p or fnmatch.fnmatchcase(k, p) for p in allowed)
    }


# -- the session's temp folder ------------------------------------------------------------------------
_temps: dict[str, Path] = {}
_temps_lock = threading.Lock()
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def session_temp(task_id: str) -> Path:
    """The private (0700) temp folder of the session ``task_id``, created on first use; it is ``/tmp``
    inside its sandboxed commands. Removed by :func:`drop_session_temp` or when hermes exits."""
    with _temps_lock:
        found = _temps.get(task_id)
        if found is not None and found.is_dir():
            return found
        if not _temps:
            atexit.register(_drop_all)
        label = _SAFE_NAME.sub("_", task_id)[:40] or "session"
        made = Path(tempfile.mkdtemp(prefix=f"hermes-sandbox-{label}-"))
        _temps[task_id] = made
        return made


def existing_session_temp(task_id: str) -> Path | None:
    """The temp folder of the session ``task_id`` when one was made (never creates it)."""
    with _temps_lock:
        found = _temps.get(task_id)
    return found if found is not None and found.is_dir() else None


def drop_session_temp(task_id: str) -> None:
    with _temps_lock:
        found = _temps.pop(task_id, None)
    if found is not None:
        shutil.rmtree(found, ignore_errors=True)


def _drop_all() -> None:
    for task_id in list(_temps):
        drop_session_temp(task_id)


def describe(policy: Policy, found: Support | None = None) -> dict[str, Any]:
    """What ``status --full`` shows: the configured mode and whether it is in force here."""
    found = found or support()
    active = policy.enabled and found.available
    out: dict[str, Any] = {
        "mode": policy.mode, "network": policy.network, "writable_paths": list(policy.writable_paths),
        "available": found.available, "backend": found.backend, "active": active, "missing": found.missing,
    }
    if not policy.enabled:
        out["note"] = "sandbox.mode is full-access: commands run without a sandbox"
    elif not found.available:
        out["note"] = f"commands run unsandboxed: {found.missing}"
    return out


@dataclass(frozen=True)
class Launch:
    """How one command is started: inside a sandbox (``plan``) or not (``why_not`` says why)."""

    policy: Policy
    plan: Plan | None
    bwrap: str | None = None
    why_not: str | None = None
    #: the session whose long-lived sandbox runs the command (None: a sandbox of its own per command)
    session: str | None = None

    @property
    def sandboxed(self) -> bool:
        return self.plan is not None

    def argv(self, command: list[str]) -> list[str]:
        """``command`` as it is started: wrapped in ``bwrap`` when sandboxed."""
        if self.plan is None or self.bwrap is None:
            return command
        return self.plan.argv(self.bwrap, command)

    def start(self, argv: list[str], *, cwd: str, env: Mapping[str, str], stdin: int | None,
              stderr: int | None) -> Process:
        """Start ``argv`` in its own session and process group, stdout a pipe (``stdin``: ``DEVNULL`` or
        ``PIPE``; ``stderr``: ``STDOUT`` or ``PIPE``): in the session's long-lived sandbox when there is
        one (:mod:`hermes.tools.sandbox_pool`), else in a sandbox of its own, or unsandboxed."""
        import subprocess

        if self.plan is not None and self.bwrap is not None and self.session is not None:
            from hermes.tools import sandbox_pool

            try:
                supervisor = sandbox_pool.supervisor_for(self.session, self.plan.shape(self.bwrap))
                return supervisor.start(argv, cwd=self.plan.workdir, env={**env, "TMPDIR": self.plan.tmpdir},
                                        stdin=stdin, stderr=stderr)
            except sandbox_pool.SupervisorError:
                pass  # a sandbox of its own, as before
        return subprocess.Popen(self.argv(argv), cwd=cwd, env=dict(env), stdin=stdin, stdout=subprocess.PIPE,
                                stderr=stderr, start_new_session=True, close_fds=True)

    def note(self) -> str | None:
        """What the model should know when its working directory is not writable."""
        if self.plan is None:
            return None
        notes = []
        for path in self.plan.refused:
            why = self.plan.reasons.get(path, "it is too broad")
            notes.append(f"{path} stays read-only in the sandbox: {why} (/, the home folder and its dot-folders, "
                         "system folders, credential stores and HERMES_HOME are never writable)")
        if self.plan.outside and self.policy.mode == "workspace-write":
            notes.append(f"the workdir {self.plan.outside} is outside the session's workspace and stays read-only "
                         "in the sandbox")
        if not notes:
            return None
        return "; ".join(notes) + ("; work in the session's workspace, or the person can add a folder to "
                                   "sandbox.writable_paths")

    def label(self) -> str:
        """What a tool result says about it: the mode (with ``+network``), or ``off (why)``."""
        if self.plan is None:
            return f"off ({self.why_not})" if self.why_not else "off"
        return self.policy.mode + ("+network" if self.plan.network else "")


def launch(policy: Policy, *, workdir: str, temp_dir: str | Path, workspaces: Iterable[str] = (),
           extra_writable: Iterable[str] = (), network: bool = False, leave: bool = False,
           tmpdir: str = _PRIVATE_TMP, session: str | None = None) -> Launch:
    """Decide how a command runs: sandboxed per ``policy`` when a sandbox works here, unless ``leave``
    (the person approved running it outside). ``temp_dir`` is ``/tmp`` inside; ``tmpdir`` is TMPDIR.
    With ``session`` the command runs in that session's long-lived sandbox of the same shape."""
    if not policy.enabled:
        return Launch(policy, None, why_not="sandbox.mode is full-access")
    if leave:
        return Launch(policy, None, why_not="run outside the sandbox with approval")
    found = support()
    if not found.available:
        return Launch(policy, None, why_not=found.missing)
    chosen = plan(policy, workdir=workdir, temp_dir=str(temp_dir), workspaces=workspaces,
                  extra_writable=extra_writable, network=network or policy.network, tmpdir=tmpdir)
    return Launch(policy, chosen, bwrap=found.bwrap, session=session)
