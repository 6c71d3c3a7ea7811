"""A real terminal for tests: a program run in a private tmux server, driven by keys, read off the screen.

::

    with TmuxTerminal([sys.executable, "-m", "hermes", "chat"], env={"HERMES_HOME": str(home)}) as term:
        term.wait_for("you ›")
        term.type("hello")
        term.press("Enter")
        term.wait_for("Hi there")

Each terminal has its own tmux socket (``tmux -L``) and no user config (``-f /dev/null``), so tests
never touch a person's tmux. When the program exits the pane prints ``[exit status N]`` and stays
open, so a test can read what was left on the screen and the exit status. Waiting polls the screen
until the text appears or a timeout runs out (no fixed sleeps).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

EXIT_MARK = "[exit status "


def have_tmux() -> bool:
    return shutil.which("tmux") is not None


class TmuxTerminal:
    def __init__(self, argv: Sequence[str], *, env: dict[str, str] | None = None, width: int = 120,
                 height: int = 40, cwd: str | None = None) -> None:
        self.socket = f"hermes-test-{uuid.uuid4().hex[:10]}"
        self._tmux = ["tmux", "-L", self.socket, "-f", "/dev/null"]
        assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
        program = " ".join(shlex.quote(a) for a in argv)
        # env -i: the program sees exactly ``env`` (plus TERM), not the tmux server's environment
        shell = (f"env -i TERM=xterm-256color {assignments} {program}; "
                 f"echo '{EXIT_MARK}'$?']'; exec sleep 600")
        subprocess.run([*self._tmux, "new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height),
                        *(["-c", cwd] if cwd else []), shell], check=True, timeout=10)
        subprocess.run([*self._tmux, "set-option", "-t", "t", "history-limit", "5000"], timeout=5,
                       capture_output=True)
        self._socket_path = subprocess.run([*self._tmux, "display-message", "-p", "#{socket_path}"],
                                           capture_output=True, text=True, timeout=5).stdout.strip()

    # -- reading ----------------------------------------------------------------------------------
    def screen(self, *, history: bool = False) -> str:
        """The visible screen (with ``history``: the scrollback too), trailing blank lines dropped."""
        extra = ["-S", "-5000"] if history else []
        out = subprocess.run([*self._tmux, "capture-pane", "-p", "-t", "t", *extra], capture_output=True,
                             text=True, timeout=5).stdout
        return out.rstrip("\n")

    def wait_until(self, check: Callable[[str], bool], what: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen(history=True)
            if check(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} never appeared on the screen:\n{shown}")
            time.sleep(0.05)

    def wait_for(self, text: str, timeout: float = 30, *, count: int = 1) -> str:
        """Wait until ``text`` is on the screen (at least ``count`` times); returns the screen."""
        return self.wait_until(lambda s: s.count(text) >= count, repr(text), timeout)

    def wait_for_prompt(self, prompt: str, count: int, timeout: float = 30) -> str:
        """Wait until the ``count``-th empty input prompt is the last line (the program waits for input)."""
        def ready(shown: str) -> bool:
            lines = shown.splitlines()
            return shown.count(prompt) >= count and bool(lines) and lines[-1].rstrip() == prompt.rstrip()
        return self.wait_until(ready, f"prompt #{count} {prompt!r}", timeout)

    def exit_status(self, timeout: float = 30) -> int:
        shown = self.wait_for(EXIT_MARK, timeout)
        found = re.search(re.escape(EXIT_MARK) + r"(\d+)\]", shown)
        assert found is not None, shown
        return int(found.group(1))

    # -- writing ----------------------------------------------------------------------------------
    def type(self, text: str) -> None:
        """Type ``text`` literally (no key names)."""
        subprocess.run([*self._tmux, "send-keys", "-t", "t", "-l", text], check=True, timeout=5)

    def press(self, *keys: str) -> None:
        """Press keys by tmux name: ``Enter``, ``C-c``, ``C-d``, ``Up``…"""
        subprocess.run([*self._tmux, "send-keys", "-t", "t", *keys], check=True, timeout=5)

    def line(self, text: str) -> None:
        """Type ``text`` and press Enter."""
        self.type(text)
        self.press("Enter")

    # -- lifecycle --------------------------------------------------------------------------------
    def close(self) -> None:
        subprocess.run([*self._tmux, "kill-server"], capture_output=True, timeout=10)
        if self._socket_path:  # tmux leaves its socket file behind
            Path(self._socket_path).unlink(missing_ok=True)

    def __enter__(self) -> TmuxTerminal:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
