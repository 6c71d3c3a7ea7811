"""`hermes chat` / `hermes -z` check their arguments before saying anything about the model.

The embedded-model notices (and the once-only note, whose marker file records that it was shown) come
only for a run that actually happens; `-Q` means the same after `-z` as after `chat -q`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import call, text

_ENDPOINT = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL", "OPENAI_MODEL")


def hermes(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in _ENDPOINT}
    env["HERMES_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=env,
                          timeout=60)


@pytest.mark.parametrize(("args", "words"), [
    (("-z", ""), "the prompt is empty"),
    (("chat", "-q", "  "), "the prompt is empty"),
    (("chat", "-Q"), "-Q/--quiet is for one-shot runs"),
    (("-z", "hi", "--max-iterations", "-3"), "--max-iterations must be from 1 to"),
    (("-z", "hi", "--toolsets", "nosuch"), "unknown toolset(s): nosuch"),
    (("chat", "--resume", "nosuch", "-q", "hi"), "no session with id 'nosuch'"),
    (("chat", "--continue", "-q", "hi"), "there is no stored session to continue yet"),
])
def test_argument_errors_come_before_the_embedded_model_notices(
        hermes_home: Path, args: tuple[str, ...], words: str) -> None:
    proc = hermes(hermes_home, *args)
    assert proc.returncode in (1, 2)
    assert words in proc.stderr
    assert "embedded" not in proc.stderr, proc.stderr
    assert not (hermes_home / "cache" / "local_model_seen").exists()  # the once-only note is still to come
    assert proc.stdout == ""


def test_dash_q_works_with_dash_z_as_with_chat_q(hermes_home: Path, model_server: Any) -> None:
    for args in (("-z", "list my todos", "-Q"), ("chat", "-q", "list my todos", "-Q"), ("-Q", "-z", "list my todos")):
        server = model_server([call("todo", {}), text("Nothing to do.")])
        proc = hermes(hermes_home, *args, "--base-url", server.url, "--model", "m")
        assert proc.returncode == 0, (args, proc.stderr)
        assert proc.stdout.strip() == "Nothing to do."
        assert "todo" not in proc.stderr  # quiet: no tool activity


def test_without_dash_q_tool_activity_is_shown(hermes_home: Path, model_server: Any) -> None:
    server = model_server([call("todo", {}), text("Nothing to do.")])
    proc = hermes(hermes_home, "-z", "list my todos", "--base-url", server.url, "--model", "m")
    assert proc.returncode == 0, proc.stderr
    assert "todo" in proc.stderr
