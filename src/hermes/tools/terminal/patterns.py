"""The catalogue of dangerous-command patterns and the path and text tests the rules share.

Every pattern has a stable id (used in ``approvals.allow`` and in approval requests), a level
(``floor``: never run, whatever the configuration; ``dangerous``: run only when approved or
allow-listed) and a one-line description that becomes the verdict's reason.
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import Literal

from hermes.tools.approvals import FILE_WRITE_ID, FILE_WRITE_REASON

Level = Literal["floor", "dangerous", "unproven", "safe"]

PATTERNS: dict[str, tuple[Level, str]] = {
    # -- the hard floor: refused even in yolo mode -------------------------------------------------
    "rm_root": ("floor", "recursive delete of /, the home directory or a top-level system directory"),
    "mkfs": ("floor", "creating a filesystem (mkfs) erases the target"),
    "disk_write": ("floor", "writing straight onto a disk or memory device"),
    "fork_bomb": ("floor", "fork bomb"),
    "shutdown": ("floor", "shutting down, halting or rebooting the machine"),
    "chmod_root": ("floor", "recursive permission or ownership change of / or a top-level system directory"),
    "too_large": ("floor", "command too large to inspect (tens of thousands of words): put it in a script file"),
    # -- dangerous: asked, or allowed by configuration -------------------------------------------
    "rm_recursive": ("dangerous", "recursive delete"),
    "rm_glob": ("dangerous", "delete with a glob over a broad directory"),
    "rm_system": ("dangerous", "deleting files in a system directory"),
    "find_delete": ("dangerous", "find that deletes what it matches (-delete or -exec rm)"),
    "chmod_777": ("dangerous", "making files world-writable (chmod 777) recursively or at the top of the tree"),
    "chown_recursive": ("dangerous", "recursive ownership change"),
    "pipe_to_shell": ("dangerous", "running downloaded code (curl/wget piped into a shell or interpreter)"),
    "obfuscated_shell": ("dangerous", "running encoded text as a script (base64 -d | sh)"),
    "git_force_push": ("dangerous", "force push (rewrites the remote branch's history)"),
    "git_remote_delete": ("dangerous", "deleting a branch or tag on the remote"),
    "git_reset_hard": ("dangerous", "git reset --hard (discards uncommitted changes)"),
    "git_clean": ("dangerous", "git clean -f (deletes untracked files)"),
    "sql_drop": ("dangerous", "SQL DROP TABLE/DATABASE/SCHEMA"),
    "sql_truncate": ("dangerous", "SQL TRUNCATE"),
    "sql_delete_all": ("dangerous", "SQL DELETE FROM without WHERE"),
    "shell_profile": ("dangerous", "writing into a shell start-up file (~/.bashrc, ~/.profile, /etc/profile, ...)"),
    "system_file_write": ("dangerous", "writing into a system location (/etc, /usr, /boot, ~/.ssh, ...)"),
    "crontab_remove": ("dangerous", "crontab -r (removes every cron job)"),
    "kill_all": ("dangerous", "kill -1 (signals every process you may signal)"),
    "killall": ("dangerous", "killall (kills processes by name)"),
    "service_stop": ("dangerous", "stopping, disabling or masking a system service"),
    "firewall_flush": ("dangerous", "flushing or disabling the firewall"),
    "docker_prune": ("dangerous", "docker/podman prune (deletes containers, images or volumes)"),
    "package_uninstall": ("dangerous", "uninstalling packages"),
    "uninspectable": ("dangerous", "command nested too deeply to inspect"),
    # -- asking for more than the OS sandbox gives (terminal's network / sandbox arguments) --------
    "sandbox_network": ("dangerous", "network access from inside the sandbox"),
    "sandbox_escape": ("dangerous", "running a command outside the sandbox"),
    # asked by the file tools (hermes.tools.approvals), listed here so approvals.allow knows the id
    FILE_WRITE_ID: ("dangerous", FILE_WRITE_REASON),
}

FLOOR_IDS = frozenset(k for k, (level, _) in PATTERNS.items() if level == "floor")

SYSTEM_DIRS = frozenset({
    "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "opt", "proc", "root", "sbin",
    "srv", "sys", "usr", "var", "snap", "Applications", "Library", "System", "Users", "Volumes", "private",
})
_SYSTEM_FILE_DIRS = ("/etc/", "/boot/", "/usr/", "/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/sys/")
_BLOCK_DEVICE = re.compile(
    r"/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d|md\d|dm-\d|mapper/|loop\d|sr\d"
    r"|mem$|kmem$|port$)"
)
HOME_PROFILES = frozenset({
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile", ".zshenv",
    ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc", ".mkshrc", ".config/fish/config.fish",
})
ETC_PROFILES = frozenset({"/etc/profile", "/etc/bash.bashrc", "/etc/bashrc", "/etc/zshrc", "/etc/zprofile",
                          "/etc/zshenv", "/etc/environment", "/etc/csh.cshrc"})


def norm_path(path: str) -> str:
    """Normalise a path for the tests below: ``$HOME`` and the real home become ``~``; dots collapse."""
    if path == "$HOME" or path.startswith("$HOME/"):
        path = "~" + path[5:]
    home = os.path.expanduser("~")
    if home not in ("", "/", "~") and (path == home or path.startswith(home + "/")):
        path = "~" + path[len(home):]
    if path.startswith("~"):
        head, sep, rest = path.partition("/")
        tail = posixpath.normpath("/" + rest) if sep else "/"
        return head + ("" if tail == "/" else tail)
    if path.startswith("/"):
        out = posixpath.normpath(path)
        return "/" + out.lstrip("/") if out.startswith("//") else out
    return path


def catastrophic(path: str) -> str | None:
    """``"root"``, ``"home"`` or ``"system"`` when deleting ``path`` recursively would wreck the machine."""
    q = norm_path(path)
    if q in ("/", "/*", "/.*"):
        return "root"
    if q.startswith("~"):
        _, _, rest = q.partition("/")
        return "home" if rest in ("", "*", ".*") else None
    if q.startswith("/"):
        top, sep, rest = q[1:].partition("/")
        if top in SYSTEM_DIRS and (not sep or rest in ("*", ".*")):
            return "system"
    return None


def broad_glob(path: str) -> bool:
    """A glob that takes a whole broad directory: ``*``, ``./*``, ``/*``, ``~/*``, ``/etc/*``."""
    q = norm_path(path)
    return q in ("*", ".*", "./*") or ("*" in q and catastrophic(path) is not None)


def system_file(path: str) -> bool:
    q = norm_path(path)
    return q.startswith(_SYSTEM_FILE_DIRS)


def write_target(path: str) -> str | None:
    """The pattern id that writing to ``path`` matches, if any."""
    q = norm_path(path)
    if _BLOCK_DEVICE.match(q):
        return "disk_write"
    if q.startswith("~/") and q[2:] in HOME_PROFILES:
        return "shell_profile"
    if q in ETC_PROFILES or q.startswith(("/etc/profile.d/", "/etc/zsh/")):
        return "shell_profile"
    if q.startswith(_SYSTEM_FILE_DIRS) or q.startswith(("~/.ssh/", "/root/.ssh/")) or q == "~/.ssh":
        return "system_file_write"
    return None


def world_writable(mode: str) -> bool:
    """``chmod`` modes that give everybody write access: 777, 0666, a+rwx, o+w, ..."""
    if mode.isdigit():
        return 3 <= len(mode) <= 4 and mode[-1] in "2367" and all(c in "01234567" for c in mode)
    for clause in mode.split(","):
        m = re.match(r"([ugoa]*)([+=])([rwxXst]*)$", clause)
        if m and "w" in m.group(3) and ("o" in m.group(1) or "a" in m.group(1)):
            return True
    return False


_SQL_WORD = re.compile(r"[A-Za-z_]+|;")


def sql_findings(text: str) -> list[str]:
    """Pattern ids of destructive SQL in ``text`` (one pass over its keywords)."""
    found: list[str] = []
    prev = prev2 = ""
    deleting = False
    for m in _SQL_WORD.finditer(text):
        tok = m.group(0).upper()
        if tok == ";":
            if deleting:
                found.append("sql_delete_all")
            deleting = False
        elif tok in ("TABLE", "DATABASE", "SCHEMA") and (prev == "DROP" or (prev == "TEMPORARY" and prev2 == "DROP")):
            found.append("sql_drop")
        elif prev == "TRUNCATE" and tok not in ("IF",):
            found.append("sql_truncate")
        elif tok == "FROM" and prev == "DELETE":
            deleting = True
        elif tok == "WHERE":
            deleting = False
        prev2, prev = prev, tok
    if deleting:
        found.append("sql_delete_all")
    return found


_QUOTE = re.compile(r"['\"]")
_STOP = {"'": re.compile(r"['\\\n]"), '"': re.compile(r"[\"\\\n]")}
_LIST_GLUE = re.compile(r"[\s,]*")


def string_literals(code: str) -> str:
    """The string literals of some program text, as shell text: literals separated only by commas (an
    argument list such as ``["rm", "-rf", "/"]``) are joined with spaces, the others with newlines.

    One left-to-right pass; an unterminated literal ends at the end of its line.
    """
    out: list[str] = []
    i, n, last_end = 0, len(code), -1
    while i < n:
        m = _QUOTE.search(code, i)
        if m is None:
            break
        q, start = m.group(0), m.end()
        j, closed = start, False
        while j < n:
            stop = _STOP[q].search(code, j)
            if stop is None:
                j = n
                break
            ch = stop.group(0)
            if ch == "\\":
                j = stop.end() + 1
                continue
            j = stop.end()
            closed = ch == q
            break
        if closed:
            literal = code[start : j - 1]
            if out:
                glue = _LIST_GLUE.match(code, last_end)
                joined = glue is not None and glue.end() == m.start()
                out.append(" " if joined else "\n")
            out.append(literal)
            last_end = j
        i = j
    return "".join(out)
