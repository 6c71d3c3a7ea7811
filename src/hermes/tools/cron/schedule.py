"""Job schedules: 5-field cron expressions, fixed intervals and one-shot times.

:func:`parse_schedule` accepts

* a cron expression ``minute hour day-of-month month day-of-week`` with ``*``, lists (``1,15``),
  ranges (``1-5``), steps (``*/15``, ``10-50/20``, ``5/15``) and names (``jan``…``dec``,
  ``sun``…``sat``; day-of-week 0 and 7 are both Sunday), or a macro ``@hourly``, ``@daily``
  (``@midnight``), ``@weekly``, ``@monthly``, ``@yearly`` (``@annually``). As in classic cron, when
  both day fields are restricted a day matches if *either* does;
* an interval ``every 30m``, ``30m``, ``2h``, ``1d``, ``every 90 minutes`` (units s, m, h, d, w; at
  least one minute);
* an ISO 8601 time for a one-shot job, ``2026-01-05T09:00`` (local time unless it has an offset).

Cron fields are matched against the wall clock of the local time zone (or the ``tz`` given). Every
computation takes and returns timezone-aware datetimes. Intervals count absolute time from an anchor
(a previous fire time), so they are not shifted by DST changes.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import ClassVar, Literal

from hermes.errors import ToolArgumentError

ScheduleKind = Literal["cron", "interval", "once"]

FIELD_NAMES = ("minute", "hour", "day-of-month", "month", "day-of-week")
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
_UNITS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "week": 604800, "weeks": 604800,
}
_INTERVAL = re.compile(r"^(?:(every)\s+)?(\d+)?\s*([a-z]+)$")
_ITEM = re.compile(r"^(\*|[a-z0-9]+)(?:-([a-z0-9]+))?(?:/(\d+))?$")
#: how far the cron search looks ahead or back before deciding an expression never fires
_HORIZON_YEARS = 10
_MINUTE = timedelta(minutes=1)
MIN_INTERVAL_SECONDS = 60
MAX_INTERVAL_SECONDS = 365 * 86400
FORMS_HINT = (
    "expected a cron expression with 5 fields (minute hour day-of-month month day-of-week, e.g. "
    "'0 9 * * mon-fri'), a macro such as '@daily', an interval such as 'every 30m', or an ISO time "
    "such as '2026-01-05T09:00'"
)


class ScheduleError(ToolArgumentError):
    """A schedule that cannot be read; ``field`` names the offending cron field when there is one."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def _to_wall(dt: datetime, tz: tzinfo | None) -> datetime:
    """The naive wall-clock time of the aware ``dt`` in ``tz`` (None: the local zone)."""
    return dt.astimezone(tz).replace(tzinfo=None)


def _from_wall(wall: datetime, tz: tzinfo | None) -> datetime:
    """The aware time of a wall-clock reading in ``tz`` (None: the local zone)."""
    return wall.replace(tzinfo=tz) if tz is not None else wall.astimezone()


def _aware(dt: datetime, tz: tzinfo | None) -> datetime:
    if dt.tzinfo is None:
        return _from_wall(dt, tz)
    return dt


class Schedule(ABC):
    """A parsed schedule. Subclasses answer when it fires."""

    kind: ClassVar[ScheduleKind]
    #: the canonical text, stored with the job and parsed again later
    text: str

    @abstractmethod
    def next_after(self, dt: datetime, *, anchor: datetime | None = None) -> datetime | None:
        """The first fire time strictly after ``dt`` (None: it never fires again).

        ``anchor`` is a known fire time; intervals count from it (without one, from ``dt``).
        """

    @abstractmethod
    def last_at_or_before(self, dt: datetime, *, anchor: datetime | None = None) -> datetime | None:
        """The latest fire time at or before ``dt`` (not before ``anchor`` for intervals), or None."""

    def describe(self) -> str:
        """A short human description (the canonical text)."""
        return self.text


@dataclass(frozen=True)
class CronSchedule(Schedule):
    """A 5-field cron expression matched against wall-clock time in ``tz`` (None: local time)."""

    kind: ClassVar[ScheduleKind] = "cron"
    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    #: day-of-month / day-of-week fields started with '*' (then the other day field alone decides)
    any_day: bool
    any_weekday: bool
    tz: tzinfo | None = None

    def _day_matches(self, t: datetime) -> bool:
        dom = t.day in self.days
        dow = (t.weekday() + 1) % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow

    def _next_wall(self, start: datetime) -> datetime | None:
        """The first matching wall-clock minute at or after ``start`` (naive, whole minute)."""
        t, last_year = start, start.year + _HORIZON_YEARS
        minutes = sorted(self.minutes)
        try:
            while t.year <= last_year:
                if t.month not in self.months:
                    t = datetime(t.year + (t.month == 12), t.month % 12 + 1, 1)
                elif not self._day_matches(t):
                    t = datetime(t.year, t.month, t.day) + timedelta(days=1)
                elif t.hour not in self.hours:
                    t = datetime(t.year, t.month, t.day, t.hour) + timedelta(hours=1)
                else:
                    later = [m for m in minutes if m >= t.minute]
                    if later:
                        return t.replace(minute=later[0])
                    t = datetime(t.year, t.month, t.day, t.hour) + timedelta(hours=1)
        except OverflowError:
            return None
        return None

    def _prev_wall(self, start: datetime) -> datetime | None:
        """The latest matching wall-clock minute at or before ``start`` (naive, whole minute)."""
        t, first_year = start, start.year - _HORIZON_YEARS
        minutes = sorted(self.minutes, reverse=True)
        try:
            while t.year >= first_year:
                if t.month not in self.months:
                    t = datetime(t.year, t.month, 1) - _MINUTE
                elif not self._day_matches(t):
                    t = datetime(t.year, t.month, t.day) - _MINUTE
                elif t.hour not in self.hours:
                    t = datetime(t.year, t.month, t.day, t.hour) - _MINUTE
                else:
                    earlier = [m for m in minutes if m <= t.minute]
                    if earlier:
                        return t.replace(minute=earlier[0])
                    t = datetime(t.year, t.month, t.day, t.hour) - _MINUTE
        except OverflowError:
            return None
        return None

    def next_after(self, dt: datetime, *, anchor: datetime | None = None) -> datetime | None:
        dt = _aware(dt, self.tz)
        wall = _to_wall(dt, self.tz).replace(second=0, microsecond=0) + _MINUTE
        for _ in range(2000):  # a repeated (DST) hour can yield wall times that are not yet after dt
            found = self._next_wall(wall)
            if found is None:
                return None
            aware = _from_wall(found, self.tz)
            if aware > dt:
                return aware
            wall = found + _MINUTE
        return None

    def last_at_or_before(self, dt: datetime, *, anchor: datetime | None = None) -> datetime | None:
        dt = _aware(dt, self.tz)
        wall = _to_wall(dt, self.tz).replace(second=0, microsecond=0)
        for _ in range(2000):
            found = self._prev_wall(wall)
            if found is None:
                return None
            aware = _from_wall(found, self.tz)
            if aware <= dt:
                return aware
            wall = found - _MINUTE
        return None


@dataclass(frozen=True)
class IntervalSchedule(Schedule):
    """Every ``seconds`` seconds of absolute time, counted from an anchor fire time."""

    kind: ClassVar[ScheduleKind] = "interval"
    text: str
    seconds: int

    def next_after(self, dt: datetime, *, anchor: datetime | None = None) -> datetime | None:
        dt = _aware(dt, None)
        if anchor is None:
            return dt + timedelta(seconds=self.seconds)
        if anchor > dt:
            return anchor
        steps = int((dt - anchor).total_seconds() // self.seconds) + 1
        return anchor + timedelta(seconds=steps * self.seconds)

    def last_at_or_before(self, dt: datetime, *, anchor: datetime | None = None) -> datetime | None:
        dt = _aware(dt, None)
        if anchor is None or anchor > dt:
            return None
        steps = int((dt - anchor).total_seconds() // self.seconds)
        return anchor + timedelta(seconds=steps * self.seconds)


@dataclass(frozen=True)
class OnceSchedule(Schedule):
    """A single fire time."""

    kind: ClassVar[ScheduleKind] = "once"
    text: str
    at: datetime

    def next_after(self, dt: datetime, *, anchor: datetime | None = None) -> datetime | None:
        return self.at if self.at > _aware(dt, None) else None

    def last_at_or_before(self, dt: datetime, *, anchor: datetime | None = None) -> datetime | None:
        return self.at if self.at <= _aware(dt, None) else None


# -- parsing -----------------------------------------------------------------------------------------


def _value(token: str, index: int, expr: str) -> int:
    names = _MONTHS if index == 3 else _DAYS if index == 4 else {}
    name = FIELD_NAMES[index]
    if token in names:
        return names[token]
    if not token.isdigit():
        hint = " (names: jan…dec)" if index == 3 else " (names: sun…sat)" if index == 4 else ""
        raise ScheduleError(f"cron expression '{expr}': {name} field: '{token}' is not a number{hint}", name)
    value = int(token)
    low, high = _BOUNDS[index]
    if not low <= value <= high:
        raise ScheduleError(
            f"cron expression '{expr}': {name} field: {value} is out of range {low}-{high}", name
        )
    return value


def _parse_field(text: str, index: int, expr: str) -> frozenset[int]:
    name = FIELD_NAMES[index]
    low, high = _BOUNDS[index]
    values: set[int] = set()
    for item in text.split(","):
        match = _ITEM.match(item)
        if not match:
            raise ScheduleError(f"cron expression '{expr}': {name} field: cannot read '{item or text}'", name)
        start_tok, end_tok, step_tok = match.groups()
        if start_tok == "*":
            if end_tok is not None:
                raise ScheduleError(f"cron expression '{expr}': {name} field: '*' cannot start a range", name)
            start, end = low, high
        else:
            start = _value(start_tok, index, expr)
            end = _value(end_tok, index, expr) if end_tok is not None else (high if step_tok else start)
            if end < start:
                raise ScheduleError(
                    f"cron expression '{expr}': {name} field: range {start_tok}-{end_tok} runs backwards", name
                )
        step = int(step_tok) if step_tok is not None else 1
        if step < 1 or step > high - low + 1:
            raise ScheduleError(
                f"cron expression '{expr}': {name} field: step {step_tok} must be between 1 and {high - low + 1}",
                name,
            )
        values.update(range(start, end + 1, step))
    if index == 4 and 7 in values:
        values = (values - {7}) | {0}
    return frozenset(values)


def parse_cron(expr: str, *, tz: tzinfo | None = None) -> CronSchedule:
    """Parse a 5-field cron expression or an ``@`` macro (see the module docstring)."""
    text = " ".join(expr.lower().split())
    body = MACROS.get(text, text)
    if text.startswith("@") and text not in MACROS:
        raise ScheduleError(f"unknown schedule macro '{text}'; known: {', '.join(MACROS)}")
    fields = body.split(" ")
    if len(fields) != 5:
        raise ScheduleError(
            f"cron expression '{text}' has {len(fields)} field{'s' if len(fields) != 1 else ''}; expected 5 "
            "(minute hour day-of-month month day-of-week)"
        )
    minutes, hours, days, months, weekdays = (_parse_field(f, i, text) for i, f in enumerate(fields))
    schedule = CronSchedule(
        text, minutes, hours, days, months, weekdays,
        any_day=fields[2].startswith("*"), any_weekday=fields[4].startswith("*"), tz=tz,
    )
    if schedule._next_wall(datetime(2000, 1, 1)) is None:
        raise ScheduleError(
            f"cron expression '{text}' never fires: its day-of-month and month fields never meet on a real date",
            "day-of-month",
        )
    return schedule


def parse_interval(text: str) -> IntervalSchedule | None:
    """``every 30m``, ``30m``, ``2h``, ``every hour``…; None when ``text`` is not an interval."""
    match = _INTERVAL.match(" ".join(text.lower().split()))
    if not match:
        return None
    every, number, unit = match.groups()
    if unit not in _UNITS or (number is None and every is None):
        return None
    count = int(number) if number is not None else 1
    seconds = count * _UNITS[unit]
    if seconds < MIN_INTERVAL_SECONDS:
        raise ScheduleError(f"interval '{text.strip()}' is too short: the shortest interval is 1 minute")
    if seconds > MAX_INTERVAL_SECONDS:
        raise ScheduleError(f"interval '{text.strip()}' is too long: the longest interval is 365 days")
    return IntervalSchedule(f"every {_format_seconds(seconds)}", seconds)


def _format_seconds(seconds: int) -> str:
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def parse_once(text: str, *, tz: tzinfo | None = None) -> OnceSchedule | None:
    """An ISO 8601 time (naive: local time, or ``tz``); None when ``text`` is not one."""
    candidate = text.strip()
    if not candidate or not candidate[0].isdigit():
        return None
    try:
        at = datetime.fromisoformat(candidate.replace("z", "Z"))
    except ValueError:
        return None
    at = _aware(at, tz)
    return OnceSchedule(at.isoformat(timespec="seconds"), at)


def parse_schedule(text: str, *, tz: tzinfo | None = None) -> Schedule:
    """Parse any schedule form (see the module docstring); raises :class:`ScheduleError`."""
    if not isinstance(text, str) or not text.strip():
        raise ScheduleError(f"the schedule is empty; {FORMS_HINT}")
    if len(text) > 200:
        raise ScheduleError("the schedule is too long (at most 200 characters)")
    interval = parse_interval(text)
    if interval is not None:
        return interval
    once = parse_once(text, tz=tz)
    if once is not None:
        return once
    words = text.split()
    if text.strip().startswith("@") or len(words) >= 3 or any(c in text for c in "*/,"):
        return parse_cron(text, tz=tz)
    raise ScheduleError(f"cannot read the schedule '{text.strip()}': {FORMS_HINT}")


def schedule_from_stored(kind: str, text: str, *, tz: tzinfo | None = None) -> Schedule:
    """Rebuild a stored schedule, checking it still has the kind it was stored with."""
    schedule = parse_schedule(text, tz=tz)
    if schedule.kind != kind:
        raise ScheduleError(f"stored schedule '{text}' reads as {schedule.kind}, not {kind}")
    return schedule
