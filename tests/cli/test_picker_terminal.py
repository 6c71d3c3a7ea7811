"""`hermes tools` in a real terminal (tmux), driven key by key as a person does.

* the row of the backend in use is marked (current) — auto-detected, saved, or inherited by one web
  function from ``web.backend``;
* a plain setting such as ``SEARXNG_URL`` is shown as it is typed; only secrets are masked;
* after "Route search and extract separately…" each step describes only the function just chosen (not
  the other one through the backend it is about to leave);
* Ctrl-D leaves the picker at once, saying what (if anything) was changed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hermes.config.dotenv import read_dotenv
from hermes.routing import CATEGORIES

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

VENDOR_ENV = sorted({n for c in CATEGORIES.values() for v in c.vendors for n in v.env_names})
CONFIG = "# mine\nweb:\n  backend: firecrawl   # my own key\n"


class Terminal:
    """One tmux session running a command; ``screen()``, ``wait_for(text)`` and ``keys(...)``."""

    def __init__(self, tmux: list[str], done: Path) -> None:
        self.tmux = tmux
        self.done = done

    def screen(self) -> str:
        return subprocess.run([*self.tmux, "capture-pane", "-p", "-J", "-t", "t"], capture_output=True, text=True,
                              timeout=5).stdout

    def wait_for(self, text: str) -> str:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            shown = self.screen()
            if text in shown:
                return shown
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared:\n{self.screen()}")

    def keys(self, *names: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", "t", *names], check=True, timeout=5)

    def exit_code(self) -> str:
        deadline = time.monotonic() + 20
        while not self.done.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.done.read_text().strip()


@pytest.fixture
def terminal(hermes_home: Path, tmp_path: Path) -> Iterator[Callable[[], Terminal]]:
    (hermes_home / "config.yaml").write_text(CONFIG, encoding="utf-8")
    tmux = ["tmux", "-L", f"hermes-pick-{uuid.uuid4().hex[:8]}", "-f", "/dev/null"]
    done = tmp_path / "done"

    def start() -> Terminal:
        env = {k: v for k, v in os.environ.items() if k not in VENDOR_ENV and not k.startswith("TOOL_GATEWAY")}
        env.update({"HERMES_HOME": str(hermes_home), "FIRECRAWL_API_KEY": "fc-key-123", "TERM": "xterm-256color"})
        # the pane stays after hermes exits (sleep), so its last words can still be read: without it a fast
        # exit closed the pane before the screen was captured and the goodbye line "never appeared"
        command = f"{sys.executable} -m hermes tools; echo $? > {done}; sleep 120"
        subprocess.run([*tmux, "new-session", "-d", "-s", "t", "-x", "150", "-y", "50", command], check=True,
                       timeout=10, env=env)
        return Terminal(tmux, done)

    yield start
    subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=5)


def _row(screen: str, label: str) -> str:
    """The line of the menu (the last one drawn) that shows ``label``."""
    menu = screen[screen.rindex("choose a backend"):]
    return next(line for line in menu.splitlines() if f" {label} " in line)


def test_current_rows_plain_url_and_split_description(terminal: Callable[[], Terminal], hermes_home: Path) -> None:
    term = terminal()
    term.wait_for("Tool backends — choose a tool category")
    term.keys("Down", "Down", "Enter")  # Text to speech: never configured, runs on local eSpeak
    shown = term.wait_for("Text to speech — choose a backend")
    assert "(current)" in _row(shown, "local eSpeak"), shown
    assert "(current)" not in _row(shown, "OpenAI TTS")
    term.keys("Escape")
    term.wait_for("Tool backends — choose a tool category")
    term.keys("Home", "Enter")  # Web tools: web.backend firecrawl
    shown = term.wait_for("Web tools — choose a backend")
    assert "(current)" in _row(shown, "Firecrawl"), shown
    term.keys("8", "Enter")  # Route search and extract separately…
    shown = term.wait_for("Web search — choose a backend")
    assert "(current)" in _row(shown, "Firecrawl"), shown  # inherited from web.backend
    term.keys("6", "Enter")  # SearXNG: needs SEARXNG_URL, a plain setting
    term.wait_for("SEARXNG_URL (saved in .env, shown as you type")
    term.keys("-l", "http://127.0.0.1:8888")
    shown = term.wait_for("http://127.0.0.1:8888")
    assert "*********" not in shown
    term.keys("Enter")
    shown = term.wait_for("Web extract — choose a backend")
    after_search = shown[shown.index("Web search → SearXNG"):]
    assert "Web search" in after_search and "SearXNG" in after_search
    assert "Web extract       " not in after_search.split("Web extract — choose a backend")[0], after_search
    assert "(current)" in _row(shown, "Firecrawl")
    term.keys("C-d")  # leave without choosing an extract backend
    shown = term.wait_for("Left the tools picker (Ctrl-D)")
    assert "Saved before that: SEARXNG_URL in .env, Web search → SearXNG; nothing else was changed." in shown
    assert term.exit_code() == "0"
    assert (hermes_home / "config.yaml").read_text() == CONFIG + "  search_backend: searxng\n"
    assert read_dotenv(hermes_home / ".env") == {"SEARXNG_URL": "http://127.0.0.1:8888"}


def test_ctrl_d_leaves_the_picker_saying_nothing_changed(terminal: Callable[[], Terminal], hermes_home: Path) -> None:
    term = terminal()
    term.wait_for("Tool backends — choose a tool category")
    term.keys("Enter")
    term.wait_for("Web tools — choose a backend")
    term.keys("C-d")
    term.wait_for("Left the tools picker (Ctrl-D); nothing was changed.")
    assert term.exit_code() == "0"
    assert (hermes_home / "config.yaml").read_text() == CONFIG
    assert "Traceback" not in term.screen()


def test_ctrl_d_at_a_key_prompt_leaves_too(terminal: Callable[[], Terminal], hermes_home: Path) -> None:
    term = terminal()
    term.wait_for("Tool backends — choose a tool category")
    term.keys("Down", "Down", "Enter")
    term.wait_for("Text to speech — choose a backend")
    term.keys("3", "Enter")  # ElevenLabs: its key is missing
    term.wait_for("ELEVENLABS_API_KEY (saved in .env, input hidden")
    term.keys("C-d")
    term.wait_for("Left the tools picker (Ctrl-D); nothing was changed.")
    assert term.exit_code() == "0"
    assert (hermes_home / "config.yaml").read_text() == CONFIG
    assert not (hermes_home / ".env").exists()
