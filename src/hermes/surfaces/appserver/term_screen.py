"""The screen of a desktop terminal, emulated on the server: full-screen programs draw where they mean to.

A shell's output is fed to a VT100/xterm emulator (`pyte`); the page is sent what the screen shows —
its lines, the cursor, and the lines that scrolled off its top since the last update (the page keeps
them as scrollback) — instead of the raw bytes. So ``vim``, ``less``, ``top`` or a curses program
render as they would in a terminal window, and ``read_terminal`` reads the same screen the person sees.

Without `pyte` installed (it is a dependency; an old install may lack it) :func:`new_screen` answers
None, the shell gets ``TERM=dumb`` and the page falls back to plain lines (control codes dropped).
"""

from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass
from typing import Any

#: the TERM a shell gets when its screen is emulated: the emulator understands what this terminfo sends
EMULATED_TERM = "xterm-256color"
MAX_SCROLLED = 2000  # lines kept between two updates (a burst of output past it keeps its last lines)
_ALTERNATE_MODES = (47, 1047, 1049)  # the alternate screen full-screen programs draw on (xterm's private modes)
_CURSOR_KEYS_MODE = 1 << 5  # DECCKM (private mode 1) as the emulator keeps it: arrows send ESC O A, not ESC [ A


@dataclass(frozen=True)
class ScreenUpdate:
    """What changed since the last update: the lines now shown, the cursor, what scrolled off the top, and
    whether the program asked for application cursor keys (curses, vim and less do)."""

    lines: list[str]
    cursor: tuple[int, int]
    scrolled: list[str]
    app_cursor_keys: bool = False

    def as_params(self, terminal_id: str) -> dict[str, Any]:
        return {"terminal": terminal_id, "lines": self.lines, "cursor": list(self.cursor),
                "scrolled": self.scrolled, "app_cursor_keys": self.app_cursor_keys}


class TerminalScreen:
    """One terminal's emulated screen; :meth:`feed` the shell's bytes, :meth:`update` what to send."""

    def __init__(self, pyte: Any, rows: int, cols: int) -> None:
        scrolled: list[str] = []

        class _Screen(pyte.Screen):  # type: ignore[misc]
            saved: tuple[dict[int, Any], Any] | None = None  # the main screen while the alternate one shows

            def index(self) -> None:  # a line feed at the bottom scrolls the top line off: keep it
                top, bottom = self.margins or (0, self.lines - 1)
                if self.cursor.y == bottom and top == 0 and self.saved is None:
                    scrolled.append(_text(self.buffer[0], self.columns))
                    del scrolled[:-MAX_SCROLLED]
                super().index()

            def set_mode(self, *modes: int, **kwargs: Any) -> None:
                if kwargs.get("private") and any(m in _ALTERNATE_MODES for m in modes):
                    if self.saved is None:  # to the alternate screen: the main one is kept as it was
                        self.saved = ({y: copy.copy(row) for y, row in self.buffer.items()}, copy.copy(self.cursor))
                        self.erase_in_display(2)
                    modes = tuple(m for m in modes if m not in _ALTERNATE_MODES)
                if modes:
                    super().set_mode(*modes, **kwargs)

            def reset_mode(self, *modes: int, **kwargs: Any) -> None:
                if kwargs.get("private") and any(m in _ALTERNATE_MODES for m in modes):
                    if self.saved is not None:  # back to the main screen, as it was
                        rows, cursor = self.saved
                        self.saved = None
                        self.buffer.clear()
                        self.buffer.update(rows)
                        self.cursor = cursor
                        self.dirty.update(range(self.lines))
                    modes = tuple(m for m in modes if m not in _ALTERNATE_MODES)
                if modes:
                    super().reset_mode(*modes, **kwargs)

            def select_graphic_rendition(self, *attrs: int, private: bool = False) -> None:
                if not private:  # xterm's "CSI > … m" (key modifier options) is no colour change
                    super().select_graphic_rendition(*attrs)

        self._scrolled = scrolled
        self.screen: Any = _Screen(cols, rows)
        self.stream: Any = pyte.ByteStream(self.screen)

    def feed(self, data: bytes) -> None:
        self.stream.feed(data)

    def resize(self, rows: int, cols: int) -> None:
        self.screen.resize(rows, cols)

    def update(self) -> ScreenUpdate:
        scrolled = list(self._scrolled)
        self._scrolled.clear()
        lines = [line.rstrip() for line in self.screen.display]
        return ScreenUpdate(lines, (int(self.screen.cursor.y), int(self.screen.cursor.x)), scrolled,
                            _CURSOR_KEYS_MODE in self.screen.mode)


def _text(row: Any, columns: int) -> str:
    return "".join(row[x].data for x in range(columns)).rstrip()


def new_screen(rows: int, cols: int) -> TerminalScreen | None:
    """An emulated screen of this size, or None when `pyte` is not installed."""
    try:
        pyte = importlib.import_module("pyte")
    except ImportError:
        return None
    return TerminalScreen(pyte, rows, cols)
