"""Per-program rules of the dangerous-command detector.

Each rule looks at one simple command (its words after wrappers such as ``sudo`` were removed) and
reports pattern ids through :meth:`Call.hit`; rules for shells and interpreters hand inner code back to
the analyzer.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hermes.tools.terminal import execrules
from hermes.tools.terminal.calls import RESERVED, WRAPPERS, Call, check_write
from hermes.tools.terminal.patterns import (
    broad_glob,
    catastrophic,
    sql_findings,
    system_file,
    world_writable,
    write_target,
)
from hermes.tools.terminal.shelltokens import SUB

_SQL_CLIENTS = frozenset({"psql", "mysql", "mariadb", "sqlite3", "sqlite", "sqlcmd", "clickhouse-client",
                          "duckdb", "mysqlsh", "pgcli", "mycli", "litecli", "usql", "snowsql", "trino", "cockroach"})
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "http", "https", "xh", "curlie", "aria2c", "lwp-request"})
_SHUTDOWN = frozenset({"shutdown", "reboot", "halt", "poweroff"})
_MKFS = re.compile(r"(?:mkfs(?:\..*)?|mke2fs|mkntfs|mkdosfs|newfs(?:_.*)?)$")


# -- the rules -------------------------------------------------------------------------------------
def _rm(c: Call) -> None:
    """``rm``: recursive deletes, broad globs, system files."""
    targets = c.positionals()
    if c.has_flag("r", "--recursive") or c.has_flag("R"):
        if any(catastrophic(c.path(t)) for t in targets):
            c.hit("rm_root")
        else:
            c.hit("rm_recursive")
    elif any(broad_glob(t) or broad_glob(c.path(t)) for t in targets):
        c.hit("rm_glob")
    elif any(system_file(c.path(t)) for t in targets):
        c.hit("rm_system")


def _find(c: Call) -> None:
    """``find``: ``-delete`` and the command of ``-exec``/``-execdir``/``-ok``."""
    starts: list[str] = []
    for arg in c.args:
        if arg.startswith(("-", "(", "!")) and arg != "-":
            break
        starts.append(arg)
    root = any(catastrophic(c.path(s)) for s in starts)
    args = c.args
    k = 0
    while k < len(args):
        arg = args[k]
        if arg == "-delete":
            c.hit("rm_root" if root else "find_delete")
        elif arg in ("-exec", "-execdir", "-ok", "-okdir"):
            end = k + 1
            while end < len(args) and args[end] not in (";", "+"):
                end += 1
            inner = args[k + 1 : end]
            if inner and inner[0].rsplit("/", 1)[-1] in ("rm", "shred", "unlink"):
                c.hit("rm_root" if root and inner[0].endswith("rm") else "find_delete")
            if inner:
                c.a.run_words(inner, c.depth + 1, c.stage)
            k = end
        k += 1


def _chmod(c: Call) -> None:
    """``chmod``: recursive changes of system trees, world-writable modes."""
    pos = c.positionals(frozenset({"--reference"}))
    recursive = c.has_flag("R", "--recursive")
    mode, targets = (pos[0], pos[1:]) if pos else ("", [])
    kinds = {catastrophic(c.path(t)) for t in targets}
    if recursive and ({"root", "system"} & kinds):
        c.hit("chmod_root")
    elif world_writable(mode) and (recursive or kinds - {None}):
        c.hit("chmod_777")


def _chown(c: Call) -> None:
    """``chown``/``chgrp -R``."""
    if not c.has_flag("R", "--recursive"):
        return
    pos = c.positionals()
    targets = pos if any(a.startswith("--reference") for a in c.args) else pos[1:]
    if any(catastrophic(c.path(t)) in ("root", "system") for t in targets):
        c.hit("chmod_root")
    else:
        c.hit("chown_recursive")


def _cd(c: Call) -> None:
    """Follow the working directory, so ``cd / && rm -rf *`` is judged like ``rm -rf /*``."""
    pos = c.positionals()
    target = pos[0] if pos else "~"
    if target == "-" or SUB in target or ("$" in target and not target.startswith("$HOME")):
        c.a.cwd = None
    else:
        c.a.cwd = c.path(target)


def _dd(c: Call) -> None:
    """``dd of=TARGET``."""
    for arg in c.args:
        if arg.startswith("of="):
            check_write(c.a, arg[3:], c.segment)


def _copy(c: Call) -> None:
    """``cp``/``mv``/``install``/``ln``/``rsync``: the destination is written."""
    pos = c.positionals(frozenset({"-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "-g"}))
    if len(pos) >= 2:
        check_write(c.a, pos[-1], c.segment)


def _writes(c: Call) -> None:
    """Programs whose file arguments are written (``truncate``)."""
    for target in c.positionals(frozenset({"-s", "--size", "-r", "--reference"})):
        check_write(c.a, target, c.segment)


def _tee(c: Call) -> None:
    """``tee`` writes its files and passes its input on."""
    c.stage.passthrough = True
    _writes(c)


def _sed(c: Call) -> None:
    """``sed -i`` rewrites its files."""
    if not c.has_flag("i", "--in-place"):
        return
    pos = c.positionals(frozenset({"-e", "--expression", "-f", "--file", "-l", "--line-length"}))
    explicit = any(a in ("-e", "--expression", "-f", "--file") or a.startswith(("--expression=", "--file="))
                   for a in c.args)
    for target in pos if explicit else pos[1:]:
        check_write(c.a, target, c.segment)


def _device_tool(c: Call) -> None:
    """``shred``/``wipefs``/``blkdiscard``/``sgdisk``/``mkswap`` on a device."""
    for target in c.positionals(frozenset({"-o", "--offset", "-l", "--length", "-n", "--iterations", "-s"})):
        if write_target(target) == "disk_write":
            c.hit("disk_write")


def _sql_client(c: Call) -> None:
    """SQL clients: statements in arguments; stdin is SQL."""
    c.stage.reads = "sql"
    for pid in sql_findings(" ".join(c.args)):
        c.hit(pid)


def _git(c: Call) -> None:
    """``git push --force``/``--delete``, ``reset --hard``, ``clean -f``."""
    args = c.args
    j = 0
    while j < len(args) and args[j].startswith("-"):
        j += 2 if args[j] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    if j >= len(args):
        return
    sub, rest = args[j], args[j + 1:]
    opts = [a for a in rest if a.startswith("-")]
    shorts = "".join(a[1:] for a in opts if not a.startswith("--"))
    if sub == "push":
        if "f" in shorts or any(a.startswith(("--force", "--mirror")) for a in opts) or any(
                a.startswith("+") for a in rest):
            c.hit("git_force_push")
        if "d" in shorts or "--delete" in opts or any(a.startswith(":") and len(a) > 1 for a in rest):
            c.hit("git_remote_delete")
    elif sub == "reset" and "--hard" in opts:
        c.hit("git_reset_hard")
    elif sub == "clean" and ("f" in shorts or "--force" in opts) and not ("n" in shorts or "--dry-run" in opts):
        c.hit("git_clean")


def _kill(c: Call) -> None:
    """``kill`` with pid ``-1``."""
    args = c.args
    j = 0
    if args and args[0].startswith("-") and args[0] != "--":
        j = 2 if args[0] in ("-s", "-n") else 1
    if "-1" in args[j:]:
        c.hit("kill_all")


def _systemctl(c: Call) -> None:
    """``systemctl`` power actions (floor) and stop/disable/mask/kill."""
    pos = c.positionals(frozenset({"-H", "--host", "-M", "--machine", "-t", "--type", "-s", "--signal"}))
    if pos and pos[0] in ("poweroff", "reboot", "halt", "kexec", "soft-reboot"):
        c.hit("shutdown")
    elif pos and pos[0] in ("stop", "disable", "mask", "kill"):
        c.hit("service_stop")


def _firewall(c: Call) -> None:
    """``iptables -F``, ``nft flush ruleset``, ``ufw disable``."""
    if c.name == "nft":
        if "flush" in c.args and "ruleset" in c.args:
            c.hit("firewall_flush")
    elif c.name == "ufw":
        if any(a in ("disable", "reset") for a in c.args):
            c.hit("firewall_flush")
    elif c.has_flag("F", "--flush"):
        c.hit("firewall_flush")


def _docker(c: Call) -> None:
    """``docker``/``podman ... prune``."""
    pos = c.positionals(frozenset({"-H", "--host", "-c", "--context", "--config", "-l", "--log-level"}))
    if (len(pos) >= 2 and pos[1] == "prune") or (pos[:1] == ["prune"]):
        c.hit("docker_prune")


_UNINSTALL = {"pip": ("uninstall",), "pipx": ("uninstall", "uninstall-all"), "conda": ("remove", "uninstall"),
              "npm": ("uninstall", "remove", "rm", "r", "un", "unlink"), "yarn": ("remove",),
              "pnpm": ("remove", "rm", "uninstall", "un"), "bun": ("remove", "rm"), "gem": ("uninstall",),
              "cargo": ("uninstall",), "apt": ("remove", "purge", "autoremove"),
              "yum": ("remove", "erase", "autoremove"), "zypper": ("remove", "rm"),
              "brew": ("uninstall", "remove", "rm"),
              "snap": ("remove",), "flatpak": ("uninstall",), "uv": ("remove",)}
_UNINSTALL_ALIASES = {"apt-get": "apt", "aptitude": "apt", "dnf": "yum", "mamba": "conda", "micromamba": "conda"}


def _packages(c: Call) -> None:
    """Package managers' uninstall/remove commands."""
    family = _UNINSTALL_ALIASES.get(c.name) or (
        "pip" if re.match(r"pip[0-9.]*$", c.name) else c.name)
    pos = c.positionals(frozenset({"-C", "--cwd", "--prefix", "-n", "--name", "-p", "--python"}))
    if family == "pacman":
        if any(a.startswith("-R") for a in c.args):
            c.hit("package_uninstall")
        return
    if (family == "uv" and pos[:2] == ["pip", "uninstall"]) or (pos and pos[0] in _UNINSTALL.get(family, ())):
        c.hit("package_uninstall")


def _simple(pattern_id: str) -> Callable[[Call], None]:
    """A rule that reports ``pattern_id`` whenever the program runs."""
    return lambda c: c.hit(pattern_id)


_RULES: dict[str, Callable[[Call], None]] = {
    "rm": _rm, "find": _find, "cd": _cd, "pushd": _cd, "chmod": _chmod, "chown": _chown, "chgrp": _chown, "dd": _dd,
    "cp": _copy, "mv": _copy, "install": _copy, "ln": _copy, "rsync": _copy, "tee": _tee, "sed": _sed,
    "truncate": _writes, "mkswap": _device_tool, "shred": _device_tool, "wipefs": _device_tool,
    "blkdiscard": _device_tool,
    "sgdisk": _device_tool, "git": _git, "kill": _kill, "killall": _simple("killall"),
    "killall5": _simple("killall"), "systemctl": _systemctl, "iptables": _firewall, "ip6tables": _firewall,
    "iptables-legacy": _firewall, "iptables-nft": _firewall, "nft": _firewall, "ufw": _firewall,
    "docker": _docker, "podman": _docker, "nerdctl": _docker, "pacman": _packages,
    "echo": execrules.echo_printf, "printf": execrules.echo_printf, "cat": execrules.cat,
    "base64": execrules.base64_decode, "eval": execrules.eval_source, "source": execrules.eval_source,
    ".": execrules.eval_source, "su": execrules.su, "runuser": execrules.su, "ssh": execrules.ssh,
    "watch": execrules.watch,
}


_INTERESTING = frozenset(
    set(WRAPPERS) | set(_RULES) | execrules.SHELLS | _SQL_CLIENTS | DOWNLOADERS | _SHUTDOWN | set(_UNINSTALL)
    | set(_UNINSTALL_ALIASES) | RESERVED
    | {"init", "telinit", "crontab", "service", "for", "case", "select", "function", "in", "esac", "done", "fi",
       "[[", "]]", "export", "declare", "local", "readonly", "typeset"}
)
_INTERESTING_PREFIXES = ("python", "pypy", "perl", "ruby", "node", "php", "lua", "mkfs", "mke2fs", "mkntfs",
                         "mkdosfs", "newfs", "pip")


def plain_name(word: str) -> bool:
    """True for a literal command name that no rule, wrapper or keyword is interested in (fast path)."""
    return (
        word not in _INTERESTING
        and "=" not in word
        and "/" not in word
        and SUB not in word
        and "$" not in word
        and not word.startswith(_INTERESTING_PREFIXES)
    )


def apply(c: Call) -> None:
    """Run the rule for ``c.name`` (if any) and note what the stage does with its input."""
    name = c.name
    c.stage.downloader = name in DOWNLOADERS
    if c.via_xargs and name in ("sh", "bash") and not c.args:
        return
    rule = _RULES.get(name)
    if rule is not None:
        rule(c)
    elif name in execrules.SHELLS:
        execrules.shell(c)
    elif execrules.INTERP.match(name):
        m = re.match(r"[a-z]+", name)
        family = m.group(0) if m else ""
        execrules.interpreter(c, "node" if family == "nodejs" else family)
    elif name in _SQL_CLIENTS:
        _sql_client(c)
    elif _MKFS.match(name):
        c.hit("mkfs")
    elif name in _SHUTDOWN or (name in ("init", "telinit") and c.args[:1] in (["0"], ["6"])):
        c.hit("shutdown")
    elif name == "crontab" and c.has_flag("r"):
        c.hit("crontab_remove")
    elif name == "service" and len(c.args) >= 2 and c.args[1] in ("stop",):
        c.hit("service_stop")
    elif name in _UNINSTALL or name in _UNINSTALL_ALIASES or re.match(r"pip[0-9.]*$", name):
        _packages(c)
