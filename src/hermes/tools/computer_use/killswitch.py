"""The kill-switch hotkey: a key combination grabbed on the display that stops hermes's input at once.

A thread with its own X connection grabs ``computer_use.kill_hotkey`` (default ctrl+alt+Escape) on the
root window, under every combination of the Caps Lock and Num Lock modifiers. When the person presses
it, the desktop is marked killed: the action running now stops before its next key or pointer event
(releasing what it held) and every later action of the session is refused.
"""

from __future__ import annotations

import contextlib
import logging
import select
import threading
from collections.abc import Callable
from typing import Any

from hermes.tools.computer_use.keys import parse_combo

logger = logging.getLogger(__name__)

_MODIFIER_MASKS = {"Control_L": "ControlMask", "Control_R": "ControlMask", "Shift_L": "ShiftMask",
                   "Shift_R": "ShiftMask", "Alt_L": "Mod1Mask", "Alt_R": "Mod1Mask", "Super_L": "Mod4Mask",
                   "Super_R": "Mod4Mask"}


class Hotkey:
    """Grabs one combination on a display and calls ``pressed`` from its own thread."""

    def __init__(self, connection: Any, combo: str, pressed: Callable[[], None]) -> None:
        from Xlib import X

        self.x = connection
        self.combo = combo
        self.pressed = pressed
        self._stop = threading.Event()
        parsed = parse_combo(combo)
        mask = 0
        key = None
        for name, keysym in parsed:
            if name in _MODIFIER_MASKS:
                mask |= getattr(X, _MODIFIER_MASKS[name])
            else:
                key = keysym
        if key is None:
            raise ValueError(f"the kill hotkey {combo!r} has no key besides its modifiers")
        self.keycode = self.x.keysym_to_keycode(key)
        if not self.keycode:
            raise ValueError(f"the kill hotkey {combo!r} names a key this keyboard does not have")
        root = self.x.screen().root
        errors: list[Any] = []
        for extra in (0, X.LockMask, X.Mod2Mask, X.LockMask | X.Mod2Mask):
            root.grab_key(self.keycode, mask | extra, True, X.GrabModeAsync, X.GrabModeAsync,
                          onerror=errors.append)
        self.x.sync()
        if errors:
            raise ValueError(f"another program holds the key combination {combo!r}")
        self.thread = threading.Thread(target=self._run, name="hermes-kill-hotkey", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from Xlib import X

        fd = self.x.fileno()
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([fd], [], [], 0.2)
                if not ready and not self.x.pending_events():
                    continue
                while self.x.pending_events():
                    event = self.x.next_event()
                    if event.type == X.KeyPress and event.detail == self.keycode:
                        self.pressed()
            except Exception:  # the display went away: nothing left to guard
                if not self._stop.is_set():
                    logger.info("the kill hotkey watcher stopped", exc_info=True)
                return

    def stop(self) -> None:
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=1.0)
        with contextlib.suppress(Exception):
            self.x.close()
