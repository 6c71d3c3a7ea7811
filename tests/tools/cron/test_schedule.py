"""Cron expressions, intervals and one-shot times (requirement T-CRON): parsing and fire-time computations."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.tools.cron.schedule import (
    CronSchedule,
    IntervalSchedule,
    OnceSchedule,
    ScheduleError,
    parse_schedule,
    schedule_from_stored,
)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


# -- next fire times (UTC, so no DST) ------------------------------------------------------------------

NEXT_CASES = [
    ("*/15 * * * *", utc(2026, 1, 1, 10, 7), utc(2026, 1, 1, 10, 15)),
    ("*/15 * * * *", utc(2026, 1, 1, 10, 15), utc(2026, 1, 1, 10, 30)),  # strictly after
    ("* * * * *", utc(2026, 1, 1, 10, 7, 30), utc(2026, 1, 1, 10, 8)),
    ("0 9 * * mon-fri", utc(2026, 1, 2, 9, 0), utc(2026, 1, 5, 9, 0)),  # Friday -> Monday
    ("0 9 * * MON-FRI", utc(2026, 1, 3, 12, 0), utc(2026, 1, 5, 9, 0)),  # names are case-insensitive
    ("5/20 * * * *", utc(2026, 1, 1, 10, 26), utc(2026, 1, 1, 10, 45)),
    ("10-50/20 * * * *", utc(2026, 1, 1, 10, 31), utc(2026, 1, 1, 10, 50)),
    ("0 0-23/6 * * *", utc(2026, 1, 1, 7, 0), utc(2026, 1, 1, 12, 0)),
    ("0 12 1 jan,jul *", utc(2026, 1, 1, 12, 0), utc(2026, 7, 1, 12, 0)),
    ("0 0 * * 7", utc(2026, 1, 1), utc(2026, 1, 4)),  # 7 is Sunday as well as 0
    ("0 0 * * sun", utc(2026, 1, 1), utc(2026, 1, 4)),
    ("0 0 13 * fri", utc(2026, 1, 1), utc(2026, 1, 2)),  # both day fields restricted: either matches
    ("0 0 13 * *", utc(2026, 1, 1), utc(2026, 1, 13)),
    ("0 0 * 2 mon", utc(2026, 1, 1), utc(2026, 2, 2)),  # day-of-month '*': weekday and month decide
    # month ends
    ("0 0 31 * *", utc(2026, 1, 31), utc(2026, 3, 31)),  # February and its 28 days skipped
    ("0 0 31 * *", utc(2026, 3, 31), utc(2026, 5, 31)),  # April has 30 days
    ("30 23 28-31 * *", utc(2026, 2, 28, 23, 30), utc(2026, 3, 28, 23, 30)),
    ("0 0 30 * *", utc(2026, 1, 30), utc(2026, 3, 30)),
    ("0 0 29 2 *", utc(2026, 3, 1), utc(2028, 2, 29)),  # leap day
    ("0 0 1 * *", utc(2026, 12, 15), utc(2027, 1, 1)),  # year end
    ("59 23 31 12 *", utc(2026, 12, 31, 23, 59), utc(2027, 12, 31, 23, 59)),
    # macros
    ("@hourly", utc(2026, 1, 1, 10, 59, 30), utc(2026, 1, 1, 11, 0)),
    ("@daily", utc(2026, 1, 1, 10), utc(2026, 1, 2)),
    ("@midnight", utc(2026, 1, 1, 10), utc(2026, 1, 2)),
    ("@weekly", utc(2026, 1, 1), utc(2026, 1, 4)),
    ("@monthly", utc(2026, 1, 31), utc(2026, 2, 1)),
    ("@yearly", utc(2026, 6, 1), utc(2027, 1, 1)),
    ("@annually", utc(2026, 6, 1), utc(2027, 1, 1)),
]


@pytest.mark.parametrize(("expr", "after", "expected"), NEXT_CASES)
def test_next_fire_time(expr: str, after: datetime, expected: datetime) -> None:
    schedule = parse_schedule(expr, tz=UTC)
    assert schedule.kind == "cron"
    assert schedule.next_after(after) == expected


LAST_CASES = [
    ("0 9 * * mon-fri", utc(2026, 1, 5, 8, 0), utc(2026, 1, 2, 9, 0)),
    ("0 9 * * mon-fri", utc(2026, 1, 5, 9, 0), utc(2026, 1, 5, 9, 0)),  # at a fire time: that one
    ("0 0 31 * *", utc(2026, 3, 15), utc(2026, 1, 31)),
    ("*/15 * * * *", utc(2026, 1, 1, 0, 14, 59), utc(2026, 1, 1, 0, 0)),
    ("0 0 1 1 *", utc(2026, 1, 1, 0, 0, 30), utc(2026, 1, 1)),
    ("0 0 29 2 *", utc(2027, 1, 1), utc(2024, 2, 29)),
]


@pytest.mark.parametrize(("expr", "at", "expected"), LAST_CASES)
def test_latest_fire_time(expr: str, at: datetime, expected: datetime) -> None:
    assert parse_schedule(expr, tz=UTC).last_at_or_before(at) == expected


# -- bad expressions name the field ------------------------------------------------------------------

INVALID = [
    ("61 * * * *", "minute field: 61 is out of range 0-59"),
    ("* 24 * * *", "hour field: 24 is out of range 0-23"),
    ("* * 0 * *", "day-of-month field: 0 is out of range 1-31"),
    ("* * 32 * *", "day-of-month field: 32 is out of range 1-31"),
    ("* * * 13 *", "month field: 13 is out of range 1-12"),
    ("* * * * 8", "day-of-week field: 8 is out of range 0-7"),
    ("* * * foo *", "month field: 'foo' is not a number (names: jan…dec)"),
    ("* * * * funday", "day-of-week field: 'funday' is not a number (names: sun…sat)"),
    ("*/0 * * * *", "minute field: step 0 must be between 1 and 60"),
    ("5-1 * * * *", "minute field: range 5-1 runs backwards"),
    ("1,,2 * * * *", "minute field: cannot read"),
    ("L * * * *", "minute field: 'l' is not a number"),
    ("*-5 * * * *", "minute field: '*' cannot start a range"),
    ("* * * *", "has 4 fields; expected 5"),
    ("* * * * * *", "has 6 fields; expected 5"),
    ("0 0 30 2 *", "never fires"),
    ("0 0 31 4,6,9,11 *", "never fires"),
    ("@often", "unknown schedule macro '@often'"),
    ("", "the schedule is empty"),
    ("   ", "the schedule is empty"),
    ("tomorrow morning", "cannot read the schedule"),
    ("every 0m", "too short"),
    ("every 10s", "too short"),
    ("30 seconds", "too short"),
    ("every 400d", "too long"),
    ("x" * 300, "too long"),
]


@pytest.mark.parametrize(("text", "message"), INVALID)
def test_invalid_schedules_are_explained(text: str, message: str) -> None:
    with pytest.raises(ScheduleError) as info:
        parse_schedule(text)
    assert message in str(info.value)


@pytest.mark.parametrize(("text", "field"), [
    ("61 * * * *", "minute"), ("* 24 * * *", "hour"), ("* * 0 * *", "day-of-month"),
    ("* * * 13 *", "month"), ("* * * * 9", "day-of-week"),
])
def test_error_carries_the_field(text: str, field: str) -> None:
    with pytest.raises(ScheduleError) as info:
        parse_schedule(text)
    assert info.value.field == field


# -- intervals -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "seconds", "canonical"), [
    ("every 30m", 1800, "every 30m"),
    ("30m", 1800, "every 30m"),
    ("2h", 7200, "every 2h"),
    ("1d", 86400, "every 1d"),
    ("every 90 minutes", 5400, "every 90m"),
    ("every 120m", 7200, "every 2h"),
    ("every hour", 3600, "every 1h"),
    ("Every 1 Week", 604800, "every 1w"),
    ("every 90s", 90, "every 90s"),
])
def test_intervals(text: str, seconds: int, canonical: str) -> None:
    schedule = parse_schedule(text)
    assert isinstance(schedule, IntervalSchedule)
    assert (schedule.seconds, schedule.text) == (seconds, canonical)
    assert parse_schedule(schedule.text) == schedule  # the canonical text reads back the same


def test_interval_counts_from_its_anchor() -> None:
    schedule = parse_schedule("every 30m")
    anchor = utc(2026, 1, 1, 10, 0)
    assert schedule.next_after(utc(2026, 1, 1, 9, 0), anchor=anchor) == anchor
    assert schedule.next_after(utc(2026, 1, 1, 10, 0), anchor=anchor) == utc(2026, 1, 1, 10, 30)
    assert schedule.next_after(utc(2026, 1, 1, 11, 10), anchor=anchor) == utc(2026, 1, 1, 11, 30)
    assert schedule.next_after(utc(2026, 1, 1, 11, 10)) == utc(2026, 1, 1, 11, 40)  # no anchor: from dt
    assert schedule.last_at_or_before(utc(2026, 1, 1, 11, 10), anchor=anchor) == utc(2026, 1, 1, 11, 0)
    assert schedule.last_at_or_before(utc(2026, 1, 1, 9, 0), anchor=anchor) is None
    # a year of downtime is arithmetic, not a loop over every missed fire time
    far = anchor + timedelta(days=365, minutes=7)
    assert schedule.last_at_or_before(far, anchor=anchor) == anchor + timedelta(days=365)


# -- one-shot times ------------------------------------------------------------------------------------

def test_one_shot_times() -> None:
    schedule = parse_schedule("2026-01-05T09:00", tz=UTC)
    assert isinstance(schedule, OnceSchedule)
    assert schedule.at == utc(2026, 1, 5, 9)
    assert schedule.text == "2026-01-05T09:00:00+00:00"
    assert schedule.next_after(utc(2026, 1, 1)) == utc(2026, 1, 5, 9)
    assert schedule.next_after(utc(2026, 1, 5, 9)) is None
    assert schedule.last_at_or_before(utc(2026, 1, 6)) == utc(2026, 1, 5, 9)
    assert schedule.last_at_or_before(utc(2026, 1, 4)) is None
    offset = parse_schedule("2026-01-05T09:00+02:00", tz=UTC)
    assert isinstance(offset, OnceSchedule) and offset.at == utc(2026, 1, 5, 7)
    assert parse_schedule("2026-01-05 09:00Z").kind == "once"
    assert schedule_from_stored("once", schedule.text) == OnceSchedule(schedule.text, schedule.at)


def test_stored_kind_must_match() -> None:
    with pytest.raises(ScheduleError, match="reads as interval, not cron"):
        schedule_from_stored("cron", "every 5m")


# -- local time --------------------------------------------------------------------------------------

@pytest.fixture
def tokyo_local(monkeypatch: pytest.MonkeyPatch) -> object:
    """Make the process's local zone UTC+9 without DST (a POSIX TZ string needs no tz database)."""
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset is not available on this platform")
    monkeypatch.setenv("TZ", "JST-9")
    time.tzset()
    yield None
    monkeypatch.undo()
    time.tzset()


def test_cron_fields_are_local_wall_clock_time(tokyo_local: object) -> None:
    schedule = parse_schedule("0 9 * * *")  # no tz: the local zone
    # 00:30 UTC is 09:30 in Tokyo, so today's 09:00 has passed: next is 09:00 JST tomorrow = 00:00 UTC
    assert schedule.next_after(utc(2026, 1, 1, 0, 30)) == utc(2026, 1, 2, 0, 0)
    assert schedule.last_at_or_before(utc(2026, 1, 1, 0, 30)) == utc(2026, 1, 1, 0, 0)
    once = parse_schedule("2026-01-05T09:00")
    assert isinstance(once, OnceSchedule) and once.at == utc(2026, 1, 5, 0, 0)


def test_dst_change_keeps_wall_clock_time() -> None:
    zoneinfo = pytest.importorskip("zoneinfo")
    try:
        zone = zoneinfo.ZoneInfo("America/New_York")
    except zoneinfo.ZoneInfoNotFoundError:
        pytest.skip("no time zone database")
    daily = parse_schedule("0 9 * * *", tz=zone)
    # 2026-03-08 is the spring-forward day in New York: 09:00 is 14:00 UTC before, 13:00 UTC after
    assert daily.next_after(utc(2026, 3, 7, 12)) == utc(2026, 3, 7, 14)
    assert daily.next_after(utc(2026, 3, 7, 15)) == utc(2026, 3, 8, 13)
    # 02:30 does not exist that day; the job still runs once that morning, and normally the next day
    skipped_hour = parse_schedule("30 2 * * *", tz=zone)
    first = skipped_hour.next_after(utc(2026, 3, 8, 0))
    assert first is not None and utc(2026, 3, 8, 6) <= first <= utc(2026, 3, 8, 8)
    assert skipped_hour.next_after(first) == utc(2026, 3, 9, 6, 30)


# -- consistency (property) -----------------------------------------------------------------------

def _field(low: int, high: int) -> st.SearchStrategy[str]:
    single = st.integers(low, high).map(str)
    ranged = st.tuples(st.integers(low, high), st.integers(low, high)).map(lambda t: f"{min(t)}-{max(t)}")
    stepped = st.integers(1, high - low + 1).map(lambda s: f"*/{s}")
    return st.one_of(st.just("*"), single, ranged, stepped, st.lists(single, min_size=1, max_size=3).map(",".join))


EXPRESSIONS = st.tuples(_field(0, 59), _field(0, 23), _field(1, 28), _field(1, 12), _field(0, 6)).map(" ".join)
MOMENTS = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 1, 1)).map(
    lambda d: d.replace(tzinfo=UTC))


@settings(max_examples=150, deadline=None)
@given(EXPRESSIONS, MOMENTS)
def test_next_and_latest_agree(expr: str, moment: datetime) -> None:
    schedule = parse_schedule(expr, tz=UTC)
    assert isinstance(schedule, CronSchedule)
    nxt = schedule.next_after(moment)
    assert nxt is not None and nxt > moment and nxt.second == 0
    assert schedule.last_at_or_before(nxt) == nxt  # it is a fire time
    before = schedule.last_at_or_before(nxt - timedelta(minutes=1))
    assert before is None or before <= moment  # and nothing fires in between
    wall = nxt.astimezone(UTC)
    assert wall.minute in schedule.minutes and wall.hour in schedule.hours and wall.month in schedule.months
