"""The dashboard's chart: units and cost per day and category, as inline SVG (no script, no fonts to load).

Two panels share the day axis: **units per day** as stacked bars (one segment per category) and
**cost per day** as one line per category with a point on every day that has usage. Every bar and
point carries ``data-day``, ``data-category`` and its value, and a ``<title>`` the browser shows on
hover; the tables next to the chart carry the same numbers for screen readers.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from hermes.toolgateway.config import CATEGORIES

_COLOURS = {"firecrawl": "#2f6fdf", "fal": "#d9822b", "fal-video": "#b5459b", "openai-audio": "#2a9d5c",
            "browser-use": "#7a5af5", "modal": "#c0392b"}
_SPARE = ("#5b6770", "#8c6d1f", "#1f8c8c", "#8c1f4f")
WIDTH, PANEL, LEFT, RIGHT, TOP = 760, 150, 64, 12, 28


def colour(category: str, index: int = 0) -> str:
    """The category's colour (a spare one, by ``index``, for categories this version does not know)."""
    return _COLOURS.get(category, _SPARE[index % len(_SPARE)])


def day_range(since: float, until: float) -> list[str]:
    """The UTC days ``YYYY-MM-DD`` from ``since`` up to (not including) ``until``; at most 400."""
    first = dt.datetime.fromtimestamp(since, dt.UTC).date()
    last = dt.datetime.fromtimestamp(max(since, until - 1), dt.UTC).date()
    days: list[str] = []
    day = first
    while day <= last and len(days) < 400:
        days.append(day.isoformat())
        day += dt.timedelta(days=1)
    return days


def nice_top(value: float, *, whole: bool = False) -> float:
    """The top of an axis with four equal steps of 1, 2 or 5 × 10^k reaching ``value``.

    ``whole`` keeps the steps at 1 or more (units are whole numbers).
    """
    wanted = value / 4
    if wanted <= 0:
        return 4.0 if whole else 1.0
    power = 10.0 ** math.floor(math.log10(wanted))
    step = next((s * power for s in (1.0, 2.0, 5.0) if wanted <= s * power * (1 + 1e-9)), 10.0 * power)
    return 4 * (max(step, 1.0) if whole else step)


def money(value: float) -> str:
    """``$1.50``, ``$0.006``, ``$0.00``: at least two decimals, at most six, no trailing noise."""
    text = f"{value:,.6f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def _num(value: float) -> str:
    return f"{value:g}"


def _axis(y0: float, top: float, label: str, fmt: Any) -> list[str]:
    parts = [f'<text x="{LEFT}" y="{_num(y0 - PANEL - 10)}" font-size="12" fill="#333">{escape(label)}</text>']
    for i in range(5):
        y = y0 - PANEL * i / 4
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_num(y)}" y2="{_num(y)}" '
                     f'stroke="{"#999" if i == 0 else "#e3e3e3"}" stroke-width="1"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{_num(y + 4)}" font-size="10" text-anchor="end" fill="#555">'
                     f"{escape(fmt(top * i / 4))}</text>")
    return parts


def _totals(rows: Iterable[Mapping[str, Any]], key: str) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for row in rows:
        slot = (str(row["day"]), str(row["category"]))
        out[slot] = out.get(slot, 0.0) + float(row[key])
    return out


def usage_chart(daily: Sequence[Mapping[str, Any]], days: Sequence[str]) -> str:
    """The SVG for ``daily`` rows (``day``, ``category``, ``units``, ``cost``) over ``days``."""
    seen = {str(r["category"]) for r in daily}
    categories = [c for c in CATEGORIES if c in seen] + sorted(seen - set(CATEGORIES))
    units, costs = _totals(daily, "units"), _totals(daily, "cost")
    n = max(1, len(days))
    slot = (WIDTH - LEFT - RIGHT) / n
    bar = max(1.0, slot * 0.7)
    y_units = TOP + PANEL + 16
    y_cost = y_units + PANEL + 56
    height = y_cost + 64
    day_units = [sum(units.get((d, c), 0.0) for c in categories) for d in days]
    top_units = nice_top(max(day_units, default=0.0), whole=True)
    top_cost = nice_top(max(costs.values(), default=0.0))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" viewBox="0 0 {WIDTH} {height}" '
        f'width="100%" aria-labelledby="chart-title" data-days="{len(days)}">',
        '<title id="chart-title">Units and cost per day and category</title>',
        *_axis(y_units, top_units, "Units per day", lambda v: f"{v:,.4g}"),
        *_axis(y_cost, top_cost, "Cost per day (USD)", money),
    ]
    for i, day in enumerate(days):
        x = LEFT + slot * i + (slot - bar) / 2
        base = float(y_units)
        for cat in categories:
            value = units.get((day, cat), 0.0)
            if value <= 0:
                continue
            h = PANEL * value / top_units
            base -= h
            parts.append(
                f'<rect class="bar" data-day="{day}" data-category="{escape(cat)}" data-units="{int(value)}" '
                f'x="{x:.2f}" y="{base:.2f}" width="{bar:.2f}" height="{h:.2f}" '
                f'fill="{colour(cat, categories.index(cat))}"><title>{day} {escape(cat)}: {int(value):,} units'
                "</title></rect>")
    for index, cat in enumerate(categories):
        fill = colour(cat, index)
        coords = [(LEFT + slot * (i + 0.5), y_cost - PANEL * costs.get((d, cat), 0.0) / top_cost)
                  for i, d in enumerate(days)]
        line = " ".join(f"{x:.2f},{y:.2f}" for x, y in coords)
        parts.append(f'<polyline class="line" data-category="{escape(cat)}" points="{line}" fill="none" '
                     f'stroke="{fill}" stroke-width="1.5"/>')
        for (x, y), day in zip(coords, days, strict=True):
            if (day, cat) in costs:
                value = costs[(day, cat)]
                parts.append(
                    f'<circle class="point" data-day="{day}" data-category="{escape(cat)}" '
                    f'data-cost="{value:.6f}" cx="{x:.2f}" cy="{y:.2f}" r="3.5" fill="{fill}">'
                    f"<title>{day} {escape(cat)}: {escape(money(value))}</title></circle>")
    every = max(1, math.ceil(n / 16))
    for i, day in enumerate(days):
        if i % every == 0:
            x = LEFT + slot * (i + 0.5)
            label = day[5:] if n > 1 else day
            for y in (y_units, y_cost):
                parts.append(f'<text x="{x:.2f}" y="{_num(y + 14)}" font-size="10" text-anchor="middle" '
                             f'fill="#555">{label}</text>')
    x = float(LEFT)
    for index, cat in enumerate(categories):
        parts.append(f'<g class="legend" data-category="{escape(cat)}"><rect x="{x:.1f}" y="{height - 22}" '
                     f'width="12" height="12" fill="{colour(cat, index)}"/><text x="{x + 16:.1f}" y="{height - 12}" '
                     f'font-size="12" fill="#333">{escape(cat)}</text></g>')
        x += 28 + 7.5 * len(cat)
    if not categories:
        parts.append(f'<text x="{WIDTH / 2:.0f}" y="{height - 12}" font-size="12" text-anchor="middle" '
                     'fill="#555">no usage in this period</text>')
    parts.append("</svg>")
    return "".join(parts)
