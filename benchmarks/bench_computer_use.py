"""Benchmark: computer_use on a private Xvfb with the Tk test window.

Usage::

    .venv/bin/python benchmarks/bench_computer_use.py              # 40 rounds each
    .venv/bin/python benchmarks/bench_computer_use.py --rounds 20

Part 1: a screenshot as the model gets it (capture with mss, scale, encode, base64), p50 and p95 through
a ToolSession's dispatch, on a 1280x800 screen (no scaling) and on a 1920x1200 screen scaled to 1280x800,
as PNG and as JPEG, with the capture / scale / encode split measured on the same frames. The reference
in the same process is the plain way: an mss grab saved with Pillow's default PNG settings.
"CPU" is this process's CPU time per screenshot (Xvfb's share not counted): on a loaded machine it
says more than the wall time. Part 2: an action's round trip through dispatch (mouse_move, left_click,
a key, cursor_position, typing ten characters), the pointer read back each time. Goals (issue 20):
screenshot p50 < 60 ms at 1280x800, action round trip < 20 ms.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from tools.computer_use.support import Desk, read_state, tk_board, write_config  # noqa: E402


def quantiles(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return f"p50 {statistics.median(values) * 1000:6.1f} ms   p95 {p95 * 1000:6.1f} ms"


CPU: list[float] = []


def timed(rounds: int, step: Callable[[], Any]) -> list[float]:
    """Wall times of ``rounds`` calls; their CPU times (this process) go to :data:`CPU`."""
    step()  # warm
    out = []
    CPU.clear()
    for _ in range(rounds):
        start, cpu = time.perf_counter(), time.process_time()
        step()
        out.append(time.perf_counter() - start)
        CPU.append(time.process_time() - cpu)
    return out


def dispatch(desk: Desk, **args: Any) -> Callable[[], None]:
    def run() -> None:
        result = desk(**args)
        assert not result.is_error, result.text

    return run


def session(home: Path, screen: str, image_format: str) -> tuple[Desk, Path]:
    state = home / f"board-{screen}.json"
    write_config(home, screen_size=screen, screenshot_size="1280x800", image_format=image_format,
                 startup=[tk_board(state)])
    desk = Desk(home)
    desk(action="cursor_position")
    deadline = time.monotonic() + 10
    while not read_state(state).get("entry") and time.monotonic() < deadline:
        time.sleep(0.05)
    return desk, state


def split(desk: Desk, rounds: int) -> str:
    """Capture, scale and encode of the same frames, outside dispatch."""
    from hermes.tools.computer_use.screen import encode, resize

    desktop = desk.session.state["computer_use"].desktop
    camera, scale = desktop.camera, desktop.scale
    grab, scaling, encoding = [], [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        image = camera.grab((0, 0, *scale.real))
        t1 = time.perf_counter()
        image = resize(image, scale.model)
        t2 = time.perf_counter()
        encode(image, "png")
        t3 = time.perf_counter()
        grab.append(t1 - t0)
        scaling.append(t2 - t1)
        encoding.append(t3 - t2)
    ms = [statistics.median(v) * 1000 for v in (grab, scaling, encoding)]
    return f"capture {ms[0]:.1f} ms + scale {ms[1]:.1f} ms + PNG {ms[2]:.1f} ms (p50 each)"


def reference(desk: Desk, rounds: int) -> list[float]:
    """The plain way: an mss grab saved with Pillow's default PNG settings."""
    import mss
    from PIL import Image

    desktop = desk.session.state["computer_use"].desktop
    os.environ["XAUTHORITY"] = desktop.xauthority
    with mss.MSS(display=desktop.name.encode()) as grabber:
        def step() -> None:
            raw = grabber.grab(grabber.monitors[0])
            Image.frombytes("RGB", raw.size, raw.rgb).save(io.BytesIO(), "PNG")

        return timed(rounds, step)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-cu-"))
    os.environ["HERMES_HOME"] = str(home)
    print(f"== screenshot through dispatch ({args.rounds} rounds)")
    for screen in ("1280x800", "1920x1200"):
        for image_format in ("png", "jpeg"):
            desk, _ = session(home, screen, image_format)
            try:
                times = timed(args.rounds, dispatch(desk, action="screenshot"))
                size = len(desk(action="screenshot").metadata["images"][0])
                cpu = statistics.median(CPU) * 1000
                print(f"  {screen:>9} -> 1280x800 {image_format:<4}  {quantiles(times)}   CPU p50 {cpu:5.1f} ms   "
                      f"{size / 1024:4.0f} KiB base64")
                if image_format == "png":
                    print(f"  {'':>9}   split: {split(desk, args.rounds)}")
                    ref = reference(desk, args.rounds)
                    print(f"  {'':>9}   reference (mss + Pillow default PNG, no scaling): {quantiles(ref)}   "
                          f"ratio {statistics.median(times) / statistics.median(ref):.2f}")
            finally:
                desk.close()
    print(f"== action round trip through dispatch ({args.rounds} rounds)")
    desk, state = session(home, "1280x800", "png")
    try:
        left, top, width, height = read_state(state)["entry"]
        here = [left + width // 2, top + height // 2]
        desk(action="left_click", coordinate=here)
        points = iter([[here[0] + (i % 7) * 3, here[1]] for i in range(10_000)])
        for label, step in (
            ("mouse_move", lambda: dispatch(desk, action="mouse_move", coordinate=next(points))()),
            ("left_click", dispatch(desk, action="left_click", coordinate=here)),
            ("key Right", dispatch(desk, action="key", keys="Right")),
            ("cursor_position", dispatch(desk, action="cursor_position")),
            ("type 10 chars", dispatch(desk, action="type", text="abcdefghij")),
        ):
            print(f"  {label:<16} {quantiles(timed(args.rounds, step))}")
        print(f"  (the field now holds {len(json.loads(state.read_text())['text'])} characters)")
    finally:
        desk.close()


if __name__ == "__main__":
    main()
