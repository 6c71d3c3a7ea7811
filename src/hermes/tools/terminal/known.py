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
    "false", ":", "test", "[", "[[", "]]", "basename", "dirname", "realpath", "readlink", "stat", "du",
    "df", "free", "uptime", "uname", "id", "whoami", "groups", "nproc", "lscpu", "lsblk", "printenv", "locale",
    "tty", "cal", "sleep", "seq", "expr", "cut", "tr", "nl", "rev", "tac", "paste", "column", "fold", "fmt",
    "expand", "unexpand", "comm", "join", "diff", "cmp", "md5sum", "sha1sum", "sha224sum", "sha256sum",
    "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "base64", "base32", "basenc", "od", "hexdump", "strings",
    "jq", "which", "whereis", "type", "getconf", "ps", "pgrep", "pstree",
    "arch", "logname", "users", "who", "w", "last", "numfmt", "factor", "yes", "tsort", "pr",
    "look", "wait", "jobs", "exit", "return", "break", "continue", "pathchk",
})

#: toolchains that run code; only their version and help output is known
VERSION_ONLY = frozenset({
    "python", "python3", "python2", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "go", "gcc", "g++", "cc",
    "clang", "clang++", "make", "cmake", "ninja", "java", "javac",
    "ruby", "gem", "perl", "php", "lua", "dotnet", "mypy", "black", "ruff", "uv", "poetry", "pipenv", "tox",
    "nox", "pip", "pip3", "docker", "kubectl", "helm", "terraform", "tsc", "eslint", "prettier", "git", "rg",
    "fd", "sqlite3", "psql", "gh", "conda", "mamba", "swift", "zig", "ghc", "stack", "cabal", "erl", "R",
    "julia",
})
_VERSION_FLAGS = frozenset({"--version", "-V", "--help"})
#: toolchains with a ``version`` subcommand (for the others ``version`` would name a script to run)
_VERSION_WORD = frozenset({"go", "docker", "kubectl", "helm", "terraform", "gh"})

Reason = str | None


class Use:
    """One call of an allowlisted program: its arguments and the files it will write."""

    __slots__ = ("args", "copies", "globbed", "name", "writes")

    def __init__(self, name: str, args: list[str], globbed: set[int]) -> None:
        self.name = name
        self.args = args
        self.globbed = globbed  # indexes into args of words that are globs
        self.writes: list[str] = []
        #: destinations of copies and moves: what is written there may be a link copied from elsewhere
        self.copies: list[str] = []

    def parse(self, short_values: str = "", long_values: frozenset[str] = frozenset(), short_optional: str = ""
              ) -> tuple[list[tuple[str, str]], list[str]]:
        """getopt-style reading: ``(option, value)`` pairs (value "" when none) and the operands.

        Short options may be clustered (``-uo FILE``: ``-u``, then ``-o FILE``); a short option in
        ``short_values`` takes the rest of its cluster or the next word, one in ``short_optional`` only
        the rest of its cluster (``sed -i.bak``). A long option takes
        ``=value``, or the next word when it (or the option it abbreviates) is in ``long_values``."""
        opts: list[tuple[str, str]] = []
        operands: list[str] = []
        args = self.args
        k = 0
        while k < len(args):
            arg = args[k]
            k += 1
            if arg == "--":
                operands += args[k:]
                break
            if not arg.startswith("-") or arg == "-":
                operands.append(arg)
            elif arg.startswith("--"):
                name, eq, value = arg.partition("=")
                if not eq and any(opt_is(name, lv) for lv in long_values) and k < len(args):
                    value, k = args[k], k + 1
                opts.append((name, value))
            else:
                for j in range(1, len(arg)):
                    letter = arg[j]
                    if letter in short_values or letter in short_optional:
                        value = arg[j + 1:]
                        if not value and k < len(args) and letter in short_values:
                            value, k = args[k], k + 1
                        opts.append(("-" + letter, value))
                        break
                    opts.append(("-" + letter, ""))
        return opts, operands

    def options(self) -> list[str]:
        out: list[str] = []
        for arg in self.args:
            if arg == "--":
                break
            if arg.startswith("-") and arg != "-":
                out.append(arg)
        return out


def opt_is(given: str, name: str) -> bool:
    """Whether the option word ``given`` is ``name``, an abbreviation of it (getopt takes unambiguous
    prefixes of long options: ``--out`` for ``--output``), or ``name`` with a value attached."""
    head = given.split("=", 1)[0]
    if head == name or given.startswith(name):
        return True
    return name.startswith("--") and head.startswith("--") and len(head) > 3 and name.startswith(head)


def _starts(use: Use, *names: str) -> str | None:
    """The first option (before ``--``) that is one of ``names`` (or abbreviates or extends it)."""
    for opt in use.options():
        if any(opt_is(opt, n) for n in names):
            return opt
    return None


def _short_in_cluster(use: Use, letters: str) -> str | None:
    """The first short-option cluster (``-abc``) holding one of ``letters``."""
    for opt in use.options():
        if not opt.startswith("--") and any(c in opt[1:] for c in letters):
            return opt
    return None


# -- programs that write their arguments -------------------------------------------------------------
def _writes_operands(short_values: str, long_values: frozenset[str]) -> Callable[[Use], Reason]:
    def spec(use: Use) -> Reason:
        use.writes += [p for p in use.parse(short_values, long_values)[1] if p != "-" or use.name != "tee"]
        return None
    return spec


def _cp_mv(use: Use) -> Reason:
    opts, operands = use.parse("tS", frozenset({"--target-directory", "--suffix"}))
    for opt, _ in opts:
        if opt in ("-s", "-l", "-b") or any(opt_is(opt, n) for n in ("--symbolic-link", "--link", "--backup")):
            return f"`{use.name} {opt}` makes links or backups whose targets are not checked"
    targets = [v for o, v in opts if o == "-t" or opt_is(o, "--target-directory")]
    if use.name == "mv":
        use.writes += operands + targets  # the sources are removed too
    elif targets:
        use.writes += targets
    elif len(operands) >= 2:
        use.writes.append(operands[-1])
    use.copies += targets if targets else operands[-1:]
    return None


def _sort(use: Use) -> Reason:
    opts, _ = use.parse("kotST", frozenset({"--key", "--output", "--field-separator", "--buffer-size",
                                            "--temporary-directory", "--compress-program", "--files0-from",
                                            "--random-source", "--parallel", "--batch-size"}))
    for opt, value in opts:
        if opt_is(opt, "--compress-program"):
            return "`sort --compress-program` runs another program"
        if opt in ("-o", "-T") or opt_is(opt, "--output") or opt_is(opt, "--temporary-directory"):
            use.writes.append(value)
    return None


def _uniq(use: Use) -> Reason:
    _, operands = use.parse("fsw", frozenset({"--skip-fields", "--skip-chars", "--check-chars"}))
    use.writes += operands[1:2]
    return None


def _shuf(use: Use) -> Reason:
    opts, _ = use.parse("ino", frozenset({"--input-range", "--head-count", "--output", "--random-source"}))
    use.writes += [v for o, v in opts if o == "-o" or opt_is(o, "--output")]
    return None


def _tree(use: Use) -> Reason:
    opts, _ = use.parse("LPIoHT", frozenset())
    for opt, value in opts:
        if opt == "-R":
            return "`tree -R` writes a listing into every directory it visits"
        if opt == "-o":
            use.writes.append(value)
    return None


def _file(use: Use) -> Reason:
    opts, _ = use.parse("mfFeP", frozenset({"--magic-file", "--files-from", "--separator", "--exclude",
                                            "--parameter"}))
    if any(o == "-C" or opt_is(o, "--compile") for o, _ in opts):
        return "`file -C` writes a compiled magic file"
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
    opts, operands = use.parse("efl", frozenset({"--expression", "--file", "--line-length"}), "i")
    scripts: list[str] = []
    in_place = False
    for opt, value in opts:
        if opt == "-f" or opt_is(opt, "--file"):
            return "`sed -f` runs a script from a file"
        if opt == "-e" or opt_is(opt, "--expression"):
            scripts.append(value)
        elif opt == "-i" or opt_is(opt, "--in-place"):
            in_place = True
    if not scripts:
        if not operands:
            return None
        scripts, operands = [operands[0]], operands[1:]
    for script in scripts:
        why = sed_reason(script)
        if why:
            return why
    if in_place:
        use.writes += operands
    return None


def _awk(use: Use) -> Reason:
    opts, operands = use.parse("FvfeilEW", frozenset({"--field-separator", "--assign", "--file", "--source",
                                                      "--include", "--load", "--exec"}))
    programs: list[str] = []
    for opt, value in opts:
        if opt in ("-f", "-i", "-l", "-E", "-W") or any(opt_is(opt, n) for n in ("--file", "--include", "--load",
                                                                                  "--exec")):
            return f"`{use.name} {opt}` loads a program file or extension: its code is not inspected"
        if opt == "-e" or opt_is(opt, "--source"):
            programs.append(value)
    if not programs and operands:
        programs.append(operands[0])
    for program in programs:
        why = awk_reason(program, use.name)
        if why:
            return why
    return None


def _printf(use: Use) -> Reason:
    if use.args[:1] and use.args[0].startswith("-v"):
        return "`printf -v` sets a shell variable"
    return None


def _date(use: Use) -> Reason:
    opts, operands = use.parse("dfrs", frozenset({"--date", "--file", "--reference", "--set"}), "I")
    if any(o == "-s" or opt_is(o, "--set") for o, _ in opts) or any(not p.startswith("+") for p in operands):
        return "`date` given a time to set"
    return None


def _hostname(use: Use) -> Reason:
    opts, operands = use.parse("F", frozenset({"--file"}))
    if operands or any(o in ("-F", "-b") or opt_is(o, "--file") or opt_is(o, "--boot") for o, _ in opts):
        return "`hostname` given a name to set"
    return None


_SET_NAMES = frozenset({"errexit", "nounset", "pipefail", "xtrace", "verbose", "noclobber", "noglob", "posix",
                        "errtrace", "notify", "ignoreeof", "monitor", "vi", "emacs"})


def _set(use: Use) -> Reason:
    args = use.args
    k = 0
    while k < len(args):
        arg = args[k]
        letters = arg[1:]
        if arg[:1] not in ("-", "+") or not letters.isalpha() or "k" in letters or "o" in letters[:-1]:
            return f"`set {arg}` changes how later words are read"
        if letters.endswith("o"):  # -o NAME, or a cluster ending in it: -euo pipefail
            if k + 1 >= len(args) or args[k + 1] not in _SET_NAMES:
                return f"`set {arg}` changes how later words are read"
            k += 1
        k += 1
    return None


def _rg(use: Use) -> Reason:
    opt = _starts(use, "--pre")
    return f"`rg {opt}` runs another program on each file" if opt else None


def _command(use: Use) -> Reason:
    if use.args[:1] in (["-v"], ["-V"]):
        return None
    return "`command` runs another program"


_PIP_READ = frozenset({"list", "show", "freeze", "check", "inspect", "index"})


def _pip(use: Use) -> Reason:
    bad = _starts(use, "--log", "--log-file", "--python", "--cache-dir", "--exists-action", "--src", "--target",
                  "--prefix", "--root", "--report")
    if bad:
        return f"`{use.name} {bad}` has effects that are not known"
    sub = next((a for a in use.args if not a.startswith("-")), "")
    if sub in _PIP_READ:
        return None
    return f"`{use.name} {sub}` installs, removes or builds packages" if sub else f"`{use.name}` form not known"


_DOCKER_READ = frozenset({"ps", "images", "version", "info", "inspect", "logs", "top", "stats", "port",
                          "history", "diff"})


def _docker(use: Use) -> Reason:
    sub = use.args[0] if use.args else ""
    if sub in _DOCKER_READ and (sub != "stats" or "--no-stream" in use.args):
        return None
    return f"`{use.name} {sub}` is not a {use.name} command with known effects"


def _go(use: Use) -> Reason:
    if use.args[:1] == ["version"] or (use.args[:1] == ["env"] and not _starts(use, "-w", "-u")):
        return None
    return f"`go {' '.join(use.args[:1])}` builds or runs code"


SPECS: dict[str, Callable[[Use], Reason]] = {
    "touch": _writes_operands("dtr", frozenset({"--date", "--reference", "--time"})),
    "mkdir": _writes_operands("mZ", frozenset({"--mode"})),
    "tee": _writes_operands("", frozenset()),
    "cp": _cp_mv, "mv": _cp_mv, "sort": _sort, "uniq": _uniq, "shuf": _shuf, "tree": _tree, "file": _file,
    "find": _find, "sed": _sed, "gsed": _sed, "awk": _awk, "gawk": _awk, "mawk": _awk, "nawk": _awk,
    "printf": _printf, "date": _date, "hostname": _hostname, "set": _set, "rg": _rg, "command": _command,
    "pip": _pip, "pip3": _pip, "docker": _docker, "podman": _docker, "go": _go,
}


def version_query(name: str, args: list[str]) -> bool:
    """``PROG --version`` / ``PROG -V`` / ``PROG --help`` of a known toolchain."""
    return name in VERSION_ONLY and len(args) == 1 and (
        args[0] in _VERSION_FLAGS or (args[0] == "version" and name in _VERSION_WORD))


def known(name: str) -> bool:
    """Whether ``name`` is on the allowlist in some form (the git rules live in :mod:`.gitcheck`)."""
    return name in INERT or name in SPECS or name in VERSION_ONLY or name == "git"
