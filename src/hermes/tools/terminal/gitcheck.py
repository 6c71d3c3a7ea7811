"""Which ``git`` commands have known effects: the read-only ones, ``git add``, and listing forms.

:func:`git_reason` returns None for a git command that only reads the repository (``status``,
``log``, ``diff``, ``show``, ...), lists (``branch``, ``tag``, ``remote``, ``stash list``, ...) or
stages files (``add``), recording files it writes (``--output``); otherwise the reason it needs
approval. Global options that point git elsewhere or run programs (``-c``, ``--exec-path``,
``--git-dir``, ``-p``) make it unknown. ``git -C DIR`` moves git into DIR: its files written are
taken relative to it. Like every program, git reads its configuration: a repository whose
``.git/config`` names programs (``core.fsmonitor``, ``diff.external``, filters, hooks) runs them, so
:func:`repository_reason` reads the repository's configuration first, and writes into ``.git`` are
never proven (see :mod:`~hermes.tools.terminal.proof`). The person's own configuration
(``~/.gitconfig``, ``/etc/gitconfig``) is trusted as theirs.
"""

from __future__ import annotations

import os
import posixpath

from hermes.tools.terminal.known import Use, opt_is

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
            if sub == "grep" and arg.startswith("-") and not arg.startswith("--") and "O" in arg:
                return "`git grep -O` opens the matches in another program"
            if any(opt_is(arg, name) for name in _EXTERNAL):
                if opt_is(arg, "--output") and sub in ("diff", "log", "show", "diff-tree", "range-diff"):
                    value = arg.split("=", 1)[1] if "=" in arg else (rest[k + 1] if k + 1 < len(rest) else "")
                    if not value:
                        return "`git --output` without a file"
                    use.writes.append(posixpath.join(chdir, value) if chdir else value)
                    continue
                if opt_is(arg, "--textconv") or (arg.startswith("-O") and sub != "grep"):
                    continue  # textconv filters and orderfiles come from the repository's own configuration
                return f"`git {sub} {arg}` runs another program"
        return None
    if sub in ("branch", "tag") and _listing(rest):
        return None
    if sub == "remote" and (not rest or rest in (["-v"], ["--verbose"]) or rest[:1] == ["get-url"]):
        return None
    if sub == "stash" and rest[:1] in (["list"], ["show"]):
        return None
    if sub == "reflog" and not any(a in ("expire", "delete", "drop") for a in rest) and \
            (not rest or rest[0] in ("show", "-n") or rest[0].startswith("--")):
        return None
    if sub == "worktree" and rest[:1] == ["list"]:
        return None
    if sub == "submodule" and rest[:1] == ["status"]:
        return None
    if sub == "config" and rest and all(a in _CONFIG_READ or not a.startswith("-") for a in rest) and \
            any(a in _CONFIG_READ - {"--global", "--local", "--system"} for a in rest):
        return None
    if sub == "add" and not any(
            any(opt_is(a, n) for n in ("--interactive", "--patch", "--edit"))
            or (a.startswith("-") and not a.startswith("--") and any(c in a for c in "ipe")) for a in rest):
        return None
    return f"`git {sub}` is not a git command with known effects" if sub else "`git` alone"


def git_reason(use: Use, cwds: list[str] | None, cache: dict[str, str | None],
               workspace: str | None = None) -> str | None:
    """None when this git command has known effects (write targets are added to ``use.writes``);
    ``cwds``: the directories the shell may be in (None: not known). ``git add`` writes the index of
    its repository, so that repository's git directory must lie inside ``workspace``."""
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
    if why is None and sub != "version":
        if cwds is None:
            return "git runs with a working directory that is not known"
        starts = [posixpath.join(c, chdir) for c in cwds]
        why = repository_reason(starts, cache)
        if why is None and sub == "add":
            for start in starts:
                gitdir = _git_dir(start)
                real = os.path.realpath(gitdir) if gitdir else None
                if real and (workspace is None or not (real + "/").startswith(workspace.rstrip("/") + "/")):
                    return f"`git add` writes the index in {real[:80]}, outside the workspace"
    if why is None and sub == "add":
        use.writes.append(chdir or ".")  # it writes the index of the repository git finds there
    return why


# -- the repository's own configuration ---------------------------------------------------------------
_CORE_PROGRAMS = frozenset({"fsmonitor", "pager", "editor", "sshcommand", "hookspath", "askpass", "gitproxy",
                            "alternaterefscommand"})
_ANY_KEY = frozenset({"filter", "include", "includeif", "pager", "sequence", "interactive", "uploadpack",
                      "difftool", "mergetool", "protocol", "trace2", "credential", "gpg", "web", "browser", "man",
                      "sendemail", "instaweb"})
_SUBSECTION_KEYS = {"diff": frozenset({"external", "textconv", "command"}), "merge": frozenset({"driver"})}
_HOOKS_ON_READ = ("post-index-change",)


def _git_dir(start: str) -> str | None:
    """The git directory of the repository containing ``start`` (following ``.git`` files)."""
    d = start
    for _ in range(64):
        dot = posixpath.join(d, ".git")
        if os.path.isdir(dot):
            return dot
        if os.path.isfile(dot):
            try:
                with open(dot, encoding="utf-8", errors="replace") as fh:
                    head = fh.read(4096).strip()
            except OSError:
                return None
            if head.startswith("gitdir:"):
                return posixpath.normpath(posixpath.join(d, head[7:].strip()))
            return None
        parent = posixpath.dirname(d)
        if parent == d:
            return None
        d = parent
    return None


def _config_reason(path: str) -> str | None:
    try:
        # utf-8-sig: git skips a byte-order mark at the start, so the reading must too
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            text = fh.read(1_000_000)
    except OSError:
        return None
    section, sub = "", False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            head, _, line = line[1:].partition("]")  # a key may follow on the same line: [core] x = y
            head = head.strip()
            name, _, rest = head.replace('"', " ").partition(" ")
            section = name.split(".", 1)[0].lower()
            sub = bool(rest.strip()) or "." in name
            if section in _ANY_KEY:
                return f"the repository's configuration has a [{head}] section, which can name programs git runs"
            line = line.strip()
            if not line or line[0] in "#;":
                continue
        key = line.split("=", 1)[0].strip().lower()
        value = line.split("=", 1)[1].strip().strip('"').lower() if "=" in line else "true"
        if section == "core" and key in _CORE_PROGRAMS and not (key == "fsmonitor" and value in ("false", "0")):
            return f"the repository's configuration sets core.{key}, which names a program git runs"
        if section == "core" and key == "worktree":
            return "the repository's configuration moves its work tree (core.worktree)"
        keys = _SUBSECTION_KEYS.get(section)
        if keys and (key in keys and (sub or key == "external")):
            return f"the repository's configuration sets {section}...{key}, which names a program git runs"
    return None


def repository_reason(starts: list[str], cache: dict[str, str | None]) -> str | None:
    """Why the repositories git would use from ``starts`` may run programs of their own (None: they do not).

    Reads each repository's ``config`` (and ``config.worktree``, and the common directory's) and looks
    for keys that name programs (``core.fsmonitor``, ``core.pager``, ``diff.<driver>.textconv``,
    filters, ``include``, ...) and for hooks that read-only commands trigger (``post-index-change``)."""
    for start in starts:
        if start in cache:
            why = cache[start]
        else:
            why = None
            gitdir = _git_dir(start)
            if gitdir is not None:
                dirs = [gitdir]
                try:
                    with open(posixpath.join(gitdir, "commondir"), encoding="utf-8") as fh:
                        dirs.append(posixpath.normpath(posixpath.join(gitdir, fh.read().strip())))
                except OSError:
                    pass
                for d in dirs:
                    why = why or _config_reason(posixpath.join(d, "config")) or \
                        _config_reason(posixpath.join(d, "config.worktree"))
                    if why is None and any(os.path.exists(posixpath.join(d, "hooks", h)) for h in _HOOKS_ON_READ):
                        why = "the repository has a post-index-change hook, which git status and git add run"
            cache[start] = why
        if why:
            return why
    return None
