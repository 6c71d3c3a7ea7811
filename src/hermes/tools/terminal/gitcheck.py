"""Which ``git`` commands have known effects: the read-only ones, ``git add``, and listing forms.

:func:`git_reason` returns None for a git command that only reads the repository (``status``,
``log``, ``diff``, ``show``, ...), lists (``branch``, ``tag``, ``remote``, ``stash list``, ...) or
stages files (``add``), recording files it writes (``--output``); otherwise the reason it needs
approval. Global options that point git elsewhere or run programs (``-c``, ``--exec-path``,
``--git-dir``, ``-p``) make it unknown. ``git -C DIR`` moves git into DIR: its files written are
taken relative to it. Like every program, git reads its configuration: a repository whose
``.git/config`` names programs (``core.fsmonitor``, ``diff.external``, hooks) runs them; writes into
``.git`` are therefore never proven (see :mod:`~hermes.tools.terminal.proof`).
"""

from __future__ import annotations

import posixpath

from hermes.tools.terminal.known import Use

_READ = frozenset({
    "status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "cat-file", "blame", "annotate", "grep",
    "describe", "shortlog", "show-ref", "for-each-ref", "merge-base", "rev-list", "name-rev", "count-objects",
    "version", "whatchanged", "cherry", "diff-tree", "diff-files", "diff-index", "check-ignore", "check-attr",
    "var", "show-branch", "range-diff",
})
_LISTING_OPTIONS = frozenset({
    "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--list", "-l", "--show-current", "--merged",
    "--no-merged", "--contains", "--no-contains", "--sort", "--format", "--points-at", "--color", "--no-color",
    "--column", "--no-column", "-n", "--ignore-case", "-i",
})
_CONFIG_READ = frozenset({"--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin", "--show-scope",
                          "--global", "--local", "--system", "--name-only", "-z", "--null", "--type", "--bool",
                          "--int", "--path", "--default", "--includes", "--no-includes", "get", "list"})
_GLOBAL_WITH_ARG = frozenset({"-C"})
_GLOBAL_PLAIN = frozenset({"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--no-replace-objects",
                           "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs"})
_EXTERNAL = ("--ext-diff", "--output", "--textconv", "--open-files-in-pager", "-O")


def _listing(rest: list[str]) -> bool:
    """Only listing options and, after ``--list``/``-l``, patterns."""
    patterns_ok = any(a in ("--list", "-l") for a in rest)
    for arg in rest:
        if arg.startswith("-"):
            if arg.split("=", 1)[0] not in _LISTING_OPTIONS:
                return False
        elif not patterns_ok:
            return False
    return True


def _sub_reason(sub: str, rest: list[str], use: Use, chdir: str) -> str | None:
    if sub in _READ:
        for k, arg in enumerate(rest):
            if arg == "--":
                break
            if arg.startswith(_EXTERNAL):
                if arg.startswith("--output") and sub in ("diff", "log", "show", "diff-tree", "range-diff"):
                    value = arg.split("=", 1)[1] if "=" in arg else (rest[k + 1] if k + 1 < len(rest) else "")
                    if not value:
                        return "`git --output` without a file"
                    use.writes.append(posixpath.join(chdir, value) if chdir else value)
                    continue
                if arg.startswith("--textconv") or (arg.startswith("-O") and sub != "grep"):
                    continue  # textconv filters and orderfiles come from the repository's own configuration
                return f"`git {sub} {arg}` runs another program"
        return None
    if sub in ("branch", "tag") and _listing(rest):
        return None
    if sub == "remote" and (not rest or rest in (["-v"], ["--verbose"]) or rest[:1] == ["get-url"]):
        return None
    if sub == "stash" and rest[:1] in (["list"], ["show"]):
        return None
    if sub == "reflog" and (not rest or rest[0] in ("show", "-n") or rest[0].startswith("--")):
        return None
    if sub == "worktree" and rest[:1] == ["list"]:
        return None
    if sub == "submodule" and rest[:1] == ["status"]:
        return None
    if sub == "config" and rest and all(a in _CONFIG_READ or not a.startswith("-") for a in rest) and \
            any(a in _CONFIG_READ - {"--global", "--local", "--system"} for a in rest):
        return None
    if sub == "add" and not any(a in ("-i", "--interactive", "-p", "--patch", "-e", "--edit") for a in rest):
        return None
    return f"`git {sub}` is not a git command with known effects" if sub else "`git` alone"


def git_reason(use: Use) -> str | None:
    """None when this git command has known effects (write targets are added to ``use.writes``)."""
    args = use.args
    chdir = ""
    k = 0
    while k < len(args) and args[k].startswith("-"):
        arg = args[k]
        if arg in _GLOBAL_WITH_ARG and k + 1 < len(args):
            chdir = posixpath.join(chdir, args[k + 1]) if chdir else args[k + 1]
            k += 2
            continue
        if arg in ("--version", "--help"):
            return None
        if arg not in _GLOBAL_PLAIN:
            return f"`git {arg}` changes what git runs or where it works"
        k += 1
    if k >= len(args):
        return "`git` alone"
    sub, rest = args[k], args[k + 1:]
    why = _sub_reason(sub, rest, use, chdir)
    if why is None and sub == "add":
        use.writes.append(chdir or ".")  # it writes the index of the repository git finds there
    return why
