"""The desktop app's own tips rotation (T-DESK): a few-minutes-late first tip, then at most one per 6 hours.

Rules, all decided here (the page only says whether the person is idle and shows what it is handed):

* the first tip comes no sooner than :data:`FIRST_DELAY` seconds after launch (this object's creation);
* after any tip — one from the rotation or one the agent showed with ``show_tip`` — none for
  :data:`GAP` seconds (6 hours), across restarts (the time is stored);
* only while the person is idle (``due(idle=True)``);
* one pass over :data:`CATALOG`: each item is handed out once, whether it then expired or was closed,
  and afterwards the rotation is quiet; :meth:`TipRotation.restart` (a setting) starts a new pass.

State lives in ``HERMES_HOME/desktop/tips.json`` (atomic writes). The clock is injectable (wall-clock
seconds), so the rules are tested without waiting.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FIRST_DELAY = 180.0
GAP = 6 * 3600.0


@dataclass(frozen=True)
class Tip:
    id: str
    selector: str
    title: str
    text: str


#: the built-in feature catalog the rotation walks once, in this order (selectors are ``data-tour`` names)
CATALOG: tuple[Tip, ...] = (
    Tip("new-session", '[data-tour="new-session"]', "New session", "Start a fresh conversation here; old ones "
        "stay in the list."),
    Tip("model", '[data-tour="model"]', "The model", "The model name is a button: it shows what you talk to."),
    Tip("tool-calls", '[data-tour="transcript"]', "Tool calls", "Every tool call is a line you can open to see "
        "its arguments and result."),
    Tip("terminal", '[data-tour="terminal-tab"]', "Terminals", "Open a shell next to the chat; the agent can "
        "read what it shows when you ask."),
    Tip("preview", '[data-tour="preview-pane"]', "Preview", "Pages, images and files the agent shows open here."),
    Tip("stop", '[data-tour="stop"]', "Stop", "Stop a running answer at any time; the session is kept."),
    Tip("settings", '[data-tour="settings-button"]', "Settings", "Turn tips and tours off, or pick a theme."),
)


class TipRotation:
    """The rotation's state and rules (see the module docstring). Thread-safe."""

    def __init__(self, path: Path, *, clock: Callable[[], float] | None = None,
                 catalog: tuple[Tip, ...] = CATALOG) -> None:
        self.path = path
        self.clock = clock or time.time
        self.catalog = catalog
        self.launched = self.clock()
        self._lock = threading.Lock()
        self._shown, self._last = self._load()

    def due(self, *, idle: bool) -> dict[str, Any] | None:
        """The tip to show now (and count it as shown), or None."""
        with self._lock:
            now = self.clock()
            if not idle or now - self.launched < FIRST_DELAY:
                return None
            if self._last is not None and now - self._last < GAP:
                return None
            tip = next((t for t in self.catalog if t.id not in self._shown), None)
            if tip is None:
                return None  # the pass is over: quiet until restarted
            self._shown.append(tip.id)
            self._last = now
            self._save()
            return asdict(tip)

    def agent_tip(self) -> None:
        """The agent showed a tip: the rotation is silent for :data:`GAP` from now."""
        with self._lock:
            self._last = self.clock()
            self._save()

    def restart(self) -> None:
        """Start a new pass over the catalog (the 6-hour gap still counts from the last tip)."""
        with self._lock:
            self._shown = []
            self._save()

    @property
    def shown(self) -> list[str]:
        with self._lock:
            return list(self._shown)

    def _load(self) -> tuple[list[str], float | None]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return [], None
        if not isinstance(data, dict):
            return [], None
        shown = [s for s in data.get("shown", []) if isinstance(s, str)]
        last = data.get("last_tip_at")
        return shown, float(last) if isinstance(last, int | float) else None

    def _save(self) -> None:
        from hermes.config.atomic import atomic_write

        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, json.dumps({"shown": self._shown, "last_tip_at": self._last}) + "\n")
