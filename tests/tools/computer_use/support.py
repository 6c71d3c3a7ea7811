"""Helpers of the computer_use tests: real Xvfb displays, the Tk and GTK test windows in apps/.

Every test drives a real X server hermes (or the test) started; a machine without Xvfb or the
backend's Python packages skips them (and fails under CI, whose script installs both).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fakes.pg_redis import unavailable
from fakes.tool_session import ScriptedSink
from hermes.config.settings import Settings
from hermes.tools.discovery import discover_builtin_tools
from hermes.tools.registry import ToolRegistry
from hermes.tools.results import ToolResult
from hermes.tools.session import SessionContext, ToolSession
from hermes.tools.toolsets import Surface

APPS = Path(__file__).parent / "apps"
SYSTEM_PYTHON = "/usr/bin/python3"


def need_desktop() -> None:
    missing = [m for m in ("mss", "Xlib", "PIL", "jeepney") if importlib.util.find_spec(m) is None]
    if missing:
        unavailable(f"the computer_use packages {missing} are not installed")
    if importlib.util.find_spec("tkinter") is None:
        unavailable("the Tk test window needs Python's tkinter")
    if shutil.which("Xvfb") is None:
        unavailable("Xvfb is not installed")


def need_gtk() -> None:
    """The GTK test window runs on the system Python with its gi bindings (python3-gi, gir1.2-gtk-3.0)."""
    import subprocess

    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import gi; gi.require_version('Gtk', '3.0')"],
                           capture_output=True, check=False) if Path(SYSTEM_PYTHON).exists() else None
    if probe is None or probe.returncode != 0:
        unavailable("the GTK test window needs /usr/bin/python3 with python3-gi and gir1.2-gtk-3.0")


def tk_board(state: Path) -> str:
    return f"{sys.executable} {APPS / 'tk_board.py'} {state}"


def gtk_form(state: Path) -> str:
    return f"{SYSTEM_PYTHON} {APPS / 'gtk_form.py'} {state}"


def write_config(home: Path, *, vision: bool = True, model_url: str | None = None, **keys: Any) -> None:
    """config.yaml with computer_use.* keys (JSON is YAML) and the model endpoint."""
    model: dict[str, Any] = {"vision": vision}
    if model_url:
        model.update(base_url=model_url, name="test-model", api_key="test-key", stream=False)
    (home / "config.yaml").write_text(json.dumps({"model": model, "computer_use": keys}), encoding="utf-8")


def read_state(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else {}


class Desk:
    """A tool session holding computer_use, called the way the agent calls it."""

    def __init__(self, home: Path, sink: ScriptedSink | None = None, surface: Surface = Surface.CLI,
                 cancelled: Callable[[], bool] | None = None) -> None:
        self.registry = ToolRegistry()
        discover_builtin_tools(self.registry)
        self.settings = Settings.load()
        self.sink = sink or ScriptedSink()
        self.session = ToolSession(self.registry, ("computer_use",), SessionContext(
            surface=surface, settings=self.settings, sink=self.sink, cancelled=cancelled, task_id="t"))

    def __call__(self, **args: Any) -> ToolResult:
        return self.session.dispatch("computer_use", json.dumps(args))

    def ok(self, **args: Any) -> dict[str, Any]:
        result = self(**args)
        assert not result.is_error, result.text
        return dict(json.loads(result.text))

    def error(self, **args: Any) -> str:
        result = self(**args)
        assert result.is_error, result.text
        return str(json.loads(result.text)["error"])

    def close(self) -> None:
        for callback in self.session.state.pop("session_end", {}).values():
            callback()
