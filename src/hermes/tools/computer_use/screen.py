"""Screenshots: capture with mss, scale to the model's size, encode; and the exact coordinate mapping.

The model sees the screen scaled down to at most ``computer_use.screenshot_size`` (never up). Model
pixel ``x`` shows the real pixels whose centres fall in it; :meth:`Scale.to_real` answers the middle one
of those, and :meth:`Scale.to_model` is its exact inverse for every real pixel, so a point the model
reads off a screenshot lands on the real pixel it saw, and positions hermes reports (the cursor,
element bounds) are in the model's coordinates too.
"""

from __future__ import annotations

import base64
import io
import threading
from dataclasses import dataclass
from typing import Any

from hermes.errors import ToolArgumentError


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Scale:
    """A screen of ``real`` pixels shown to the model as ``model`` pixels (same aspect, never larger)."""

    real: tuple[int, int]
    model: tuple[int, int]

    @classmethod
    def fit(cls, real: tuple[int, int], limit: tuple[int, int]) -> Scale:
        width, height = real
        factor = min(1.0, limit[0] / width, limit[1] / height)
        return cls(real, (max(1, round(width * factor)), max(1, round(height * factor))))

    @property
    def factor(self) -> float:
        return self.model[0] / self.real[0]

    @staticmethod
    def _axis_to_real(x: int, real: int, model: int) -> int:
        low = _ceil_div(2 * x * real - model, 2 * model)
        high = _ceil_div(2 * (x + 1) * real - model, 2 * model) - 1
        return max(0, min(real - 1, (low + high) // 2))

    def to_real(self, x: int, y: int) -> tuple[int, int]:
        """The real pixel under model pixel (x, y); a ToolArgumentError when it is off the screen."""
        width, height = self.model
        if not (0 <= x < width and 0 <= y < height):
            raise ToolArgumentError(
                f"coordinate ({x}, {y}) is off the screen: the screenshot is {width}x{height}, so x must be "
                f"0..{width - 1} and y 0..{height - 1}")
        return (self._axis_to_real(x, self.real[0], width), self._axis_to_real(y, self.real[1], height))

    def to_model(self, x: int, y: int) -> tuple[int, int]:
        """The model pixel showing real pixel (x, y) (clamped to the screen)."""
        (rw, rh), (mw, mh) = self.real, self.model
        x, y = max(0, min(rw - 1, x)), max(0, min(rh - 1, y))
        return ((2 * x + 1) * mw // (2 * rw), (2 * y + 1) * mh // (2 * rh))

    def box_to_model(self, left: int, top: int, width: int, height: int) -> list[int]:
        """A real rectangle as [x, y, width, height] in model pixels (its centre maps back inside it)."""
        x0, y0 = self.to_model(left, top)
        x1, y1 = self.to_model(left + max(width, 1) - 1, top + max(height, 1) - 1)
        return [x0, y0, x1 - x0 + 1, y1 - y0 + 1]

    def region_to_real(self, x0: int, y0: int, x1: int, y1: int) -> tuple[int, int, int, int]:
        """A model rectangle [x0, y0, x1, y1] (inclusive corners) as real (left, top, width, height)."""
        if x1 < x0 or y1 < y0:
            raise ToolArgumentError(f"region [{x0}, {y0}, {x1}, {y1}] is empty: give [left, top, right, bottom]")
        self.to_real(x0, y0)
        self.to_real(x1, y1)
        (rw, rh), (mw, mh) = self.real, self.model
        left, top = _ceil_div(2 * x0 * rw - mw, 2 * mw), _ceil_div(2 * y0 * rh - mh, 2 * mh)
        right = _ceil_div(2 * (x1 + 1) * rw - mw, 2 * mw) - 1
        bottom = _ceil_div(2 * (y1 + 1) * rh - mh, 2 * mh) - 1
        left, top = max(0, left), max(0, top)
        right, bottom = min(rw - 1, right), min(rh - 1, bottom)
        return left, top, right - left + 1, bottom - top + 1


@dataclass(frozen=True)
class Shot:
    """One encoded screenshot for the model."""

    data: bytes
    mime: str
    size: tuple[int, int]

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"


class Camera:
    """Captures one X display (an mss grabber kept open; calls serialised)."""

    def __init__(self, display: str) -> None:
        self.display = display
        self._lock = threading.Lock()
        self._grabber: Any = None

    def _grab(self, left: int, top: int, width: int, height: int) -> Any:
        from PIL import Image

        if self._grabber is None:
            import mss

            self._grabber = mss.MSS(display=self.display.encode())
        raw = self._grabber.grab({"left": left, "top": top, "width": width, "height": height})
        return Image.frombuffer("RGB", raw.size, raw.bgra, "raw", "BGRX", 0, 1)

    def screen_size(self) -> tuple[int, int]:
        with self._lock:
            if self._grabber is None:
                self._grab(0, 0, 1, 1)
            monitor = self._grabber.monitors[0]
            return int(monitor["width"]), int(monitor["height"])

    def shot(self, region: tuple[int, int, int, int], size: tuple[int, int], image_format: str) -> Shot:
        """The real ``region`` (left, top, width, height) resized to ``size`` and encoded."""
        from PIL import Image

        with self._lock:
            image = self._grab(*region)
        if image.size != size:
            image = image.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)
        out = io.BytesIO()
        if image_format == "jpeg":
            image.save(out, "JPEG", quality=85)
            return Shot(out.getvalue(), "image/jpeg", size)
        image.save(out, "PNG", compress_level=1)
        return Shot(out.getvalue(), "image/png", size)

    def close(self) -> None:
        with self._lock:
            if self._grabber is not None:
                self._grabber.close()
                self._grabber = None
