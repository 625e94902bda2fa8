"""The words and shapes of dates, shared by the date readers: month and weekday names, counts, the
pattern pieces (MONTH, DAY, YEAR, ...) and `Base`, one date expression before operators apply."""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass

from .text import Span

MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
WEEKDAYS = {
    "monday": 0,
    "mon": 0,
    "tuesday": 1,
    "tue": 1,
    "tues": 1,
    "wednesday": 2,
    "wed": 2,
    "thursday": 3,
    "thu": 3,
    "thur": 3,
    "thurs": 3,
    "friday": 4,
    "fri": 4,
    "saturday": 5,
    "sunday": 6,
}
ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "last": 4}
UNIT_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "sixty": 60,
    "ninety": 90,
    "few": 3,
    "couple of": 2,
}

MONTH_NAMES = "|".join(sorted(MONTHS, key=len, reverse=True))  # longest first: 'june' before 'jun'
MONTH = rf"(?P<month>{MONTH_NAMES})\.?"
FULL_MONTH = r"(?P<month>january|february|march|april|may|june|july|august|september|october|november|december)"
DAY = r"(?P<day>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
ORDINAL_DAY = r"(?P<day>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)"
YEAR = r"(?P<year>(?:19|20)\d\d)"
WEEKDAY = r"(?P<weekday>" + "|".join(sorted(WEEKDAYS, key=len, reverse=True)) + r")"
# a whole count, '1,000' included, never the tail of a longer number ('1,000' read as '000', '10^30' as '30')
COUNT = (
    r"(?<![\d^])(?<!\d[,.])(?<!\d )(?P<count>\d{1,3}(?:,\d{3})+(?!\d)|\d+|"
    + "|".join(sorted(UNIT_WORDS, key=len, reverse=True))
    + r")"
)
UNIT = r"(?P<unit>day|week|month|quarter|year)s?"


@dataclass
class Base:
    """One date expression before operators: a closed interval and how precise it is."""

    start: dt.date
    end: dt.date
    grain: str  # day | week | month | quarter | year | span
    span: Span
    year_given: bool = True
    month: int | None = None
    day: int | None = None
    time: dt.time | None = None
    weekday: bool = False  # a day named by its weekday, which a date right after it says more precisely
    month_given: bool = True  # False: a day said without its month ('the 5th')
    ends: bool = False  # two ends said in one phrase ('March 10 to 16', 'Jan-Mar'): a range, as 'between' says
    holiday: str | None = None  # the holiday named (holidays.py): in another year it falls on another date


def count_of(text: str) -> int:
    """A COUNT match: digits (with thousands commas) or a number word."""
    digits = text.replace(",", "")
    return int(digits) if digits.isdigit() else UNIT_WORDS[text]


def month_end(year: int, month: int) -> dt.date:
    return dt.date(year, month, calendar.monthrange(year, month)[1])


def add_months(day: dt.date, months: int) -> dt.date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    return dt.date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def year_range(year: int) -> tuple[dt.date, dt.date]:
    return dt.date(year, 1, 1), dt.date(year, 12, 31)


def quarter_range(year: int, q: int) -> tuple[dt.date, dt.date]:
    return dt.date(year, 3 * q - 2, 1), month_end(year, 3 * q)
