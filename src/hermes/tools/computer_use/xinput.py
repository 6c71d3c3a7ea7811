"""Pointer and keyboard input through the XTest extension (python-xlib), on one X display.

Every step checks ``stopped()`` first (the kill switch and the turn's interrupt), and whatever was
pressed is released on the way out, so a stopped action never leaves a key or button held down.
Characters the keyboard map lacks are mapped onto spare keycodes ahead of typing (and kept for the
session).
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
#: seconds programs get to take in a changed keyboard map before keys that use it are sent
MAP_SETTLE = 0.1


class Stopped(ToolError):
    """The kill switch or an interrupt stopped the input."""


class Input:
    def __init__(self, xdisplay: Any, stopped: Callable[[], str | None]) -> None:
        self.x = xdisplay
        self.stopped = stopped
        self._held_keys: list[int] = []
        self._held_buttons: list[int] = []
        #: characters typed through spare keycodes: keysym -> keycode
        self._extra: dict[int, int] = {}
        self._free: list[int] | None = None

    # -- the low level ------------------------------------------------------------------------------
    def _check(self) -> None:
        why = self.stopped()
        if why:
            self.release_all()
            raise Stopped(f"input stopped: {why}")

    def _fake(self, kind: int, detail: int = 0, **kw: int) -> None:
        from Xlib.ext import xtest

        xtest.fake_input(self.x, kind, detail, **kw)

    def _press(self, code: int, down: bool, *, key: bool) -> None:
        """A key (``key``) or a button going down or up, tracked so :meth:`release_all` can let go."""
        from Xlib import X

        held = self._held_keys if key else self._held_buttons
        if key:
            self._fake(X.KeyPress if down else X.KeyRelease, code)
        else:
            self._fake(X.ButtonPress if down else X.ButtonRelease, code)
        if down:
            held.append(code)
        elif code in held:
            held.remove(code)

    def _key(self, keycode: int, down: bool) -> None:
        self._press(keycode, down, key=True)

    def _button(self, button: int, down: bool) -> None:
        self._press(button, down, key=False)

    def release_all(self) -> None:
        """Let go of every key and button this input pressed (after a stop or an error)."""
        for keycode in reversed(self._held_keys[:]):
            self._key(keycode, False)
        for button in reversed(self._held_buttons[:]):
            self._button(button, False)
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
        """(keycode, needs shift) typing ``keysym``; characters the map lacks get a spare keycode."""
        for keycode, index in self.x.keysym_to_keycodes(keysym):
            if index in (0, 1):
                return keycode, index == 1
        if keysym not in self._extra:
            self.prepare([keysym])
        return self._extra[keysym], False

    def prepare(self, keysyms: list[int]) -> None:
        """Map the keysyms the keyboard lacks onto spare keycodes, once, ahead of typing them: a program
        takes the new map in some time after the change, so a key sent at once could reach it unmapped.
        The mappings stay for the session (:meth:`close` restores the spare keycodes)."""
        if self._free is None:
            first = int(self.x.display.info.min_keycode)
            count = int(self.x.display.info.max_keycode) - first + 1
            mapping = self.x.get_keyboard_mapping(first, count)
            self._free = [first + i for i, syms in enumerate(mapping) if not any(syms)][::-1]
        added = False
        for keysym in dict.fromkeys(keysyms):
            if keysym in self._extra or any(i in (0, 1) for _, i in self.x.keysym_to_keycodes(keysym)):
                continue
            if self._free:
                keycode = self._free.pop()
            elif self._extra:  # every spare keycode is taken: reuse the oldest
                oldest = next(iter(self._extra))
                keycode = self._extra.pop(oldest)
            else:
                raise ToolError("the keyboard map has no spare keycode to type this character with")
            self.x.change_keyboard_mapping(keycode, [(keysym, keysym)])
            self._extra[keysym] = keycode
            added = True
        if added:
            self.x.sync()
            time.sleep(MAP_SETTLE)

    def close(self) -> None:
        """Give the spare keycodes back (the person's own display keeps its keyboard map)."""
        for keycode in self._extra.values():
            self.x.change_keyboard_mapping(keycode, [(0, 0)])
        self._extra.clear()
        self.x.sync()

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
        self.prepare([char_keysym(c) for c in text if c != "\r"])
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
