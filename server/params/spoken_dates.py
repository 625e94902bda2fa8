"""How people say dates in conversation, on top of dates.py's written forms: 'the 5th', '8th of this month',
'Friday next week', 'the day after tomorrow', 'Wednesday April 6th' (the weekday joins the date) and
decades ('the fifties', 'the 80s', "'70s", 'the 1990s'), which are ten-year ranges.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from functools import partial
from typing import Protocol

from .date_words import DAY, WEEKDAY, WEEKDAYS, Base, add_months
from .spelled import Digitised
from .text import before


class DateReader(Protocol):
    """What these rules need of the date parser: the question, its digitised form, today, and scanning."""

    text: str
    low: str
    today: dt.date
    future: bool
    digits: Digitised

    def scan(self, pattern: str, build: Callable[[re.Match[str]], Base | None]) -> None: ...


def scan_spoken(p: DateReader) -> None:
    """Every conversational form, each pattern once per question."""
    after_tomorrow = p.today + dt.timedelta(days=2)
    p.scan(
        r"\b(?:the\s+)?day\s+after\s+tomorrow\b",
        lambda m: Base(after_tomorrow, after_tomorrow, "day", m.span()),
    )
    p.scan(
        rf"\b(?:the\s+)?{DAY}\s+of\s+(?P<which>this|next|last|the)\s+(?:coming\s+)?month\b",
        partial(_day_of_month, p),
    )
    p.scan(
        r"\b(?P<prep>(?:on|for|by|until|till|since|from|after|before|through|to)\s+)?the\s+"
        r"(?P<day>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)\b" + _NOT_A_POSITION,
        partial(_day_of_month, p),
    )
    p.scan(
        rf"\b{WEEKDAY}\s+(?:of\s+)?(?P<which>this|next|last)\s+week\b|"
        rf"\b(?P<which2>this|next|last)\s+week(?:'s)?\s+(?:on\s+)?(?P<weekday2>{'|'.join(WEEKDAYS)})\b",
        partial(_weekday_of_week, p),
    )
    the = r"(?:\bthe\s+)?"
    p.scan(the + r"(?<![\w$])(?P<century>19|20)(?P<decade>\d)0['’]?s\b", partial(_decade, p))
    p.scan(the + r"(?<![\w$])['’]?(?P<decade>\d)0['’]?s\b", partial(_decade, p))
    p.scan(the + r"\b(?:19\s+)?(?P<word>" + "|".join(_DECADE_WORDS) + r")\b", partial(_decade, p))


def _day_of_month(p: DateReader, m: re.Match[str]) -> Base | None:
    """'the 5th', 'on the twelfth', '8th of this month', 'the 3rd of next month'."""
    which = m.groupdict().get("which")
    said = p.text[slice(*p.digits.original(m.span("day")))]
    alone = which is None and m.groupdict().get("prep") is None  # 'on the 8th if you can' is a day; 'the 8th'
    if alone and (not any(c.isdigit() for c in said) or not _CONNECTOR_AFTER.match(p.low[m.end() :])):
        return None  # alone only when written in digits and followed by a connector ('the 12th at 3 pm') or the end
    day = int(m["day"])
    if which in ("this", "the"):
        first = p.today.replace(day=1)
    elif which in ("next", "last"):
        first = add_months(p.today.replace(day=1), 1 if which == "next" else -1)
    else:  # the most recent such day (or the next, reading ahead), today included, like a month and day
        first = p.today.replace(day=1)
        if p.future and day < p.today.day:
            first = add_months(first, 1)
        elif not p.future and day > p.today.day:
            first = add_months(first, -1)
    value = first.replace(day=day)  # ValueError ('the 31st' of a 30-day month) blocks the words
    return Base(value, value, "day", m.span(), year_given=False, month=value.month, day=day, month_given=bool(which))


def _weekday_of_week(p: DateReader, m: re.Match[str]) -> Base:
    """'Friday next week', 'next week on Friday', 'Monday of this week' (weeks start on Monday)."""
    which, name = m["which"] or m["which2"], m["weekday"] or m["weekday2"]
    monday = p.today - dt.timedelta(days=p.today.weekday())
    monday += dt.timedelta(weeks={"this": 0, "next": 1, "last": -1}[which])
    value = monday + dt.timedelta(days=WEEKDAYS[name])
    return Base(value, value, "day", m.span())


def _decade(p: DateReader, m: re.Match[str]) -> Base | None:
    """'the 1990s', 'the 80s', "'70s", 'the fifties': ten years. A two-digit decade is of the 1900s, but
    for the 00s and 10s (2000-2019); 'in their 40s' is an age, not a decade."""
    if _AGE_BEFORE.search(before(p.low, m.start(), 20)):
        return None
    groups = m.groupdict()
    if groups.get("word"):
        year = 1900 + _DECADE_WORDS[groups["word"]]
    elif groups.get("century"):
        year = int(groups["century"]) * 100 + int(groups["decade"]) * 10
    else:
        tens = int(groups["decade"]) * 10
        year = (2000 if tens < 20 else 1900) + tens
    return Base(dt.date(year, 1, 1), dt.date(year + 9, 12, 31), "decade", m.span())


_DECADE_WORDS = {
    "twenties": 20,
    "thirties": 30,
    "forties": 40,
    "fifties": 50,
    "sixties": 60,
    "seventies": 70,
    "eighties": 80,
    "nineties": 90,
}
_AGE_BEFORE = re.compile(r"\b(?:their|his|her|my|your|our|its)\s+(?:early\s+|mid\s+|late\s+)?$")  # 'in their 40s'
# after 'the 5th' nothing that makes it something else than a day: 'the 3rd floor', 'the 2nd quarter', 'the 1st 10'
_NOT_A_POSITION = (  # 'the 3rd floor', 'the 2nd quarter', 'the 1st 10', 'on the 4th of the list': a position
    r"(?!\s*\d)(?!\s+(?:quarter|half|week|weekend|month|year|floor|level|time|place|row|column|page|round|"
    r"grade|edition|century|anniversary|street|avenue|item|one|ones|person|people|of\s+(?!this|next|last))s?\b)"
)
_CONNECTOR_AFTER = re.compile(
    r"\s*(?:$|[,.?!;]|(?:at|for|and|or|to|through|thru|until|till|in|on|from|please|of|instead|then|too|works?|"
    r"would|will|is|if|thanks|thank|ok|okay|maybe|perhaps)\b)"
)  # 'the 12th at 3 pm', 'the 10th instead', 'the 5th works


def weekdays_before_dates(low: str, found: list[Base]) -> list[Base]:
    """'Wednesday April 6th', 'Friday, the 13th': the date says the day; the weekday joins its span."""
    out: list[Base] = []
    for base in found:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.weekday
            and base.grain == "day"
            and base.day is not None
            and re.fullmatch(r"\s*,?\s*(?:the\s+)?", low[prev.span[1] : base.span[0]])
        ):
            out[-1] = base
            base.span = (prev.span[0], base.span[1])
            continue
        out.append(base)
    return out
