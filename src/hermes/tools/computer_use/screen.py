"""Screenshots: capture with mss, scale to the model's size, encode; and the exact coordinate mapping.

The model sees the screen scaled down to at most ``computer_use.screenshot_size`` (never up), each
model pixel the average of the real pixels it covers. :meth:`Scale.to_real` answers the real pixel under
the centre of a model pixel (the one that weighs most in it); :meth:`Scale.to_model` answers the model
pixel a real pixel's centre falls in, and ``to_model(to_real(p)) == p`` for every model pixel, so a point
the model reads off a screenshot lands on the real pixel it saw, and positions hermes reports (the
cursor, element bounds) are in the model's coordinates too.
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
        """The real pixel under the centre of model pixel ``x``."""
        return min(real - 1, (2 * x + 1) * real // (2 * model))

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


def resize(image: Any, size: tuple[int, int]) -> Any:
    """``image`` at ``size`` by area averaging (each model pixel the mean of the real pixels it covers)."""
    from PIL import Image

    return image if image.size == size else image.resize(size, Image.Resampling.BOX, reducing_gap=3.0)


def encode(image: Any, image_format: str) -> Shot:
    if image_format == "jpeg":
        out = io.BytesIO()
        image.save(out, "JPEG", quality=85)
        return Shot(out.getvalue(), "image/jpeg", image.size)
    return Shot(encode_png(image.tobytes(), image.size), "image/png", image.size)


def encode_png(rgb: bytes, size: tuple[int, int]) -> bytes:
    """An RGB PNG without row filters at zlib level 1: about three times faster than Pillow's adaptive
    filtering and as small for screen content (flat areas, text)."""
    from mss.tools import to_png

    data = to_png(rgb, size, level=1)
    assert data is not None
    return data


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

    def grab(self, region: tuple[int, int, int, int]) -> Any:
        """The real ``region`` (left, top, width, height) as a Pillow RGB image."""
        with self._lock:
            return self._grab(*region)

    def shot(self, region: tuple[int, int, int, int], size: tuple[int, int], image_format: str) -> Shot:
        """The real ``region`` resized to ``size`` and encoded."""
        return encode(resize(self.grab(region), size), image_format)

    def close(self) -> None:
        with self._lock:
            if self._grabber is not None:
                self._grabber.close()
                self._grabber = None
