"""The allowlist of the safety proof: programs whose effects are known, and what each form writes.

A program is on the allowlist when, for the forms accepted here, everything it does is one of: read
files, print to stdout/stderr, or write the files it is given as arguments (those write targets are
collected in :attr:`Use.writes`; :mod:`~hermes.tools.terminal.proof` then checks that they lie inside
the workspace). Anything else — running other programs, evaluating code, changing the system, or an
option whose effect is not listed here — makes a spec answer with a reason, and the command needs
approval. docs/tools/terminal.md lists the programs and the forms.

* :data:`INERT` — programs with no option that writes or runs anything (``cat``, ``grep``, ``wc``,
  ...): any arguments, globs and ``xargs`` input are fine.
* :data:`SPECS` — programs with some forms that are fine and some that are not; each spec returns None
  (fine, possibly after recording write targets) or the reason it is not.
* :data:`VERSION_ONLY` — toolchains that run code (``python``, ``node``, ``cargo``, ...): only
  ``--version``/``-V``/``--help`` are known.
"""

from __future__ import annotations

from collections.abc import Callable

from hermes.tools.terminal.scriptcheck import awk_reason, sed_reason

#: programs whose every option only reads and prints
INERT = frozenset({
    "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "zgrep", "ls", "dir", "vdir", "echo", "pwd", "true",
    "false", ":", "test", "[", "[[", "]]", "basename", "dirname", "realpath", "readlink", "file", "stat", "du",
    "df", "free", "uptime", "uname", "id", "whoami", "groups", "nproc", "lscpu", "lsblk", "printenv", "locale",
    "tty", "cal", "sleep", "seq", "expr", "cut", "tr", "nl", "rev", "tac", "paste", "column", "fold", "fmt",
    "expand", "unexpand", "comm", "join", "diff", "cmp", "md5sum", "sha1sum", "sha224sum", "sha256sum",
    "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "base64", "base32", "basenc", "od", "hexdump", "strings",
    "jq", "which", "whereis", "type", "nm", "readelf", "objdump", "size", "getconf", "ps", "pgrep", "pstree",
    "arch", "logname", "users", "who", "w", "last", "numfmt", "factor", "shuf", "yes", "tsort", "ptx", "pr",
    "look", "wait", "jobs", "exit", "return", "break", "continue", "pathchk",
})

#: toolchains that run code; only their version and help output is known
VERSION_ONLY = frozenset({
    "python", "python3", "python2", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "npm", "npx", "cargo",
    "rustc", "rustup", "go", "gcc", "g++", "cc", "clang", "clang++", "make", "cmake", "ninja", "java", "javac",
    "ruby", "gem", "perl", "php", "lua", "dotnet", "mypy", "black", "ruff", "uv", "poetry", "pipenv", "tox",
    "nox", "pip", "pip3", "docker", "kubectl", "helm", "terraform", "tsc", "eslint", "prettier", "git", "rg",
    "fd", "sqlite3", "psql", "gh", "conda", "mamba", "swift", "zig", "ghc", "stack", "cabal", "erl", "R",
    "julia",
})
_VERSION_FLAGS = frozenset({"--version", "-V", "--help"})
#: toolchains with a ``version`` subcommand (for the others ``version`` would name a script to run)
_VERSION_WORD = frozenset({"go", "docker", "kubectl", "helm", "terraform", "cargo", "gh", "rustup"})

Reason = str | None


class Use:
    """One call of an allowlisted program: its arguments and the files it will write."""

    __slots__ = ("args", "globbed", "name", "writes")

    def __init__(self, name: str, args: list[str], globbed: set[int]) -> None:
        self.name = name
        self.args = args
        self.globbed = globbed  # indexes into args of words that are globs
        self.writes: list[str] = []

    def positionals(self, with_arg: frozenset[str] = frozenset()) -> list[str]:
        """Arguments that are not options or option values (``--`` ends the options)."""
        out: list[str] = []
        skip = ended = False
        for arg in self.args:
            if skip:
                skip = False
            elif ended or not arg.startswith("-") or arg == "-":
                out.append(arg)
            elif arg == "--":
                ended = True
            elif arg in with_arg:
                skip = True
        return out

    def option_values(self, short: str, long: str) -> list[str]:
        """Values of ``-X VALUE``, ``-XVALUE``, ``--long VALUE`` and ``--long=VALUE``."""
        out: list[str] = []
        args = self.args
        for k, arg in enumerate(args):
            if arg == "--":
                break
            if arg in (short, long) and k + 1 < len(args):
                out.append(args[k + 1])
            elif long and arg.startswith(long + "="):
                out.append(arg[len(long) + 1:])
            elif short and arg.startswith(short) and len(arg) > len(short) and not arg.startswith("--"):
                out.append(arg[len(short):])
        return out

    def options(self) -> list[str]:
        out: list[str] = []
        for arg in self.args:
            if arg == "--":
                break
            if arg.startswith("-") and arg != "-":
                out.append(arg)
        return out


def _starts(use: Use, *prefixes: str) -> str | None:
    """The first option (before ``--``) that starts with one of ``prefixes``."""
    for opt in use.options():
        if opt.startswith(prefixes):
            return opt
    return None


# -- programs that write their arguments -------------------------------------------------------------
def _touch(use: Use) -> Reason:
    use.writes += use.positionals(frozenset({"-d", "-t", "-r", "--date", "--reference"}))
    return None


def _mkdir(use: Use) -> Reason:
    use.writes += use.positionals(frozenset({"-m", "--mode", "--context"}))
    return None


def _tee(use: Use) -> Reason:
    use.writes += [p for p in use.positionals(frozenset({"--output-error"})) if p != "-"]
    return None


def _cp_mv(use: Use) -> Reason:
    bad = _starts(use, "-s", "--symbolic-link", "-l", "--link", "--backup", "-b", "-S", "--suffix")
    if bad:
        return f"`{use.name} {bad}` makes links or backups whose targets are not checked"
    for arg in use.options():  # a short-option cluster such as -rs
        if not arg.startswith("--") and ("s" in arg or "l" in arg or "b" in arg):
            return f"`{use.name} {arg}` makes links or backups whose targets are not checked"
    targets = use.option_values("-t", "--target-directory")
    pos = use.positionals(frozenset({"-t", "--target-directory"}))
    if use.name == "mv":
        use.writes += pos + targets  # the sources are removed too
    elif targets:
        use.writes += targets
    elif len(pos) >= 2:
        use.writes.append(pos[-1])
    return None


def _sort(use: Use) -> Reason:
    if _starts(use, "--compress-program"):
        return "`sort --compress-program` runs another program"
    use.writes += use.option_values("-o", "--output")
    return None


def _uniq(use: Use) -> Reason:
    pos = use.positionals(frozenset({"-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"}))
    use.writes += pos[1:2]
    return None


def _tree(use: Use) -> Reason:
    use.writes += use.option_values("-o", "")
    return None


def _find(use: Use) -> Reason:
    for k, arg in enumerate(use.args):
        if arg in ("-exec", "-execdir", "-ok", "-okdir"):
            return f"`find {arg}` runs another program"
        if arg == "-delete":
            return "`find -delete` deletes what it matches"
        if arg in ("-fprint", "-fprint0", "-fls", "-fprintf"):
            if k + 1 >= len(use.args):
                return f"`find {arg}` without a file"
            use.writes.append(use.args[k + 1])
    return None


def _sed(use: Use) -> Reason:
    scripts = use.option_values("-e", "--expression")
    if use.option_values("-f", "--file"):
        return "`sed -f` runs a script from a file"
    with_arg = frozenset({"-e", "--expression", "-l", "--line-length"})
    pos = use.positionals(with_arg)
    if not scripts:
        if not pos:
            return None
        scripts, pos = [pos[0]], pos[1:]
    for script in scripts:
        why = sed_reason(script)
        if why:
            return why
    if any(o == "-i" or o.startswith(("-i", "--in-place")) or (not o.startswith("--") and "i" in o[1:])
           for o in use.options() if o not in ("-e", "-l")):
        use.writes += pos
    return None


def _awk(use: Use) -> Reason:
    if _starts(use, "-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec"):
        return f"`{use.name}` given a program file or extension: its code is not inspected"
    pos = use.positionals(frozenset({"-F", "-v", "--field-separator", "--assign"}))
    if not pos:
        return None
    return awk_reason(pos[0], use.name)


def _printf(use: Use) -> Reason:
    if use.args[:1] and use.args[0].startswith("-v"):
        return "`printf -v` sets a shell variable"
    return None


def _date(use: Use) -> Reason:
    if _starts(use, "-s", "--set") or any(not p.startswith("+") for p in use.positionals(frozenset({"-d", "-f",
                                                                                                    "-r"}))):
        return "`date` given a time to set"
    return None


def _hostname(use: Use) -> Reason:
    if use.positionals() or _starts(use, "-F", "--file", "-b", "--boot"):
        return "`hostname` given a name to set"
    return None


def _set(use: Use) -> Reason:
    if all(a.startswith(("-", "+")) and a != "--" for a in use.args):
        return None
    return "`set` with arguments changes the positional parameters"


def _rg(use: Use) -> Reason:
    opt = _starts(use, "--pre")
    return f"`rg {opt}` runs another program on each file" if opt else None


def _command(use: Use) -> Reason:
    if use.args[:1] in (["-v"], ["-V"]):
        return None
    return "`command` runs another program"


_PIP_READ = frozenset({"list", "show", "freeze", "check", "help", "--version", "-V", "inspect", "index"})


def _pip(use: Use) -> Reason:
    bad = _starts(use, "--log", "--python", "--cache-dir", "--exists-action", "--src", "--target", "--prefix")
    if bad:
        return f"`{use.name} {bad}` has effects that are not known"
    sub = next((a for a in use.args if not a.startswith("-")), "")
    if sub in _PIP_READ or (not sub and use.args and all(a in ("--version", "-V", "--help", "-h") for a in use.args)):
        return None
    return f"`{use.name} {sub}` installs, removes or builds packages" if sub else f"`{use.name}` form not known"


_NPM_READ = frozenset({"ls", "list", "ll", "la", "view", "info", "outdated", "--version", "-v", "help", "root",
                       "prefix", "bin", "search", "explain", "why", "fund", "doctor"})


def _npm(use: Use) -> Reason:
    sub = use.args[0] if use.args else ""
    if sub in _NPM_READ or (sub == "config" and use.args[1:2] in (["list"], ["ls"], ["get"])):
        return None
    return f"`{use.name} {sub}` runs package scripts or changes packages" if sub else f"`{use.name}` alone"


_DOCKER_READ = frozenset({"ps", "images", "version", "info", "inspect", "logs", "top", "stats", "port",
                          "history", "diff"})


def _docker(use: Use) -> Reason:
    sub = use.args[0] if use.args else ""
    if sub in _DOCKER_READ and (sub != "stats" or "--no-stream" in use.args):
        return None
    return f"`{use.name} {sub}` is not a {use.name} command with known effects"


def _go(use: Use) -> Reason:
    if use.args[:1] == ["version"] or (use.args[:1] == ["env"] and "-w" not in use.args and "-u" not in use.args):
        return None
    return f"`go {' '.join(use.args[:1])}` builds or runs code"


def _ruff(use: Use) -> Reason:
    sub = use.args[0] if use.args else ""
    fixes = _starts(use, "--fix", "--unsafe-fixes", "--add-noqa")
    if sub == "check" and (fixes is None or (fixes == "--fix" and "--diff" in use.args)):
        use.writes += use.positionals(frozenset({"--config", "--select", "--ignore", "--extend-select",
                                                 "--output-format", "--target-version", "--line-length"}))[1:] \
            or ["."]  # the configuration may turn fixing on: the checked files may be rewritten
        return None
    if sub == "format" and ("--check" in use.args or "--diff" in use.args):
        return None
    return f"`ruff {sub}` rewrites files (not checked)" if sub else "`ruff` form not known"


SPECS: dict[str, Callable[[Use], Reason]] = {
    "touch": _touch, "mkdir": _mkdir, "tee": _tee, "cp": _cp_mv, "mv": _cp_mv, "sort": _sort, "uniq": _uniq,
    "tree": _tree, "find": _find, "sed": _sed, "gsed": _sed, "awk": _awk, "gawk": _awk, "mawk": _awk,
    "nawk": _awk, "printf": _printf, "date": _date, "hostname": _hostname, "set": _set, "rg": _rg,
    "command": _command, "pip": _pip, "pip3": _pip, "npm": _npm, "docker": _docker,
    "podman": _docker, "go": _go, "ruff": _ruff,
}


def version_query(name: str, args: list[str]) -> bool:
    """``PROG --version`` / ``PROG -V`` / ``PROG --help`` of a known toolchain."""
    return name in VERSION_ONLY and len(args) == 1 and (
        args[0] in _VERSION_FLAGS or (args[0] == "version" and name in _VERSION_WORD))


def known(name: str) -> bool:
    """Whether ``name`` is on the allowlist in some form (the git rules live in :mod:`.gitcheck`)."""
    return name in INERT or name in SPECS or name in VERSION_ONLY or name == "git"
