"""Benchmark: ``patch`` on a generated 10,000-line file (issue 3 speed goal).

Goals: an exact match under 10 ms, a miss reported under 100 ms. Prints the median milliseconds of

* the matcher alone (``plan_edit`` + applying the edit) — the part the goal is about;
* a whole ``patch`` call through ``registry.dispatch`` (reading the file, matching, the atomic write
  with fsync, the diff) — for reference, since disk speed dominates it.

Run: ``.venv/bin/python benchmarks/bench_patch.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hermes.errors import ToolError
from hermes.tools.file.matching import plan_edit
from hermes.tools.registry import registry

LINES = 10_000


def generate() -> str:
    """Python-looking code with much repetition (common tokens are the hard case for anchors)."""
    out = []
    for i in range(LINES // 10):
        out += [
            f"def function_{i}(value, other):",
            f'    """Compute thing number {i}."""',
            "    if value is None:",
            "        return value",
            f"    total = value + other * {i}",
            "    for item in range(total):",
            "        total += item",
            "    return total",
            "",
            "",
        ]
    return "\n".join(out) + "\n"


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def expect_miss(fn: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        try:
            fn()
        except ToolError:
            return
        raise AssertionError("expected a miss")

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=50)
    repeat = parser.parse_args().repeat

    import hermes.tools.file.patch  # noqa: F401  (registers the tool)

    text = generate()
    exact_old = "    total = value + other * 500\n    for item in range(total):\n"
    exact_new = "    total = value - other * 500\n    for item in range(total):\n"
    miss_plain = "def function_500(value, other):\n    raise NotImplementedError\n"
    # every line occurs ~1,000 times, never in this order: the most work the anchors can be given
    miss_common = "        return value\n    return total\n        total += item\n"
    fuzzy_old = "total = value + other * 500\nfor item in range(total):\n"

    rows = [
        ("matcher: exact match", lambda: plan_edit(text, exact_old, exact_new, False, "f").apply(text)),
        ("matcher: fuzzy (indentation) match", lambda: plan_edit(text, fuzzy_old, "x\n", False, "f").apply(text)),
        ("matcher: miss (rare lines)", expect_miss(lambda: plan_edit(text, miss_plain, "x", False, "f"))),
        ("matcher: miss (common lines)", expect_miss(lambda: plan_edit(text, miss_common, "x", False, "f"))),
    ]  # fmt: skip
    print(f"patch benchmark: {LINES:,} lines, {len(text):,} characters, median of {repeat} runs")
    for label, fn in rows:
        print(f"  {label:<45} {median_ms(fn, repeat):8.2f} ms")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.py"
        old_cwd = os.getcwd()
        os.chdir(tmp)
        try:
            path.write_text(text)
            flip = [exact_old, exact_new]

            def dispatch_exact() -> None:
                result = json.loads(
                    registry.dispatch("patch", {"path": "big.py", "old_string": flip[0], "new_string": flip[1]})
                )
                assert "error" not in result, result
                flip.reverse()

            def dispatch_miss() -> None:
                result = json.loads(
                    registry.dispatch("patch", {"path": "big.py", "old_string": miss_common, "new_string": "x"})
                )
                assert "error" in result

            print(f"  {'dispatch: exact match (incl. atomic write)':<45} {median_ms(dispatch_exact, repeat):8.2f} ms")
            print(f"  {'dispatch: miss':<45} {median_ms(dispatch_miss, repeat):8.2f} ms")
        finally:
            os.chdir(old_cwd)


if __name__ == "__main__":
    main()
