"""`hermes setup`: the optional-key questions can be cut short — "-" skips the one asked and all the rest.

Driven in a real terminal (tmux) as a person does it: the answers are typed, secrets into getpass.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from hermes.config import optional_env

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def test_dash_skips_the_remaining_optional_keys(hermes_home: Path, tmp_path: Path) -> None:
    tmux = ["tmux", "-L", f"hermes-setup-{uuid.uuid4().hex[:8]}", "-f", "/dev/null"]
    done = tmp_path / "done"
    env = {k: v for k, v in os.environ.items() if k not in optional_env.OPTIONAL_ENV_VARS}
    env.update({"HERMES_HOME": str(hermes_home), "TERM": "xterm-256color"})
    command = f"{sys.executable} -m hermes setup --section keys; echo $? > {done}; sleep 120"  # pane outlives it

    def screen() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p", "-J", "-S", "-300", "-t", "t"], capture_output=True,
                              text=True, timeout=5).stdout

    def wait_for(text: str, count: int = 1) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            shown = screen()
            if shown.count(text) >= count:
                return shown
            time.sleep(0.1)
        raise AssertionError(f"{text!r} (x{count}) never appeared:\n{screen()}")

    def typed(*keys: str) -> None:
        subprocess.run([*tmux, "send-keys", "-t", "t", *keys], check=True, timeout=5)

    subprocess.run([*tmux, "new-session", "-d", "-s", "t", "-x", "160", "-y", "60", command], check=True,
                   timeout=10, env=env)
    try:
        shown = wait_for("(Enter: skip, -: skip the rest): ")
        assert "type - to skip all the rest" in shown
        total = int(re.search(r"\[1 of (\d+)\]", shown).group(1))  # type: ignore[union-attr]
        assert total >= 3  # several questions would follow
        typed("Enter")  # skip the first one only
        wait_for("(Enter: skip, -: skip the rest): ", 2)
        typed("-", "Enter")  # and the rest
        shown = wait_for("Setup finished.")
        deadline = time.monotonic() + 10
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert done.read_text().strip() == "0"
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=5)
    assert shown.count("(Enter: skip, -: skip the rest): ") == 2  # nothing asked after the dash
    assert f"Skipped the remaining {total - 1} optional keys." in shown
    skipped = shown.split("skipped: ", 1)[1].split(" (run", 1)[0].split(", ")
    assert len(skipped) == total
    assert not (hermes_home / ".env").exists()
