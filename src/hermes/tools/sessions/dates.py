"""Reading the ``since`` / ``until`` arguments of ``session_search``.

Accepted forms (case-insensitive, surrounding spaces ignored):

* relative ages: ``30m``, ``12h``, ``7d``, ``2w``, ``3mo``, ``1y`` (also ``7 days``, ``2 weeks ago``) —
  that long before now;
* ``now``, ``today`` (local midnight), ``yesterday`` (the local midnight before);
* ISO 8601 dates and times: ``2026-01-05``, ``2026-01-05T14:30``, ``2026-01-05 14:30:00+02:00``,
  ``...Z``. Without an offset the local time zone is meant.

A bare date used as ``until`` means the end of that day, so ``since=2026-01-05, until=2026-01-05``
covers that whole day.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from hermes.errors import ToolArgumentError

if TYPE_CHECKING:
    import datetime as _dt

_UNITS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 7 * 86400, "wk": 7 * 86400, "week": 7 * 86400, "weeks": 7 * 86400,
    "mo": 30 * 86400, "month": 30 * 86400, "months": 30 * 86400,
    "y": 365 * 86400, "yr": 365 * 86400, "year": 365 * 86400, "years": 365 * 86400,
}
_RELATIVE = re.compile(r"^(\d{1,6}(?:\.\d+)?)\s*([a-z]+)(?:\s+ago)?$")
_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
FORMS = "'7d', '12h', '2w', 'today', 'yesterday' or an ISO date such as '2026-01-05' or '2026-01-05T14:30'"


def _midnight(now: _dt.datetime) -> _dt.datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


def parse_when(value: str, field: str, *, end: bool = False, now: _dt.datetime | None = None) -> float:
    """Turn ``value`` into epoch seconds; ``end`` makes a bare date mean the end of that day.

    Raises :class:`~hermes.errors.ToolArgumentError` naming ``field`` when the value is not understood.
    """
    import datetime as _dt  # here: session_search's module imports this one at every start-up

    now = now or _dt.datetime.now().astimezone()
    text = " ".join(str(value).strip().lower().split())
    if text == "now":
        return now.timestamp()
    if text in ("today", "yesterday"):
        day = _midnight(now) - _dt.timedelta(days=1 if text == "yesterday" else 0)
        return (day + _dt.timedelta(days=1 if end else 0)).timestamp()
    match = _RELATIVE.match(text)
    if match and match.group(2) in _UNITS:
        return now.timestamp() - float(match.group(1)) * _UNITS[match.group(2)]
    try:
        parsed = _dt.datetime.fromisoformat(text.upper().replace(" ", "T", 1))
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=now.tzinfo)
        if end and _DATE_ONLY.match(text):
            parsed += _dt.timedelta(days=1)
        return parsed.timestamp()
    except (ValueError, OverflowError):
        raise ToolArgumentError(f"'{field}' is not a date or age I understand: {value!r}; use {FORMS}") from None

def format_when(epoch: float) -> str:
    """A compact local time for results: ``2026-01-05 14:30``."""
    import datetime as _dt

    return _dt.datetime.fromtimestamp(epoch).astimezone().strftime("%Y-%m-%d %H:%M")
