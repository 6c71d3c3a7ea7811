"""Where a command line may be and what it writes: the directory set and the write-target checks.

:class:`Places` is the half of :class:`~hermes.tools.terminal.proof.Prover` that knows the workspace,
the set of directories ``cd``/``pushd`` may have reached (starting at the command's working directory,
which need not lie in the workspace) (it only grows: a failed ``cd`` leaves the shell
where it was), and whether a file written resolves inside the workspace — following the symbolic
links that exist now, and never into ``/proc``, ``/sys``, ``/dev`` (``/dev/null``, ``/dev/stdout``,
``/dev/stderr`` excepted), ``.git``, the home directory's dot-files, devices or files with other hard
links. See docs/tools/terminal.md ("What proven safe means").
"""

from __future__ import annotations

import os
import posixpath
import stat

from hermes.tools.terminal.patterns import SYSTEM_DIRS

MAX_CHECKED_PATHS = 1000
MAX_CWDS = 8
TOO_COMPLEX = "too complex to inspect"
_DEV_OK = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_SPECIAL = ("/proc/", "/sys/", "/dev/")


class Places:
    """The workspace, the directories the shell may be in, and the files written so far."""

    def __init__(self, cwd: str | None, workspace: str | None = None) -> None:
        #: where proven writes may land: the session's workspace (``cwd`` when none is given)
        root = workspace if workspace is not None else cwd
        self.workspace = os.path.realpath(root) if root else None
        start = os.path.realpath(cwd) if cwd else None
        #: where programs may have been put by the model or others: the workspace and the working directory
        self.untrusted = [p for p in dict.fromkeys((self.workspace, start)) if p]
        self.cwds: list[str] | None = [start] if start else None
        self.home = os.path.realpath(os.path.expanduser("~"))
        self.checked: dict[str, str | None] = {}
        self.cwd_version = 0  # changes whenever the set of directories does
        self.command_no = 0
        #: (path, command number, segment) of every file written; (path, command number) of every copy
        #: or move destination
        self.written: list[tuple[str, int, str]] = []
        self.copied: list[tuple[str, int]] = []

    def copy_reason(self) -> tuple[str, str] | None:
        """A file written inside a copy or move destination of the same command line may be reached
        through a symbolic link that the copy brought along (``cp -r /etc/alternatives x; echo > x/awk``)."""
        for dest, owner in self.copied:
            for path, number, segment in self.written:
                if number != owner and (path == dest or path.startswith(dest.rstrip("/") + "/")):
                    return (f"writes `{path[:60]}` inside `{dest[:60]}`, where this command line copies or "
                            "moves files (links among them are not followed here)", segment)
        return None

    def note_copies(self, copies: list[str]) -> str | None:
        for target in copies:
            for path in self.candidates(target) or []:
                if len(self.copied) >= MAX_CWDS * 8:
                    return f"{TOO_COMPLEX} (too many copies)"
                self.copied.append((path, self.command_no))
        return None

    def candidates(self, target: str) -> list[str] | None:
        """The absolute paths ``target`` may name from the directories the shell may be in (None: unknown)."""
        path = self.expand(target)
        if path is None:
            return None
        if path.startswith("/"):
            return [posixpath.normpath(path)]
        if self.cwds is None:
            return None
        return [posixpath.normpath(posixpath.join(c, path)) for c in self.cwds]

    def change_directory(self, name: str, args: list[str]) -> str | None:
        if name in ("popd", "dirs"):
            return None  # back to a directory already in the set
        targets = [a for a in args if not (a.startswith("-") and a != "-")]
        if args[:1] == ["--"]:
            targets = args[1:]
        if not targets:
            if name == "pushd":
                return None
            targets = ["~"]
        target = targets[0]
        if target == "-" or target.startswith(("+", "-")):
            return f"`{name} {target}` goes to a directory that is not known"
        if self.cwds is None:
            return None
        path = self.expand(target)
        if path is None or ("CDPATH" in os.environ and not path.startswith(("/", "."))):
            return f"`{name} {target[:40]}` goes to a directory that is not known"
        new = [path] if path.startswith("/") else [posixpath.normpath(posixpath.join(c, path)) for c in self.cwds]
        for p in new:
            if p not in self.cwds:
                self.cwds.append(p)
                self.cwd_version += 1
        if len(self.cwds) > MAX_CWDS:
            self.cwds = None
            self.cwd_version += 1
        return None

    # -- write targets ------------------------------------------------------------------------------
    def expand(self, path: str) -> str | None:
        if path == "~" or path.startswith("~/"):
            return self.home + path[1:]
        if path.startswith("~"):
            return None
        return path

    def check_writes(self, writes: list[str], segment: str) -> str | None:
        for target in writes:
            if target in _DEV_OK:
                continue
            candidates = self.candidates(target)
            if candidates is None:
                if self.expand(target) is None:
                    return f"writes `{target[:60]}` in another user's home or a directory of the directory stack"
                return f"writes `{target[:60]}` but the working directory is not known"
            for candidate in candidates:
                why = self.check_path(candidate, target)
                if why:
                    return why
                if self.copied or len(self.written) < MAX_CHECKED_PATHS:
                    self.written.append((candidate, self.command_no, segment))
        return None

    def check_path(self, path: str, shown: str) -> str | None:
        if path in self.checked:
            return self.checked[path]
        if len(self.checked) >= MAX_CHECKED_PATHS:
            return f"{TOO_COMPLEX} (writes more than {MAX_CHECKED_PATHS} files)"
        why = self.judge_path(path, shown)
        self.checked[path] = why
        return why

    def judge_path(self, path: str, shown: str) -> str | None:
        if path.startswith(_SPECIAL) or path in ("/proc", "/sys", "/dev"):
            return f"writes the special file `{shown[:60]}`"
        ws = self.workspace
        if ws is None:
            return f"writes `{shown[:60]}` but the workspace is not known"
        real = real_or_none(path)
        if real is None:
            return f"writes `{shown[:60]}`, whose place cannot be resolved (a link this user may not follow)"
        if real.startswith(_SPECIAL):
            return f"writes `{shown[:60]}`, which leads to the special file {real[:80]}"
        if ws != self.home and (ws == "/" or (posixpath.dirname(ws) == "/" and posixpath.basename(ws) in SYSTEM_DIRS)):
            return f"writes `{shown[:60]}` in {ws}, a system directory, which is not taken as a workspace"
        if not inside(real, ws):
            return f"writes `{shown[:60]}` outside the workspace {ws}"
        if _in_git_dir(real):
            return f"writes `{shown[:60]}` inside a git directory (its configuration and hooks can name programs)"
        home = self.home
        if real != home and inside(real, home) and real[len(home):].lstrip("/")[:1] == ".":
            return f"writes `{shown[:60]}`, a dot-file of the home directory"
        try:
            st = os.lstat(real)
        except OSError:
            return None
        if stat.S_ISBLK(st.st_mode) or stat.S_ISCHR(st.st_mode):
            return f"writes `{shown[:60]}`, a device file"
        if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
            return f"writes `{shown[:60]}`, a file with other hard links"
        return None



def real_or_none(path: str) -> str | None:
    """``os.path.realpath(path)``, or None when a link on the way cannot be read (``/proc/1/fd/3``
    as a normal user raises instead of resolving)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return None


_REAL_DIRS: dict[str, str] = {}


def real_dir(entry: str) -> str:
    """``os.path.realpath`` of a PATH directory, remembered (PATH directories are not workspace files)."""
    real = _REAL_DIRS.get(entry)
    if real is None:
        if len(_REAL_DIRS) > 256:
            _REAL_DIRS.clear()
        real = _REAL_DIRS[entry] = os.path.realpath(entry)
    return real


def inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _in_git_dir(real: str) -> bool:
    """Whether ``real`` lies in a git directory: a ``.git`` component anywhere in the path (the workspace
    itself may be one), or an ancestor that is a bare repository (``HEAD`` beside ``objects/``)."""
    if ".git" in real.split("/"):
        return True
    d = posixpath.dirname(real)
    while True:
        if os.path.isfile(os.path.join(d, "HEAD")) and os.path.isdir(os.path.join(d, "objects")):
            return True
        parent = posixpath.dirname(d)
        if parent == d:
            return False
        d = parent
