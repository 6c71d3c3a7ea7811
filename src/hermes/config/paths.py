"""Where hermes keeps its files.

Everything lives under ``HERMES_HOME`` (default ``~/.hermes``), so a whole installation can be moved
or pointed elsewhere (tests use a temporary directory).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def private_dir(folder: Path) -> Path:
    """``folder`` made (with its parents) and set to 0700: for logs that may hold what a program printed."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    return folder


def open_private_log(path: Path, mode: str = "a") -> Any:
    """``path`` opened for appending (text ``a`` or bytes ``ab``), created 0600 in a 0700 folder."""
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.fchmod(fd, 0o600)
    if "b" in mode:
        return os.fdopen(fd, mode)
    return os.fdopen(fd, mode, encoding="utf-8")


def hermes_home() -> Path:
    """The HERMES_HOME directory (not created)."""
    env = os.environ.get("HERMES_HOME")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".hermes"


@dataclass(frozen=True)
class HermesPaths:
    """The named files and folders under one HERMES_HOME."""

    home: Path

    @classmethod
    def current(cls) -> HermesPaths:
        return cls(hermes_home())

    @property
    def config(self) -> Path:
        return self.home / "config.yaml"

    @property
    def env(self) -> Path:
        return self.home / ".env"

    @property
    def auth(self) -> Path:
        return self.home / "auth.json"

    @property
    def database(self) -> Path:
        return self.home / "state.db"

    @property
    def plugins(self) -> Path:
        return self.home / "plugins"

    @property
    def cache(self) -> Path:
        return self.home / "cache"

    @property
    def history(self) -> Path:
        return self.home / "chat_history"

    @property
    def spill(self) -> Path:
        """Where oversized tool results are written in full."""
        return self.home / "cache" / "tool_results"

    def ensure(self) -> Path:
        """Make HERMES_HOME (0700 when this call creates it: it holds secrets, logs and sessions)."""
        if not self.home.exists():
            self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.home, 0o700)  # mkdir's mode is cut by the umask
        return self.home

    def protected_files(self) -> tuple[Path, ...]:
        """Files holding secrets or the agent's own settings; tools must not write them."""
        return (self.config, self.env, self.auth)
