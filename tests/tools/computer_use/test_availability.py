"""Availability tells the truth (requirement T-CU): ``hermes tools list`` and ``hermes status`` say what a
display needs when none can be opened, and the check neither starts a program nor waits."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.config.settings import Settings
from hermes.tools.computer_use.config import display_ready
from tools.computer_use.support import write_config


def hermes(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "HERMES_HOME": str(home), **(env or {})}
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=full,
                          timeout=60, check=False)


def test_tools_list_and_status_name_what_is_missing(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(
        '{"toolsets": ["hermes-cli", "computer_use"], "computer_use": {"xvfb": "no-such-Xvfb"}}')
    listed = hermes(hermes_home, "tools", "list")
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if "✗ computer_use" in x)
    assert "no-such-Xvfb not found on PATH (install the Debian package 'xvfb'" in line
    status = hermes(hermes_home, "status")
    assert status.returncode == 0, status.stderr
    assert "◆ Computer use (opt-in toolset computer_use)" in status.stdout
    assert "✗ cannot run here: no-such-Xvfb not found on PATH" in status.stdout


def test_an_own_display_counts_only_when_an_x_server_answers(hermes_home: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    write_config(hermes_home, display="own")
    monkeypatch.setenv("DISPLAY", "remote.example:0")
    assert "another machine" in display_ready(Settings.load())[1]
    monkeypatch.setenv("DISPLAY", "nonsense")
    assert "not an X display name" in display_ready(Settings.load())[1]
    # a listening X socket is what counts (here a plain socket standing in for a server)
    number = 900 + os.getpid() % 90
    path = Path(f"/tmp/.X11-unix/X{number}")
    if path.exists():
        pytest.skip(f"{path} is taken")
    path.parent.mkdir(exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(1)
        monkeypatch.setenv("DISPLAY", f":{number}")
        try:
            assert display_ready(Settings.load()) == (True, f"the X display :{number}")
        finally:
            path.unlink()
    assert display_ready(Settings.load())[0] is False
