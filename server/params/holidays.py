"""Holidays a question may name for a day: those on the same date every year ('christmas eve') and those
that move (Easter, US Thanksgiving, Black Friday, Labor Day, Memorial Day), computed for the year asked. A
holiday's weekend is the holiday with the Saturday and Sunday next to it ('black friday weekend' is Friday
to Sunday, 'labor day weekend' Saturday to Monday)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable


def easter(year: int) -> dt.date:
    """Easter Sunday (Gregorian calendar; the anonymous algorithm of 1876)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = b // 4, b % 4
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = c // 4, c % 4
    leap = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * leap) // 451
    month, day = divmod(h + leap - 7 * m + 114, 31)
    return dt.date(year, month, day + 1)


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> dt.date:
    """The n-th given weekday of a month (n = -1: the last one)."""
    if n > 0:
        first = dt.date(year, month, 1)
        return first + dt.timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    last = dt.date(year + month // 12, month % 12 + 1, 1) - dt.timedelta(days=1)
    return last - dt.timedelta(days=(last.weekday() - weekday) % 7)


def _fixed(month: int, day: int) -> Callable[[int], dt.date]:
    return lambda year: dt.date(year, month, day)


def _thanksgiving(year: int) -> dt.date:
    return _nth_weekday(year, 11, 3, 4)  # the fourth Thursday of November (US)


# by name, lower case, with single spaces (an apostrophe may be left out when written)
HOLIDAYS: dict[str, Callable[[int], dt.date]] = {
    "new year's day": _fixed(1, 1),
    "valentine's day": _fixed(2, 14),
    "halloween": _fixed(10, 31),
    "christmas eve": _fixed(12, 24),
    "christmas day": _fixed(12, 25),
    "boxing day": _fixed(12, 26),
    "new year's eve": _fixed(12, 31),
    "easter": easter,
    "easter sunday": easter,
    "good friday": lambda year: easter(year) - dt.timedelta(days=2),
    "easter monday": lambda year: easter(year) + dt.timedelta(days=1),
    "thanksgiving": _thanksgiving,
    "thanksgiving day": _thanksgiving,
    "black friday": lambda year: _thanksgiving(year) + dt.timedelta(days=1),
    "cyber monday": lambda year: _thanksgiving(year) + dt.timedelta(days=4),
    "memorial day": lambda year: _nth_weekday(year, 5, 0, -1),  # the last Monday of May (US)
    "labor day": lambda year: _nth_weekday(year, 9, 0, 1),  # the first Monday of September (US)
}
_BY_WRITING = {name.replace("'", ""): day for name, day in HOLIDAYS.items()}
# the longest names first: 'easter monday' before 'easter'
HOLIDAY_NAMES = "|".join(
    name.replace("'", "'?").replace(" ", r"\s+") for name in sorted(HOLIDAYS, key=len, reverse=True)
)


def holiday(name: str, year: int) -> dt.date:
    """The day a holiday named as HOLIDAY_NAMES matches it falls on in `year`."""
    return _BY_WRITING[re.sub(r"\s+", " ", name.replace("'", ""))](year)


def weekend_of(day: dt.date) -> tuple[dt.date, dt.date]:
    """A holiday with the weekend next to it: Thursday or Friday to the Sunday after, a Monday from the Saturday
    before, a Saturday or Sunday that weekend; a holiday mid-week has none (the day alone)."""
    weekday = day.weekday()
    if weekday == 0:
        return day - dt.timedelta(days=2), day
    if weekday in (3, 4):
        return day, day + dt.timedelta(days=6 - weekday)
    if weekday >= 5:
        saturday = day - dt.timedelta(days=weekday - 5)
        return saturday, saturday + dt.timedelta(days=1)
    return day, day
