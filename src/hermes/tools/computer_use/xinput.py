"""Pointer and keyboard input through the XTest extension (python-xlib), on one X display.

Every step checks ``stopped()`` first (the kill switch and the turn's interrupt), and whatever was
pressed is released on the way out, so a stopped action never leaves a key or button held down.
Characters the keyboard map lacks are typed through a spare keycode remapped for the moment.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

from hermes.errors import ToolError
from hermes.tools.computer_use.keys import MODIFIERS, char_keysym, parse_combo

BUTTONS = {"left": 1, "middle": 2, "right": 3}
#: X buttons of one wheel notch
WHEEL = {"up": 4, "down": 5, "left": 6, "right": 7}


class Stopped(ToolError):
    """The kill switch or an interrupt stopped the input."""


class Input:
    def __init__(self, xdisplay: Any, stopped: Callable[[], str | None]) -> None:
        self.x = xdisplay
        self.stopped = stopped
        self._held_keys: list[int] = []
        self._held_buttons: list[int] = []
        self._scratch: int | None = None
        self._scratch_sym = 0

    # -- the low level ------------------------------------------------------------------------------
    def _check(self) -> None:
        why = self.stopped()
        if why:
            self.release_all()
            raise Stopped(f"input stopped: {why}")

    def _fake(self, kind: int, detail: int = 0, **kw: int) -> None:
        from Xlib.ext import xtest

        xtest.fake_input(self.x, kind, detail, **kw)

    def _key(self, keycode: int, down: bool) -> None:
        from Xlib import X

        self._fake(X.KeyPress if down else X.KeyRelease, keycode)
        if down:
            self._held_keys.append(keycode)
        elif keycode in self._held_keys:
            self._held_keys.remove(keycode)

    def _button(self, button: int, down: bool) -> None:
        from Xlib import X

        self._fake(X.ButtonPress if down else X.ButtonRelease, button)
        if down:
            self._held_buttons.append(button)
        elif button in self._held_buttons:
            self._held_buttons.remove(button)

    def release_all(self) -> None:
        """Let go of every key and button this input pressed (after a stop or an error)."""
        for keycode in reversed(self._held_keys[:]):
            self._key(keycode, False)
        for button in reversed(self._held_buttons[:]):
            self._button(button, False)
        self._restore_scratch()
        self.x.sync()

    # -- pointer ------------------------------------------------------------------------------------
    def move(self, x: int, y: int) -> None:
        from Xlib import X

        self._check()
        self._fake(X.MotionNotify, x=x, y=y)
        self.x.sync()
        # the server queues XTest events behind its input thread: wait until the pointer is there, so
        # what follows (and the position reported back) sees it
        deadline = time.monotonic() + 0.5
        while self.cursor() != (x, y) and time.monotonic() < deadline:
            time.sleep(0.001)

    def cursor(self) -> tuple[int, int]:
        reply = self.x.screen().root.query_pointer()
        return int(reply.root_x), int(reply.root_y)

    def click(self, x: int, y: int, button: str = "left", count: int = 1, hold: str | None = None) -> None:
        combo = parse_combo(hold) if hold else []
        self.move(x, y)
        try:
            for _name, keysym in combo:
                self._key(self._keycode_for(keysym)[0], True)
            for _ in range(count):
                self._check()
                self._button(BUTTONS[button], True)
                self._button(BUTTONS[button], False)
            self.x.sync()
        finally:
            self.release_all()

    def drag(self, path: list[tuple[int, int]], button: str = "left") -> None:
        self.move(*path[0])
        try:
            self._button(BUTTONS[button], True)
            self.x.sync()
            for (x0, y0), (x1, y1) in itertools.pairwise(path):
                steps = max(1, min(20, max(abs(x1 - x0), abs(y1 - y0)) // 20))
                for i in range(1, steps + 1):
                    self.move(x0 + (x1 - x0) * i // steps, y0 + (y1 - y0) * i // steps)
                    time.sleep(0.005)
            self._button(BUTTONS[button], False)
            self.x.sync()
        finally:
            self.release_all()

    def scroll(self, x: int, y: int, direction: str, amount: int) -> None:
        self.move(x, y)
        for _ in range(amount):
            self._check()
            self._button(WHEEL[direction], True)
            self._button(WHEEL[direction], False)
        self.x.sync()

    def mouse(self, button: str, down: bool) -> None:
        self._check()
        self._button(BUTTONS[button], down)
        self.x.sync()
        if down:
            self._held_buttons.remove(BUTTONS[button])  # held on purpose (left_mouse_down): not ours to release

    # -- keyboard -----------------------------------------------------------------------------------
    def _keycode_for(self, keysym: int) -> tuple[int, bool]:
        """(keycode, needs shift) typing ``keysym``; a spare keycode is remapped when none has it."""
        for keycode, index in self.x.keysym_to_keycodes(keysym):
            if index in (0, 1):
                return keycode, index == 1
        if self._scratch is None:
            self._scratch = self._find_scratch()
        if self._scratch_sym != keysym:
            self.x.change_keyboard_mapping(self._scratch, [(keysym, keysym)])
            self.x.sync()
            self._scratch_sym = keysym
            time.sleep(0.01)  # let clients see the MappingNotify before the key arrives
        return self._scratch, False

    def _find_scratch(self) -> int:
        first = int(self.x.display.info.min_keycode)
        count = self.x.display.info.max_keycode - first + 1
        for offset, syms in reversed(list(enumerate(self.x.get_keyboard_mapping(first, count)))):
            if not any(syms):
                return int(first + offset)
        raise ToolError("the keyboard map has no spare keycode to type this character with")

    def _restore_scratch(self) -> None:
        if self._scratch is not None and self._scratch_sym:
            self.x.change_keyboard_mapping(self._scratch, [(0, 0)])
            self._scratch_sym = 0

    def key(self, combo: str, repeat: int = 1) -> None:
        parsed = parse_combo(combo)
        shift = self._keycode_for(int(_shift_keysym()))[0]
        try:
            for _ in range(repeat):
                self._check()
                pressed: list[int] = []
                for name, keysym in parsed:
                    keycode, needs_shift = self._keycode_for(keysym)
                    if needs_shift and name not in MODIFIERS and shift not in pressed:
                        self._key(shift, True)
                        pressed.append(shift)
                    self._key(keycode, True)
                    pressed.append(keycode)
                for keycode in reversed(pressed):
                    self._key(keycode, False)
                self.x.sync()
        finally:
            self.release_all()

    def type(self, text: str) -> None:
        shift = self._keycode_for(int(_shift_keysym()))[0]
        try:
            for char in text:
                self._check()
                if char == "\r":
                    continue
                keycode, needs_shift = self._keycode_for(char_keysym(char))
                if needs_shift:
                    self._key(shift, True)
                self._key(keycode, True)
                self._key(keycode, False)
                if needs_shift:
                    self._key(shift, False)
                self.x.sync()
        finally:
            self.release_all()


def _shift_keysym() -> int:
    from Xlib import XK

    return int(XK.string_to_keysym("Shift_L"))
