"""Where hermes keeps its files.

Everything lives under ``HERMES_HOME`` (default ``~/.hermes``), so a whole installation can be moved
or pointed elsewhere (tests use a temporary directory).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


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
        self.home.mkdir(parents=True, exist_ok=True)
        return self.home

    def protected_files(self) -> tuple[Path, ...]:
        """Files holding secrets or the agent's own settings; tools must not write them."""
        return (self.config, self.env, self.auth)
