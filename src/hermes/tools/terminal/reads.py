"""What a command line reads that the proof must not call safe: secret files and network devices.

The safety proof (:mod:`~hermes.tools.terminal.proof`) accepts programs that "only read files and
print". Outside a sandbox that still lets ``cat ~/.ssh/id_rsa`` hand a private key to the model, and
bash's ``/dev/tcp``/``/dev/udp`` redirections open network connections. :class:`ReadCheck` looks at
every word a proven program is given (option values after ``=`` included) and at every input
redirection, from every directory the shell may be in, following the symbolic links that exist now:

* a word naming a secret — what the file tools refuse to read (:func:`~hermes.tools.sensitive.sensitive_by_name`:
  SSH key material of any user, credential stores, hermes's ``.env``/``auth.json``, ``/etc/shadow``),
  anything inside a credential folder (``~/.ssh``, ``~/.gnupg``, ``~/.aws``, …), or a hard link to one
  of those files — is not proven;
* a word that *contains* secrets — a home folder or a folder above one, or above a credential store
  or hermes's secrets — is not proven when the program reads folders recursively (``grep -r``, ``cp
  -a``, ``tar``, ``rg``, …) or the word is a glob there (``cat ~/.s*/*``);
* ``/dev/tcp/…`` and ``/dev/udp/…`` anywhere (redirection or argument) are not proven: network access;
* ``~user/…`` (another user's home, not expanded here) is not proven, nor are a process's own files
  under ``/proc`` (``environ``, ``mem``, ``fd/``: hermes's environment holds its keys), nor a program
  behind ``xargs`` that opens its arguments (the names come from its input).

Inside the OS sandbox those files are hidden and the network is off anyway; this is for the commands
that run outside it. The words of programs that print their arguments (``echo``, ``printf``) and of
``cd`` are not paths read and are skipped.
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

from hermes.config.paths import HermesPaths
from hermes.tools.sensitive import Identities, credential_store, hidden_from_commands, sensitive_by_name
from hermes.tools.terminal.places import real_or_none

__all__ = ["MAX_READ_CHECKS", "ReadCheck"]

#: words one proof resolves at most; past that the command is not proven
MAX_READ_CHECKS = 2000
_NETWORK = ("/dev/tcp/", "/dev/udp/")
_GLOB = frozenset("*?[")
#: files of a process that hold what it holds: its environment, memory, open files, auxiliary vector
_PROCESS_FILE = re.compile(
    r"/proc/(?:[^/]+/)?(?:task/[^/]+/)?(?:environ|mem|fd(?:/|$)|fdinfo|auxv|map_files)|/proc/kcore$")
#: programs whose words are printed or compared, never opened
_NOT_READING = frozenset({"echo", "printf", "true", "false", ":", "cd", "pushd", "popd", "dirs", "seq", "expr",
                          "factor", "yes", "sleep", "basename", "dirname", "numfmt", "cal", "which", "type",
                          "whereis", "exit", "return", "break", "continue", "wait", "jobs", "test", "[", "[["})
#: programs that read whole folder trees without a recursion option
_RECURSIVE = frozenset({"tar", "zip", "7z", "cpio", "rg", "ag", "ack", "rsync"})
_RECURSIVE_LONG = frozenset({"--recursive", "--dereference-recursive", "--archive"})


class ReadCheck:
    """The read side of one proof; ``cwds()`` gives the directories the shell may be in (None: unknown)."""

    def __init__(self, home: str) -> None:
        self.home = home
        self.checked: dict[tuple[str, bool], str | None] = {}
        self._roots: list[str] | None = None
        self._identities: Identities | None = None

    # -- what holds secrets ---------------------------------------------------------------------------
    def roots(self) -> list[str]:
        """Resolved paths of the secret locations of this machine's current user and of hermes."""
        if self._roots is None:
            folders, files = hidden_from_commands()
            hermes = HermesPaths.current()
            found = [*folders, *files, *(Path(p) for p in hermes.protected_files())]
            self._roots = list(dict.fromkeys(os.path.realpath(p) for p in found))
        return self._roots

    def holds_secrets(self, real: str) -> str | None:
        """The secret location that folder ``real`` contains, or None."""
        if real == "/" or real in ("/home", "/root") or posixpath.dirname(real) == "/home" or real == self.home:
            return "home folders"
        prefix = real.rstrip("/") + "/"
        for root in self.roots():
            if root.startswith(prefix):
                return root
        return None

    def secret(self, real: str) -> str | None:
        if _PROCESS_FILE.match(real):
            return "another process's environment, memory or open files (hermes's keys among them)"
        path = Path(real)
        why = sensitive_by_name(path)
        if why is None and credential_store(path) is not None:
            why = "it lies in a credential store"
        if why is None:
            if self._identities is None:
                self._identities = Identities()
            why = self._identities.read_refusal(path)
        return why

    # -- one command ------------------------------------------------------------------------------------
    def reason(self, words: list[str], inputs: list[str], cwds: list[str] | None, via_xargs: bool = False
               ) -> str | None:
        """Why the program ``words`` (after wrappers; ``via_xargs``: behind ``xargs``) reading ``inputs``
        (redirection sources) is not proven."""
        for target in inputs:
            why = self.word(target, cwds, deep=False)
            if why:
                return why
        if not words:
            return None
        name = words[0].rsplit("/", 1)[-1]
        args = words[1:]
        if name in _NOT_READING:
            return next((self.network(a) for a in args if a.startswith(_NETWORK)), None)
        if via_xargs:
            return f"xargs hands `{name}` file names read from its input, which may name secrets"
        deep = name in _RECURSIVE or _recursive_option(name, args)
        for arg in args:
            if arg.startswith("-"):
                if arg.startswith("--") and "=" in arg:
                    arg = arg.split("=", 1)[1]
                elif len(arg) > 2 and arg[1] != "-" and "/" in arg:
                    arg = arg[2:]  # a value attached to a short option: -f/root/.ssh/id_rsa
                else:
                    continue
            why = self.word(arg, cwds, deep)
            if why:
                return why
        return None

    @staticmethod
    def network(text: str) -> str:
        return f"`{text[:60]}` opens a network connection (bash's /dev/tcp and /dev/udp)"

    def word(self, text: str, cwds: list[str] | None, deep: bool) -> str | None:
        if not text:
            return None
        if text.startswith(_NETWORK):
            return self.network(text)
        key = (text, deep)
        if key in self.checked:
            return self.checked[key]
        if len(self.checked) >= MAX_READ_CHECKS:
            return f"too complex to inspect (reads more than {MAX_READ_CHECKS} paths)"
        why = self.checked[key] = self.judge(text, cwds, deep)
        return why

    def judge(self, text: str, cwds: list[str] | None, deep: bool) -> str | None:
        globbed = any(c in _GLOB for c in text)
        fixed = text
        if globbed:
            cut = min(k for k, c in enumerate(text) if c in _GLOB)
            fixed = posixpath.dirname(text[:cut]) or "."
        if fixed == "~" or fixed.startswith("~/"):
            fixed = self.home + fixed[1:]
        elif fixed.startswith("~"):
            return f"`{text[:60]}` is in another user's home folder"
        if fixed.startswith("/"):
            places = [posixpath.normpath(fixed)]
        elif cwds is None:
            places = [posixpath.normpath(fixed)]  # judged by its name alone
        else:
            places = [posixpath.normpath(posixpath.join(c, fixed)) for c in cwds]
        for place in places:
            if _PROCESS_FILE.match(place):  # judged before resolving: /proc/PID/fd/N leads anywhere
                return f"reads `{text[:60]}`, which holds secrets (another process's environment, memory or open files)"
            real = real_or_none(place)
            if real is None:
                return f"reads `{text[:60]}`, whose place cannot be resolved (a link this user may not follow)"
            if real.startswith(_NETWORK):
                return self.network(text)
            why = self.secret(real)
            if why is not None:
                return f"reads `{text[:60]}`, which holds secrets ({why})"
            if deep or globbed:
                inner = self.holds_secrets(real)
                if inner is not None:
                    return f"may read secrets below `{text[:60]}` ({inner})"
        return None


def _recursive_option(name: str, args: list[str]) -> bool:
    letters = "rRa" if name in ("cp", "rsync", "scp") else "rR"
    for arg in args:
        if arg == "--":
            return False
        if arg in _RECURSIVE_LONG:
            return True
        if len(arg) > 1 and arg[0] == "-" and arg[1] != "-" and any(c in arg[1:] for c in letters):
            return True
    return False
