"""Dates in a question: ISO and written dates, months, quarters, years, decades, and relative phrases.

Every mention resolves to a closed interval [start, end] of calendar days against an injected
`today`, with open ends for 'since X' (no end) and 'before X' (no start). Operators are strict:
'after March 5' starts on March 6, 'before 2024' ends on 2023-12-31, 'since'/'from' include
the date, 'until'/'through' include it.

Patterns run on the digitised question (spelled.py): 'april sixth', 'the twenty third of may' and
'a couple of weeks ago' are read by the same patterns as 'april 6th'. A date without its year
('June 15th') or without its month ('the 5th') is the most recent one, today included; a bare
weekday is the coming one. dateparser (1.5.0) was measured as an alternative on SGD's dev first
turns: 1.0 ms a question at the median and 4 ms at p95 for search_dates, with no spans and with
misreadings ('june fifteenth' as June 30), so these patterns stay (about 0.1 ms a question).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass

from .date_words import (
    COUNT,
    DAY,
    FULL_MONTH,
    MONTH,
    MONTH_NAMES,
    MONTHS,
    ORDINAL_DAY,
    ORDINALS,
    UNIT,
    WEEKDAY,
    WEEKDAYS,
    YEAR,
    Base,
    add_months,
    count_of,
    month_end,
    quarter_range,
    year_range,
)
from .holidays import HOLIDAY_NAMES, holiday, weekend_of
from .spelled import digitised
from .spoken_dates import scan_spoken, weekdays_before_dates
from .text import Span, before

__all__ = ["DateMention", "add_months", "find_dates", "month_end"]


@dataclass
class DateMention:
    start: dt.date | None
    end: dt.date | None
    grain: str
    span: Span
    text: str
    operator: str | None = None  # since | after | before | until | between | None
    start_time: dt.time | None = None
    end_time: dt.time | None = None
    year_said: bool = True  # False: a month or day said without its year ('in March', 'April 6th')

    @property
    def single_day(self) -> bool:
        return self.start is not None and self.start == self.end

    @property
    def year(self) -> int | None:
        if self.grain == "year" and self.start is not None and self.operator is None:
            return self.start.year
        return None


# seasons as their first month (meteorological, northern hemisphere: spring is March to May); winter spans two
# years and is left to the user to say
SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9}


class _Parser:
    """Collects Base expressions from one question; longest match wins where patterns overlap."""

    def __init__(self, text: str, today: dt.date, future: bool = False) -> None:
        self.text = text
        self.future = future  # a date without its year (a day without its month) is the next one, not the last
        self.digits = digitised(text)
        self.low = self.digits.text  # positions are the digitised text's until parse() maps them back
        self.today = today
        self.found: list[Base] = []
        self.blocked: list[Span] = []  # text that looked like a date but is not one ('February 30, 2024')
        # one question writes its dates one way: a slashed date whose first part cannot be a month ('15/2/2024')
        # puts the day first in the others too ('1/2/2024 - 15/2/2024' is February 1st to 15th)
        self.day_first = any(int(a) > 12 >= int(b) for a, b in _SLASHED.findall(self.low))

    def add(self, base: Base | None) -> None:
        if base is None:
            return
        a = base.span
        if any(a[0] < b[1] and b[0] < a[1] for b in self.blocked):
            return
        for other in list(self.found):
            b = other.span
            if a[0] < b[1] and b[0] < a[1]:
                if (b[1] - b[0]) >= (a[1] - a[0]):
                    return
                self.found.remove(other)
        self.found.append(base)

    def scan(self, pattern: str, build: Callable[[re.Match[str]], Base | None]) -> None:
        for m in re.finditer(pattern, self.low):
            try:
                self.add(build(m))
            except (ValueError, OverflowError):  # 'February 30', 'the last 800000 days': not a date, and
                self.blocked.append(m.span())  # no shorter reading of it either

    def parse(self) -> list[Base]:
        t = self.today
        b = r"(?<![\w.])"
        e = r"(?![\w])"
        time_part = r"(?:[t ](?P<hh>[01]\d|2[0-3]):(?P<mi>[0-5]\d)(?::(?P<ss>[0-5]\d))?)?"
        self.scan(b + r"(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})" + time_part + e, self._iso)
        self.scan(b + r"(?P<y>\d{4})/(?P<m>\d{1,2})/(?P<d>\d{1,2})" + e, self._iso)
        self.scan(b + r"(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<y>\d{4})" + e, self._slashed)
        # a day and month without the year, after a word that says a date follows ('on 3/15', 'until 3/20')
        self.scan(rf"\b{_DATE_CUE}\s+(?P<a>\d{{1,2}})/(?P<b>\d{{1,2}})(?![\w/]|\.\d)", self._slashed_without_year)
        self.scan(rf"\b{MONTH}\s+{DAY},?\s+{YEAR}\b", self._mdy)
        self.scan(rf"\b(?:the\s+)?{DAY}\s+(?:of\s+)?{MONTH},?\s+{YEAR}\b", self._mdy)
        self.scan(rf"\b{MONTH}\s+{DAY}\b(?!\s*,?\s*(?:19|20)\d\d\b|\s*\d)", self._md)  # 'march 11, 2 rooms'
        self.scan(rf"\b(?:the\s+)?{DAY}\s+of\s+{MONTH}\b(?!\s*,?\s*\d)", self._md)
        self.scan(rf"\b(?:the\s+)?{ORDINAL_DAY}\s+{MONTH}\b(?!\s*,?\s*\d)", self._md)  # 'the 11th March'
        # two days of one month: 'between 1 and 10 March 2025', 'March 10 to 16', 'June 1-10, 2024'
        self.scan(
            rf"\b(?P<d1>{_DAY_NUMBER})\s*(?P<joint>{_RANGE_WORD})\s*{DAY}\s+(?:of\s+)?{MONTH}(?:,?\s+{YEAR})?\b",
            self._days_of_month,
        )
        self.scan(
            rf"\b{MONTH}\s+(?P<d1>{_DAY_NUMBER})\s*(?P<joint>{_RANGE_WORD})\s*{DAY}\b(?!\s*(?::|[ap]\.?m\b|o'?clock))"
            rf"(?:,?\s+{YEAR}\b)?",
            self._days_of_month,
        )
        self.scan(
            rf"\b(?:the\s+)?(?P<nth>first|second|third|fourth|1st|2nd|3rd|4th|last)\s+week\s+of\s+{MONTH}"
            rf"(?:,?\s+(?:of\s+)?{_YEAR_OR_NAMED})?\b",
            self._week_of_month,
        )
        # two months: 'between Jan and Mar 2025', 'from October to December 2024', 'Jan-Mar'
        self.scan(
            rf"\b(?P<m1>{MONTH_NAMES})\.?\s*(?P<joint>{_RANGE_WORD})\s*{MONTH}(?:,?\s+(?:of\s+)?{_YEAR_OR_NAMED})?\b",
            self._months,
        )
        self.scan(rf"\b{MONTH},?\s+(?:of\s+)?{YEAR}\b", self._my)
        self.scan(rf"\b(?:(?P<which>last|this|next)\s+)?{FULL_MONTH}\b", self._month_only)
        self.scan(rf"\bq(?P<q>[1-4])(?:\s+(?:of\s+)?|\s*-?\s*){_YEAR_OR_NAMED}\b", self._quarter)
        self.scan(rf"\b{YEAR}\s*-?\s*q(?P<q>[1-4])\b", self._quarter)
        self.scan(
            r"\b(?:the\s+)?(?:(?P<ord>first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter(?:\s+of)?|"
            r"(?P<last>last|final)\s+quarter\s+of)\s+"  # 'last quarter this year' is the quarter before this one
            + _YEAR_OR_NAMED
            + r"\b",
            self._quarter,
        )
        self.scan(r"\bq(?P<q>[1-4])\b(?!\s*-?\s*(?:of\s+)?\d)", self._quarter_this_year)
        half = (
            r"\b(?:the\s+)?(?:(?P<half>first|second|1st|2nd)\s+half\s+(?:of\s+)?|(?P<last>last|final)\s+half\s+of\s+)"
            r"(?:the\s+year\s+)?"
        )
        self.scan(half + _YEAR_OR_NAMED + r"\b", self._half)
        self.scan(rf"\bh(?P<h>[12])(?:\s+(?:of\s+)?|\s*-?\s*){_YEAR_OR_NAMED}\b", self._half)
        self.scan(rf"\b{YEAR}\s*-?\s*h(?P<h>[12])\b", self._half)
        # a year's first or last month, week or day: 'the last month of 2024', 'the first week of last year'
        self.scan(
            r"\b(?:the\s+)?(?P<end>first|1st|last|final)\s+(?P<unit>month|week|day)\s+of\s+(?:the\s+year\s+)?"
            + _YEAR_OR_NAMED
            + r"\b",
            self._end_of_year,
        )
        # a third of a year or a month: 'early 2024', 'mid-2023', 'late last year', 'mid-March', 'late May 2024'
        part = r"\b(?:the\s+)?(?P<part>early|mid|middle\s+of|late)\s*-?\s*(?:in\s+)?(?:the\s+)?"
        self.scan(part + _YEAR_OR_NAMED + r"\b", self._part_of_year)
        self.scan(part + rf"{MONTH}(?:,?\s+(?:of\s+)?{YEAR})?\b(?!\s*,?\s*(?:the\s+)?\d)", self._part_of_month)
        self.scan(rf"\b(?:the\s+)?(?P<season>spring|summer|fall|autumn)\s+(?:of\s+)?{YEAR}\b", self._season)
        self.scan(
            rf"\b(?P<holiday>{HOLIDAY_NAMES})(?P<weekend>\s+weekend)?(?:,?\s+(?:of\s+|in\s+)?{YEAR})?(?!\w)",
            self._holiday,
        )
        self.scan(rf"(?<![\w$#.,/]){YEAR}(?![\w%]|,\d|\.\d)", self._year)
        self.scan(r"\b(?:fy|fiscal year)\s?'?(?P<year>(?:19|20)\d\d)\b", self._year)
        self.scan(r"\b(?:fy|fiscal year)\s?['’]?(?P<yy>\d\d)\b", self._short_year)  # 'FY24'
        self.scan(r"\btoday\b|\btonight\b|\bthis morning\b", lambda m: self._day(m, t))
        self.scan(r"\byesterday\b", lambda m: self._day(m, t - dt.timedelta(days=1)))
        self.scan(r"\bthe day before yesterday\b", lambda m: self._day(m, t - dt.timedelta(days=2)))
        self.scan(
            r"\b(?:tomorrow|tomorow|tommorow|tommorrow|tmrw|tmr|tmrow|2morrow)\b",
            lambda m: self._day(m, t + dt.timedelta(days=1)),
        )
        # a day counted ahead: 'in 3 days', 'in two weeks', '3 days from now', 'a week from today'
        if self.future:  # 'in 3 days' in a booking; in a report it is no day ahead ('delivered in 3 days')
            self.scan(rf"\bin\s+{COUNT}\s+{UNIT}\b(?!\s+(?:ago|back)\b)", self._ahead)
        self.scan(rf"\b{COUNT}\s+{UNIT}\s+from\s+(?:now|today)\b", self._ahead)
        # not 'the weekend of december 6', 'the weekend before christmas': a weekend named by its day
        self.scan(
            r"\b(?P<which>this|next|last|the\s+coming|coming|the)\s+weekend\b(?!\s+(?:of|before|after|prior)\b)",
            self._weekend,
        )
        self.scan(rf"\b(?P<which>this|last|previous|past|next|current|the coming)\s+{UNIT}\b", self._named_period)
        self.scan(
            rf"\b(?P<which>last|past|previous|the last|the past|over the last|over the past|in the last|"
            rf"in the past|within the last|within the past)\s+{COUNT}\s+{UNIT}\b",
            self._last_n,
        )
        self.scan(rf"\b{COUNT}\s+{UNIT}\s+(?:ago|back)\b", self._ago)
        self.scan(r"\bthe\s+year\s+before\s+last\b", lambda m: self._year_of(m, t.year - 2))
        # "something from '15": a year's last two digits after an apostrophe ('the '80s' is a decade)
        self.scan(r"(?<![\w'’])['’](?P<yy>\d\d)\b(?!\s*(?:%|s\b))", self._short_year)
        self.scan(rf"\b(?:(?P<which>last|this|next|coming)\s+)?{WEEKDAY}\b", self._weekday)
        self.scan(
            r"\b(?:year to date|ytd|so far this year|this year so far)\b",
            lambda m: Base(dt.date(t.year, 1, 1), t, "span", m.span()),
        )
        self.scan(r"\b(?:month to date|mtd|so far this month)\b", lambda m: Base(t.replace(day=1), t, "span", m.span()))
        self.scan(
            r"\b(?:the\s+)?(?P<edge>start|beginning|end)\s+of\s+(?:the\s+)?(?P<what>(?:this|last|next)\s+"
            r"(?:year|month|quarter)|year|month|" + YEAR + r"|" + FULL_MONTH + r"(?:\s+(?P<y2>\d{4}))?)\b",
            self._edge,
        )
        scan_spoken(self)
        found = weekdays_before_dates(self.low, sorted(self.found, key=lambda x: x.span))
        for base in found:
            base.span = self.digits.original(base.span)
        return found

    def impossible(self) -> list[Span]:
        """Where the question wrote a date that is none ('2024-06-31', 'February 30, 2024'), after parse()."""
        return [self.digits.original(span) for span in self.blocked]

    # --- builders ---------------------------------------------------------------------
    def _iso(self, m: re.Match[str]) -> Base:
        day = dt.date(int(m["y"]), int(m["m"]), int(m["d"]))
        time = None
        if m.groupdict().get("hh"):
            time = dt.time(int(m["hh"]), int(m["mi"]), int(m["ss"] or 0))
        return Base(day, day, "day", m.span(), time=time)

    def _month_and_day(self, m: re.Match[str]) -> tuple[int, int]:
        """A slashed date's month and day: US order unless the first part cannot be a month, or another
        slashed date of the question puts the day first (`day_first`)."""
        a, b = int(m["a"]), int(m["b"])
        return (b, a) if a > 12 or self.day_first else (a, b)

    def _slashed(self, m: re.Match[str]) -> Base:
        month, day = self._month_and_day(m)
        value = dt.date(int(m["y"]), month, day)
        return Base(value, value, "day", m.span())

    def _slashed_without_year(self, m: re.Match[str]) -> Base | None:
        month, day = self._month_and_day(m)
        if not 1 <= month <= 12:
            return None
        return self._day_without_year(month, day, (m.start("a"), m.end("b")))

    def _mdy(self, m: re.Match[str]) -> Base:
        value = dt.date(int(m["year"]), MONTHS[m["month"]], int(m["day"]))
        return Base(value, value, "day", m.span(), month=value.month, day=value.day)

    def _md(self, m: re.Match[str]) -> Base | None:
        of_may = m.group().endswith("may") and re.search(r"\bof\s+may$", m.group())  # 'the 23rd of may'
        if not of_may and self._may_as_a_verb(m):
            return None
        return self._day_without_year(MONTHS[m["month"]], int(m["day"]), m.span())

    def _may_as_a_verb(self, m: re.Match[str]) -> bool:
        """The month matched is 'may' written in lower case: likely the verb ('the order may arrive')."""
        return m["month"] == "may" and not self.text[self.digits.position(m.start("month"))].isupper()

    def _day_without_year(self, month: int, day: int, span: Span) -> Base:
        """A day said without its year: the most recent one (today included), or with `future` the next one."""
        value = self._nearest(lambda year: dt.date(year, month, day))
        return Base(value, value, "day", span, year_given=False, month=month, day=day)

    def _nearest(self, on: Callable[[int], dt.date]) -> dt.date:
        """The day `on` gives for a year, in the year that makes it the most recent (today included), or with
        `future` the next one."""
        value = on(self.today.year)
        if self.future and value < self.today:
            return on(self.today.year + 1)
        if not self.future and value > self.today:
            return on(self.today.year - 1)
        return value

    def _and_without_between(self, m: re.Match[str]) -> bool:
        """Two ends joined by 'and' make a range only after 'between' ('in March and May' names two months)."""
        return m["joint"] == "and" and not re.search(r"between\s*$", before(self.low, m.start(), 12))

    def _days_of_month(self, m: re.Match[str]) -> Base | None:
        """From one day to a later one of the same month ('and' only after 'between')."""
        first, last = int(m["d1"].rstrip("stndrh")), int(m["day"])
        if first >= last or self._and_without_between(m):
            return None
        if m.start("d1") < m.start("month") and (
            re.search(rf"\b(?:{MONTH_NAMES})\.?\s*$", before(self.low, m.start(), 12))  # 'March 1 to 10 April'
            or (not m["year"] and _DAY_AFTER.match(self.low, m.end()))  # 'for 2 to 4 June 5'
        ):
            return None
        if m.start("month") < m.start("d1") and _MONTH_AFTER.match(self.low, m.end()):
            return None  # 'March 1st to 10th April': the second day is April's
        if self._may_as_a_verb(m):
            return None
        month = MONTHS[m["month"]]
        if m["year"]:
            start = dt.date(int(m["year"]), month, first)
        else:
            start = self._day_without_year(month, first, m.span()).start
        end = start.replace(day=last)  # ValueError ('the 31st' of a 30-day month) blocks the words
        return Base(start, end, "span", m.span(), year_given=bool(m["year"]), month=month, ends=True)

    def _week_of_month(self, m: re.Match[str]) -> Base:
        """'the first week of March 2025' is March 1-7, the second 8-14, ...; 'the last week' its last seven days.
        Without a year, the month as a month alone is read ('the first week of March' in a report: the last
        March's)."""
        month, said = MONTHS[m["month"]], bool(m["year"] or m["named"])
        year = self._year_said(m) if said else self._month_only_year(month, None)
        if m["nth"] == "last":
            end = month_end(year, month)
            start = end - dt.timedelta(days=6)
        else:
            start = dt.date(year, month, 1 + 7 * (ORDINALS[m["nth"]] - 1))
            end = start + dt.timedelta(days=6)
        return Base(start, end, "span", m.span(), year_given=said, month=month)

    def _months(self, m: re.Match[str]) -> Base | None:
        """From the first day of one month to the last of another; the first in the year before when it
        comes later in the calendar ('from November to February 2025'). 'and' only after 'between'."""
        first, last = MONTHS[m["m1"]], MONTHS[m["month"]]
        if first == last or self._and_without_between(m):
            return None
        if "may" in (m["m1"], m["month"]) and not _month_context(self.low, m.start()):
            return None
        if _DAY_AFTER.match(self.low, m.end()):
            return None  # 'from January to March 15': the second end is a day, read by the range join
        named = bool(m["year"] or m["named"])
        year = self._year_said(m) if named else self._month_only_year(last, None)
        start = dt.date(year if first < last else year - 1, first, 1)
        return Base(start, month_end(year, last), "span", m.span(), year_given=named, month=last, ends=True)

    def _my(self, m: re.Match[str]) -> Base:
        year, month = int(m["year"]), MONTHS[m["month"]]
        return Base(dt.date(year, month, 1), month_end(year, month), "month", m.span(), month=month)

    def _month_only(self, m: re.Match[str]) -> Base | None:
        name = m["month"]
        said = m.start("month")  # 'last May': 'last' is the context, 'May' must be written as a name
        if name == "may" and not (
            self.text[self.digits.position(said)].isupper() and (m["which"] or _month_context(self.low, said))
        ):
            return None
        month, which = MONTHS[name], m["which"]
        year = self._month_only_year(month, which)
        # a month named against today ('last March') is no month of the year a conversation is about
        return Base(dt.date(year, month, 1), month_end(year, month), "month", m.span(), bool(which), month)

    def _year_said(self, m: re.Match[str]) -> int:
        """The year of a quarter or half: written ('2024') or named ('last year', 'this year')."""
        if m["year"]:
            return int(m["year"])
        return self.today.year + {"this": 0, "current": 0, "last": -1, "previous": -1, "next": 1}[m["named"]]

    def _month_only_year(self, month: int, which: str | None) -> int:
        """The year of a month said without one: 'last' / 'next' / 'this' as said, else the most recent such
        month (today's included), or with `future` the next one."""
        t = self.today
        if which == "last":  # the last one before this month: 'last March' in March is a year ago
            return t.year if month < t.month else t.year - 1
        if which == "next":
            return t.year if month > t.month else t.year + 1
        if which == "this":
            return t.year
        if self.future:
            return t.year if month >= t.month else t.year + 1
        return t.year if month <= t.month else t.year - 1

    def _quarter(self, m: re.Match[str]) -> Base:
        said = m.groupdict()
        q = int(said["q"]) if said.get("q") else 4 if said.get("last") else ORDINALS[said["ord"]]
        start, end = quarter_range(self._year_said(m), q)
        return Base(start, end, "quarter", m.span())

    def _half(self, m: re.Match[str]) -> Base:
        said = m.groupdict()
        second = bool(said.get("last")) or (said["half"] in ("second", "2nd") if said.get("half") else said["h"] == "2")
        year = self._year_said(m)
        if second:
            return Base(dt.date(year, 7, 1), dt.date(year, 12, 31), "span", m.span())
        return Base(dt.date(year, 1, 1), dt.date(year, 6, 30), "span", m.span())

    def _end_of_year(self, m: re.Match[str]) -> Base:
        """The first or last month, week (seven days) or day of a year."""
        year, first = self._year_said(m), m["end"] in ("first", "1st")
        days = {"month": 31, "week": 7, "day": 1}[m["unit"]]
        if first:
            return Base(dt.date(year, 1, 1), dt.date(year, 1, days), "span", m.span())
        return Base(dt.date(year, 12, 32 - days), dt.date(year, 12, 31), "span", m.span())

    def _late_as_said_of_a_thing(self, m: re.Match[str]) -> bool:
        """'orders that arrived late in 2024', 'were delivered late last year': late (or early) says how a thing
        came, not when in the year."""
        return m["part"] in ("early", "late") and _CAME.search(before(self.low, m.start(), 16)) is not None

    def _part_of_year(self, m: re.Match[str]) -> Base | None:
        """'early 2024' is January to April, 'mid-2023' May to August, 'late last year' September to December."""
        if self._late_as_said_of_a_thing(m):
            return None
        year, third = self._year_said(m), _THIRDS[m["part"].split()[0]]
        first = 1 + 4 * third
        return Base(dt.date(year, first, 1), month_end(year, first + 3), "span", m.span())

    def _part_of_month(self, m: re.Match[str]) -> Base | None:
        """'early March' is its 1st to 10th, 'mid-March' the 11th to 20th, 'late March' the 21st to its end; a
        month without its year is placed as a month alone is."""
        name = m["month"]
        if not m["year"] and self._may_as_a_verb(m):
            return None  # 'late may': the verb
        if self._late_as_said_of_a_thing(m):
            return None
        month = MONTHS[name]
        year = int(m["year"]) if m["year"] else self._month_only_year(month, None)
        third = _THIRDS[m["part"].split()[0]]
        start = dt.date(year, month, 1 + 10 * third)
        end = month_end(year, month) if third == 2 else dt.date(year, month, 10 + 10 * third)
        return Base(start, end, "span", m.span(), bool(m["year"]), month)

    def _season(self, m: re.Match[str]) -> Base | None:
        lead = r"(?:^|\b(?:the|in|during|this|last|next|of|since|from|by|until))\s*$"
        if m["season"] == "fall" and not m.group().startswith("the") and not re.search(lead, self.low[: m.start()]):
            return None  # 'did sales fall 2021': the verb
        first = SEASONS[m["season"]]
        year = int(m["year"])
        return Base(dt.date(year, first, 1), month_end(year, first + 2), "span", m.span())

    def _holiday(self, m: re.Match[str]) -> Base:
        """A holiday (holidays.py) in the year said, else the most recent one (the next with `future`); with
        'weekend' its weekend."""
        name = m["holiday"]
        value = holiday(name, int(m["year"])) if m["year"] else self._nearest(lambda year: holiday(name, year))
        return _on_holiday(name, value, bool(m["weekend"]), m.span(), bool(m["year"]))

    def _quarter_this_year(self, m: re.Match[str]) -> Base:
        start, end = quarter_range(self.today.year, int(m["q"]))
        return Base(start, end, "quarter", m.span(), year_given=False)

    def _year(self, m: re.Match[str]) -> Base | None:
        pre = before(self.low, m.start(), 12)
        if re.search(r"(?:order|invoice|number|no\.?|id|#|\$|top|first|last)\s*$", pre):
            return None
        start, end = year_range(int(m["year"]))
        return Base(start, end, "year", m.span())

    def _day(self, m: re.Match[str], value: dt.date) -> Base:
        return Base(value, value, "day", m.span())

    def _named_period(self, m: re.Match[str]) -> Base:
        t, which, unit = self.today, m["which"], m["unit"]
        shift = {"this": 0, "current": 0, "last": -1, "previous": -1, "past": -1, "next": 1, "the coming": 1}[which]
        if which == "past" and unit in ("year", "month", "week"):  # 'the past year' is the last 12 months
            return self._rolling(m, 1, unit)
        if unit == "day":
            value = t + dt.timedelta(days=shift)
            return Base(value, value, "day", m.span())
        if unit == "week":
            monday = t - dt.timedelta(days=t.weekday()) + dt.timedelta(weeks=shift)
            return Base(monday, monday + dt.timedelta(days=6), "week", m.span())
        if unit == "month":
            first = add_months(t.replace(day=1), shift)
            return Base(first, month_end(first.year, first.month), "month", m.span())
        if unit == "quarter":
            q_index = (t.year * 4 + (t.month - 1) // 3) + shift
            year, q = divmod(q_index, 4)
            start, end = quarter_range(year, q + 1)
            return Base(start, end, "quarter", m.span())
        start, end = year_range(t.year + shift)
        return Base(start, end, "year", m.span())

    def _rolling(self, m: re.Match[str], count: int, unit: str) -> Base:
        t = self.today
        if unit == "day":
            start = t - dt.timedelta(days=count)
        elif unit == "week":
            start = t - dt.timedelta(weeks=count)
        elif unit == "month":
            start = add_months(t, -count)
        elif unit == "quarter":
            start = add_months(t, -3 * count)
        else:
            start = add_months(t, -12 * count)
        return Base(start, t, "span", m.span())

    def _last_n(self, m: re.Match[str]) -> Base:
        return self._rolling(m, count_of(m["count"]), m["unit"])

    def _ago(self, m: re.Match[str]) -> Base:
        """'3 days ago' is that day; '2 years ago' (or 'back') is that year, as 'last year' is."""
        if m["unit"] == "year":
            return self._year_of(m, self.today.year - count_of(m["count"]))
        rolled = self._rolling(m, count_of(m["count"]), m["unit"])
        return Base(rolled.start, rolled.start, "day", m.span())

    def _ahead(self, m: re.Match[str]) -> Base:
        """'in 3 days', 'a week from today': that day."""
        count, unit, t = count_of(m["count"]), m["unit"], self.today
        if unit in ("day", "week"):
            value = t + dt.timedelta(days=count * (7 if unit == "week" else 1))
        else:
            value = add_months(t, count * {"month": 1, "quarter": 3, "year": 12}[unit])
        return Base(value, value, "day", m.span())

    def _weekend(self, m: re.Match[str]) -> Base:
        """'this weekend' is this week's Saturday and Sunday (on a weekend day, that weekend), 'next weekend' the
        one after, 'last weekend' the one before it; 'the weekend' the coming one in a booking, else the last."""
        t, which = self.today, m["which"].replace("the ", "").strip()
        saturday = t - dt.timedelta(days=t.weekday()) + dt.timedelta(days=5)
        if which == "the":
            which = "this" if self.future or t.weekday() >= 5 else "last"
        if which == "next":
            saturday += dt.timedelta(days=7)
        elif which == "last":
            saturday -= dt.timedelta(days=7)
        return Base(saturday, saturday + dt.timedelta(days=1), "span", m.span())

    def _year_of(self, m: re.Match[str], year: int) -> Base:
        start, end = year_range(year)
        return Base(start, end, "year", m.span())

    def _short_year(self, m: re.Match[str]) -> Base:
        """'15 is 2015 and '99 1999: the century that puts it at most ten years ahead of today."""
        yy = int(m["yy"])
        year = 2000 + yy if 2000 + yy <= self.today.year + 10 else 1900 + yy
        return self._year_of(m, year)

    def _weekday(self, m: re.Match[str]) -> Base | None:
        name, which = m["weekday"], m["which"]
        if len(name) <= 3 and not which:
            return None  # 'sat', 'wed' alone are too often other words
        t, wd = self.today, WEEKDAYS[name]
        if which == "last":
            delta = (t.weekday() - wd) % 7 or 7
            value = t - dt.timedelta(days=delta)
        elif which == "this":
            value = t - dt.timedelta(days=t.weekday()) + dt.timedelta(days=wd)
            if self.future and value < t:  # 'this thursday' said on a Friday, booking: the coming one
                value += dt.timedelta(days=7)
        elif which in ("next", "coming"):
            delta = (wd - t.weekday()) % 7 or 7
            value = t + dt.timedelta(days=delta)
        else:  # bare weekday: the past one after 'since', else the coming one (today counts)
            # 'since Monday' looks back; 'from Monday' and 'after Monday' do too, except in a booking
            if re.search(
                r"(?:since|last)\s*$" if self.future else r"(?:since|from|after|last)\s*$",
                before(self.low, m.start(), 10),
            ):
                value = t - dt.timedelta(days=(t.weekday() - wd) % 7)
            else:
                value = t + dt.timedelta(days=(wd - t.weekday()) % 7)
        return Base(value, value, "day", m.span(), weekday=not which)

    def _edge(self, m: re.Match[str]) -> Base | None:
        what = m["what"]
        inner = _Parser(what, self.today, self.future).parse()
        if what in ("year", "month"):
            inner = _Parser("this " + what, self.today, self.future).parse()
        if not inner:
            return None
        period = inner[0]
        value = period.end if m["edge"] == "end" else period.start
        return Base(value, value, "day", m.span())


def _month_context(low: str, start: int) -> bool:
    return bool(
        re.search(
            r"(?:in|since|from|of|during|until|till|before|after|between|and|to|through)\s*$", before(low, start, 12)
        )
    )


_MONTH_AFTER = re.compile(rf"\s*(?:of\s+)?(?:{MONTH_NAMES})\b")
_DAY_NUMBER = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_DAY_AFTER = re.compile(rf"\s*,?\s*(?:the\s+)?{_DAY_NUMBER}\b(?![:.]?\d)")
_DATE_CUE = r"(?:on|by|for|from|to|until|till|through|thru|before|after|since|starting|leaving|returning|and)"
_SLASHED = re.compile(r"(?<![\w.])(\d{1,2})/(\d{1,2})/(?:\d{4})(?!\w)")
# words after which 'late' or 'early' says how a thing came ('arrived late'), not a part of a period
_CAME = re.compile(
    r"\b(?:arriv(?:e|ed|es|ing)|deliver(?:ed|s|ing)?|ship(?:ped|s)?|paid|pay(?:s|ing)?|was|were|is|are|be|been|"
    r"being|came|come|comes|coming|ran|run(?:s|ning)?|sent|returned|submitted|filed|due)\s+$"
)
_THIRDS = {"early": 0, "mid": 1, "middle": 1, "late": 2}  # which third of a year or a month is meant
_YEAR_OR_NAMED = rf"(?:{YEAR}|(?:the\s+)?(?P<named>this|current|last|previous|next)\s+year)"
_SINCE = re.compile(
    r"(?:\bsince|\bstarting(?: from| on| in)?|\bbeginning(?: in| on)?|\bas of|\bon or after|"
    r"\bnot before|\bno(?:t)? earlier than|\bnot prior to)\s*$"
)
_AFTER = re.compile(r"(?:\bafter|\blater than|\bpost)\s*$")
_BEFORE = re.compile(r"(?:\bbefore|\bprior to|\bearlier than|\bpre)\s*$")
_UNTIL = re.compile(
    r"(?:\buntil|\btill|\bthrough|\bthru|\bup to|\bup until|\bby|\bno(?:t)? later than|\bon or before|"
    r"\bnot after|\bending)\s*$"
)
_FROM = re.compile(r"\bfrom\s*$")
_ONWARDS = re.compile(r"^\s*(?:on\b|onwards?\b|forward\b|until now\b|to date\b|till now\b)")
_LATER_AFTER = re.compile(r"^\s*,?\s*(?:(?:or|and)\s+(?:later|after|afterwards|since|beyond)\b|onwards?\b)")
_EARLIER_AFTER = re.compile(r"^\s*,?\s*(?:or|and)\s+(?:earlier|before|prior)\b")
_RANGE_WORD = r"(?:and|to|until|till|through|thru|-|–)"
_LED_BY_RANGE_WORD = re.compile(rf"{_RANGE_WORD}\s+")
_RANGE_GAP = re.compile(rf"^\s*{_RANGE_WORD}\s*(?:the\s+)?(?:end\s+of\s+)?$")
# what follows the last date of a message that breaks off in the middle of a range ('between March 1st and')
_DANGLING = re.compile(rf"^\s*{_RANGE_WORD}\s*[?.!]*\s*$")


def find_dates(text: str, today: dt.date, future: bool = False) -> list[DateMention]:
    """Every date expression in `text` with operators and ranges applied, in order of appearance. A date
    said without its year, or a day without its month, is the most recent one (today included), or with
    `future` the next one (today included): reports look back, bookings look ahead."""
    return read_dates(text, today, future)[0]


@dataclass(frozen=True)
class ImpossibleDate:
    """Where the text writes a date that is none ('2024-06-31', 'February 30, 2024'), and which end of a range
    the words before it make it: 'start' after 'after', 'since', 'from'; 'end' after 'before', 'until'."""

    span: Span
    bound: str | None


def _bound_before(low: str, start: int) -> str | None:
    """The end of a range the operator words before `start` give a date (those _apply_operator reads)."""
    pre = before(low, start, 24)
    said = _operator_words(pre)
    if said is not None:
        return "end" if said[0] in ("until", "before") else "start"
    return "start" if _FROM.search(pre) else None


# the longer phrases first: 'no later than', 'not after', 'on or before' end in the words of 'later than',
# 'after' and 'before', and mean the opposite (or the day itself too)
_OPERATORS = (("until", _UNTIL), ("since", _SINCE), ("after", _AFTER), ("before", _BEFORE))


def _operator_words(pre: str) -> tuple[str, re.Match[str]] | None:
    """The operator the words just before a date say ('after', 'before', 'until', 'since'), with its words."""
    for operator, words in _OPERATORS:
        if m := words.search(pre):
            return operator, m
    return None


def read_dates(text: str, today: dt.date, future: bool = False) -> tuple[list[DateMention], list[ImpossibleDate]]:
    """find_dates, and where the text writes a date that is none: a wrong date said is asked about, never read
    as no date (a range's defaults would answer for all time)."""
    parser = _Parser(text, today, future)
    bases = parser.parse()
    low = text.lower()
    out: list[DateMention] = []
    i = 0
    while i < len(bases):
        cur = bases[i]
        nxt = bases[i + 1] if i + 1 < len(bases) else None
        if nxt is not None:
            gap = low[cur.span[1] : nxt.span[0]]
            if not gap.strip() and (led := _LED_BY_RANGE_WORD.match(low, nxt.span[0], nxt.span[1])):
                gap += led.group()  # a day without its month is read with its preposition: 'to the 6th'
            pre = before(low, cur.span[0], 12)
            joined = _RANGE_GAP.match(gap) and (gap.strip() not in ("and",) or re.search(r"between\s*$", pre))
            if joined and gap.strip().startswith("-") and cur.grain == "year" and nxt.grain == "year":
                joined = True
            if joined:
                first, last = _in_order(*_placed_ends(cur, nxt))
                if first.start <= last.end:
                    span = (_operator_start(low, cur.span[0]), nxt.span[1])
                    said = text[span[0] : span[1]]
                    out.append(
                        DateMention(
                            first.start,
                            last.end,
                            "span",
                            span,
                            said,
                            "between",
                            first.time,
                            last.time,
                            first.year_given or last.year_given,
                        )
                    )
                    i += 2
                    continue
        elif (opened := _operator_start(low, cur.span[0])) < cur.span[0] and _DANGLING.match(low[cur.span[1] :]):
            # 'between March 1st and' (the message ends there): where the range starts; its end is asked for
            span = (opened, cur.span[1])
            out.append(
                DateMention(
                    cur.start, None, "open", span, text[span[0] : span[1]], "between", cur.time, None, cur.year_given
                )
            )
            i += 1
            continue
        out.append(_apply_operator(text, low, cur))
        i += 1
    return out, [ImpossibleDate(span, _bound_before(low, span[0])) for span in parser.impossible()]


def _placed_ends(cur: Base, nxt: Base) -> tuple[Base, Base]:
    """A range one of whose ends is said with less (a weekday alone, a day without its month), placed by the
    other end: each read alone against today lands where its own rule says ('from Monday' the last one,
    'Wednesday' the coming one: a week apart on a Friday; 'March 4th' last year, 'the 6th' last month). The
    vaguer end is the nearest such day after the start ('from Monday to Wednesday', 'March 4th to the 6th')
    or before the end ('Monday to March 6th', 'from the 4th to the 6th of March'); the same weekday twice is
    a week. Two days without their months stay as read (the same month unless said the wrong way round)."""
    if cur.grain != "day" or nxt.grain != "day":
        return cur, nxt
    first, last = _vagueness(cur), _vagueness(nxt)
    if last > first or last == first == _WEEKDAY_ALONE:
        day = _after(cur.start, nxt)
        return cur, dataclasses.replace(nxt, start=day, end=day, year_given=cur.year_given)
    if first > last:
        day = _before(nxt.start, cur)
        return dataclasses.replace(cur, start=day, end=day, year_given=nxt.year_given), nxt
    return cur, nxt


_WEEKDAY_ALONE = 2


def _vagueness(base: Base) -> int:
    return _WEEKDAY_ALONE if base.weekday else 0 if base.month_given else 1


def _after(start: dt.date, end: Base) -> dt.date:
    """The first day after `start` that `end` names (its weekday, or its day of the month)."""
    if end.weekday:
        return start + dt.timedelta(days=(end.start.weekday() - start.weekday()) % 7 or 7)
    month = start.replace(day=1)
    while True:
        with contextlib.suppress(ValueError):  # a month without that day ('the 31st')
            if (day := month.replace(day=end.start.day)) > start:
                return day
        month = add_months(month, 1)


def _before(end: dt.date, start: Base) -> dt.date:
    """The last day before `end` that `start` names (its weekday, or its day of the month)."""
    if start.weekday:
        return end - dt.timedelta(days=(end.weekday() - start.start.weekday()) % 7 or 7)
    month = end.replace(day=1)
    while True:
        with contextlib.suppress(ValueError):
            if (day := month.replace(day=start.start.day)) < end:
                return day
        month = add_months(month, -1)


def _in_order(cur: Base, nxt: Base) -> tuple[Base, Base]:
    """The two ends of 'between X and Y' as meant: X takes Y's year when it has none. X after Y is either the
    year before (X said without a year: 'from December 20 to January 5') or the two said the wrong way round
    ('between June 10 and June 1', 'between 2024-01-31 and 2024-01-01'): the shorter of the two ranges."""
    first = cur
    if not cur.year_given and nxt.year_given:
        with contextlib.suppress(ValueError):  # February 29th in a year without one: as read
            first = _with_year(cur, nxt.start.year)
    if first.start <= nxt.end:
        return first, nxt
    readings = [(nxt, first)]  # swapped
    if not cur.year_given:
        with contextlib.suppress(ValueError):  # February 29th has no year before
            readings.append((_with_year(first, first.start.year - 1), nxt))
    return min(readings, key=lambda pair: pair[1].end - pair[0].start)


def _operator_start(low: str, start: int) -> int:
    m = re.search(r"(?:between|from)\s*$", before(low, start, 12))
    return start - len(m.group()) if m else start


def _on_holiday(name: str, day: dt.date, weekend: bool, span: Span, year_given: bool) -> Base:
    """A holiday on `day`, or its weekend."""
    start, end = weekend_of(day) if weekend else (day, day)
    grain = "span" if start != end else "day"
    return Base(start, end, grain, span, year_given, day.month, day.day if start == end else None, holiday=name)


def _with_year(base: Base, year: int) -> Base:
    if base.holiday is not None:  # Easter is on another date each year
        return _on_holiday(base.holiday, holiday(base.holiday, year), base.grain == "span", base.span, True)
    if base.grain == "month" and base.month:
        return Base(dt.date(year, base.month, 1), month_end(year, base.month), "month", base.span, True, base.month)
    if base.grain == "day" and base.month and base.day:
        value = dt.date(year, base.month, base.day)
        return Base(value, value, "day", base.span, True, base.month, base.day)
    return base


def _apply_operator(text: str, low: str, base: Base) -> DateMention:
    pre = before(low, base.span[0], 24)
    spec: tuple[str | None, dt.date | None, dt.date | None, re.Match[str] | None]
    cue = _operator_words(pre)
    if cue is not None and cue[0] == "after":
        spec = ("after", base.end + dt.timedelta(days=1), None, cue[1])
    elif cue is not None and cue[0] == "before":
        spec = ("before", None, base.start - dt.timedelta(days=1), cue[1])
    elif cue is not None and cue[0] == "until":
        spec = ("until", None, base.end, cue[1])
    elif cue is not None:
        spec = ("since", base.start, None, cue[1])
    elif (m := _FROM.search(pre)) and (base.grain == "day" or _ONWARDS.match(low[base.span[1] :])):
        spec = ("since", base.start, None, m)  # 'from March 3' starts there; 'orders from 2023' are in 2023
    elif _LATER_AFTER.match(low[base.span[1] :]):
        spec = ("since", base.start, None, None)  # 'April 1st, 2024 or later'
    elif _EARLIER_AFTER.match(low[base.span[1] :]):
        spec = ("until", None, base.end, None)  # '2023 or earlier'
    else:
        spec = ("between" if base.ends else None, base.start, base.end, None)
    operator, start, end, match = spec
    span_start = (
        base.span[0] - len(match.group()) + (len(match.group()) - len(match.group().lstrip()))
        if match
        else base.span[0]
    )
    if base.ends:
        span_start = _operator_start(low, base.span[0])  # 'between 1 and 10 March', 'from Jan to Mar'
    span = (span_start, base.span[1])
    grain = base.grain if operator in (None, "between") else "open"
    start_time = base.time if operator in (None, "since", "after") else None
    end_time = base.time if operator in (None, "until", "before") else None
    said = text[span[0] : span[1]]
    return DateMention(start, end, grain, span, said, operator, start_time, end_time, base.year_given)
