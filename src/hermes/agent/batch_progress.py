"""The progress display of a batch run on stderr.

On a terminal it is one bar redrawn in place (``[#####.....] 120/200 · 118 ok · 2 failed · 3 retried ·
4.1/s · eta 19s``) with notes (retries, failures) printed above it. Anywhere else (a log file, a pipe,
CI) each finished prompt is one line, ``[3/10] id (web,file) ok 2.1s``, the same lines the
single-process runner prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

_WIDTH = 24


class BatchProgress:
    def __init__(self, total: int, stream: TextIO, *, bar: bool | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.stream = stream
        self.bar = stream.isatty() if bar is None else bar
        self._clock = clock
        self._started = clock()
        self.ok = 0
        self.failed = 0
        self.retried = 0
        self._drawn = False

    @property
    def finished(self) -> int:
        return self.ok + self.failed

    def record(self, ok: bool, line: str) -> None:
        """One prompt finished; ``line`` says which and how (printed as is when there is no bar)."""
        if ok:
            self.ok += 1
        else:
            self.failed += 1
        if self.bar:
            if not ok:
                self.note(line)
            self._draw()
        else:
            self._write(f"[{self.finished}/{self.total}] {line}\n")

    def retry(self, line: str) -> None:
        self.retried += 1
        self.note(line)

    def note(self, line: str) -> None:
        if self.bar and self._drawn:
            self._write("\r\x1b[2K")
        self._write(f"{line}\n")
        if self.bar:
            self._draw()

    def close(self) -> None:
        if self.bar and self._drawn:
            self._write("\n")
            self._drawn = False

    def render(self) -> str:
        done = self.finished
        filled = _WIDTH * done // self.total if self.total else _WIDTH
        elapsed = max(self._clock() - self._started, 1e-9)
        rate = done / elapsed
        eta = f"eta {(self.total - done) / rate:.0f}s" if rate > 0 and done < self.total else f"{elapsed:.0f}s"
        parts = [f"[{'#' * filled}{'.' * (_WIDTH - filled)}] {done}/{self.total}", f"{self.ok} ok"]
        if self.failed:
            parts.append(f"{self.failed} failed")
        if self.retried:
            parts.append(f"{self.retried} retried")
        parts += [f"{rate:.1f}/s", eta]
        return " · ".join(parts)

    def _draw(self) -> None:
        self._write(f"\r\x1b[2K{self.render()}")
        self._drawn = True

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()
