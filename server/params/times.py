"""Times of day in a question: '3 pm', '15:00', 'noon', 'half past five', 'after 3 pm', 'in the morning'.

Every mention is a start and an end time of day: a clock time is both ('at 3:30 pm'), 'after 3 pm' has only
a start, 'before noon' only an end, 'between 5 and 7 pm' both (the bare 5 takes the pm of the 7), and a
part of the day is the range PERIODS gives it. Times are continuous, so 'after 3 pm' starts at 15:00 (a
date 'after March 5' starts on March 6). A bare hour with nothing to say am or pm ('at 7') is not read:
the question is asked rather than guessed. Patterns run on the digitised question (spelled.py), so 'half
past five' and 'seven thirty pm' need no words of their own.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from .dates import DateMention
from .spelled import Digitised, digitised
from .text import Span, overlaps

END_OF_DAY = dt.time(23, 59)  # where 'before midnight', 'at night' and 'tonight' end

# What a part of the day stands for, [start, end]: 'in the morning' is 06:00-12:00. One table for the ranges
# and for the am/pm a part of the day gives a clock time ('7 in the evening' is 19:00).
PERIODS: dict[str, tuple[dt.time, dt.time]] = {
    "morning": (dt.time(6), dt.time(12)),
    "afternoon": (dt.time(12), dt.time(17)),
    "evening": (dt.time(17), dt.time(21)),
    "night": (dt.time(21), END_OF_DAY),
    "tonight": (dt.time(17), END_OF_DAY),
}

_MER = r"(?P<mer>[ap])(?:\.\s?m\b\.?|\s?m\b)"  # 'pm', 'PM', 'p.m.', 'a.m' (a sentence's full stop stays out)
_PERIOD = r"(?P<period>morning|afternoon|evening|night|tonight)"
_H = r"(?<![\d:.,/])(?P<h>[01]?\d|2[0-3])"
_WITH_PERIOD = r"(?:\s+(?:in\s+the|at|this)\s+" + _PERIOD + r"|\s+(?P<tonight>tonight))"  # '7 in the evening'
_AFTER_PERIOD = _WITH_PERIOD + "?"
# the words after which a bare part of the day is a time: 'tomorrow morning', 'Friday night' (not 'movie night')
_DAY_BEFORE = re.compile(
    r"\b(?:today|tomorrow|yesterday|every|each|one|early|late|sunday|monday|tuesday|wednesday|thursday|friday|"
    r"saturday|sun|mon|tue|wed|thu|fri|sat)\s+$"
)
_NOT_NOUN = r"(?!\s+(?!(?:on|at|in|for|and|or|to|till|until|by|from|around|please|tomorrow|today|this|next)\b)[a-z])"


@dataclass
class TimeMention:
    start: dt.time | None
    end: dt.time | None
    span: Span
    text: str
    operator: str | None = None  # after | before | between | None
    clock: bool = True  # said as a time ('3 pm', 'noon'), not only as a part of the day ('in the morning')
    period: str | None = None  # the part of the day named, if any

    @property
    def point(self) -> bool:
        """One clock time, no operator: what a single time parameter takes."""
        return self.clock and self.operator is None and self.start is not None and self.start == self.end


@dataclass
class _Atom:
    """One time expression before operators and ranges, in the digitised text's positions."""

    start: dt.time
    end: dt.time
    span: Span
    clock: bool
    period: str | None = None
    meridiem: bool = False  # am/pm or a part of the day said it (a bare range start may borrow it)


def _hm(h: int, minute: int, mer: str | None, period: str | None) -> dt.time | None:
    """An hour and minute with the am/pm or the part of the day said with them; None if not a time."""
    if mer:
        if not 1 <= h <= 12:
            return None
        h = h % 12 + (12 if mer == "p" else 0)
    elif (period in ("afternoon", "evening", "tonight") and h < 12) or (period == "night" and 5 <= h < 12):
        h += 12
    elif period in ("night", "morning") and h == 12:  # 'twelve in the morning' is 12 am
        h = 0
    return dt.time(h, minute) if 0 <= h <= 23 and 0 <= minute <= 59 else None


# a clock time said without am or pm at a meal: after noon for dinner ('dinner at half past 7' is 19:30, 'a table
# tonight at 8:30' 20:30; 'one night' at a hotel is no evening), from 11 to 4 for lunch ('lunch at 1' is 13:00),
# as said for breakfast ('breakfast at 9'); a bare hour after 'at' is read then too. A question that names
# meals of two kinds, or says am, is left as said
_MEALS = {
    "dinner": re.compile(r"\b(?:dinner|dinnertime|supper|tonight|evening)\b"),
    "lunch": re.compile(r"\b(?:lunch|lunchtime)\b"),
    "breakfast": re.compile(r"\b(?:breakfast|brunch|(?<!good\s)morning)\b"),  # 'good morning' is a greeting
}
_SAID_AM = re.compile(r"\b(?:am|a\.m)\b|\b(?:noon|midday)\b")
# what a bare number counts rather than a time: 'at 8 people', 'by 2 tickets', 'at 7 pm' (its own reader's)
_NOT_AN_HOUR = (
    r"(?:people|persons|guests|adults|kids|children|seats|tickets|of\b|[ap]\.?m\b|o[’'\"]?\s?clock|in\s+the\s+morning)"
)


def _meal_hour(meal: str, h: int) -> int | None:
    """The hour of the day a bare or am/pm-less hour `h` is at this meal (None: not one of its hours)."""
    if meal == "dinner":
        return h + 12 if 4 <= h <= 11 else None
    if meal == "lunch":
        return h if h in (11, 12) else h + 12 if 1 <= h <= 4 else None
    if meal == "breakfast":
        return h if 5 <= h <= 11 else None
    return None


def _meal_of(low: str) -> str | None:
    """The one kind of meal a question is about, if it names one and says no am."""
    meals = [name for name, pattern in _MEALS.items() if pattern.search(low)]
    return meals[0] if len(meals) == 1 and not _SAID_AM.search(low) else None


def _at_the_meal(atom: _Atom, meal: str) -> _Atom:
    if not atom.clock or atom.meridiem or atom.start != atom.end:
        return atom
    hour = _meal_hour(meal, atom.start.hour)
    if hour is None:
        return atom
    time = atom.start.replace(hour=hour)
    return replace(atom, start=time, end=time, meridiem=True)


def _weight(atom: _Atom) -> tuple[bool, int]:
    """Which reading wins an overlap: a clock time over a part of the day, then the longer one."""
    return atom.clock, atom.span[1] - atom.span[0]


# 19xx and 20xx are years ('between 2023 and 2024', 'songs after 2000'), never a clock
_MILITARY = (
    r"\b(?:at|by|after|before|around|about|until|till|leaving|leave|leaves|arriving|arrive|arrives|departing|"
    r"departs|landing|from|between|and|to)\s+(?P<clock>(?!19|20)(?P<hh>[01]\d|2[0-3])(?P<mm>[0-5]\d))\b"
    r"(?![-/.]\d|\s*(?:dollars?|usd|euros?|people|persons|miles|km|feet|ft|rows|items|\$))"
)


class _Scanner:
    """Collects clock times and parts of the day; the longest match wins where patterns overlap."""

    def __init__(self, low: str, bare_24h: bool = True) -> None:
        self.low = low
        self.bare_24h = bare_24h
        self.found: list[_Atom] = []

    def scan(self, pattern: str, build: Callable[[re.Match[str]], _Atom | None]) -> None:
        for m in re.finditer(pattern, self.low):
            atom = build(m)
            if atom is None:
                continue
            clash = [a for a in self.found if overlaps(a.span, atom.span)]
            if any(_weight(a) >= _weight(atom) for a in clash):
                continue
            self.found = [a for a in self.found if a not in clash] + [atom]

    def atoms(self) -> list[_Atom]:
        """Every pattern once, most specific first; the first three read SGD's own phrasing."""
        # 'morning 11:15', 'afternoon 12:30', 'evening 7:30', 'afternoon 1' (SGD's own phrasing)
        period_first = _PERIOD + r"\s+(?:at\s+)?" + _H + r"(?:[:.](?P<mi>[0-5]\d))?" + _NOT_NOUN
        self.scan(period_first + r"(?!\s*(?:[:\d]|[ap]\.?m))", self._clock)
        self.scan(_H + r"[:.](?P<mi>[0-5]\d)\s*" + _MER + _AFTER_PERIOD, self._clock)  # '3:30pm', '3.30 p.m.'
        self.scan(_H + r":(?P<mi>[0-5]\d)(?::00)?(?![\d:])" + _AFTER_PERIOD, self._clock)  # '15:00', '9:45 at night'
        self.scan(_H + r"\s*" + _MER + _AFTER_PERIOD, self._clock)  # '3 pm', '11am'
        self.scan(_H + r"\s+(?P<mi>[0-5]\d)\s*" + _MER, self._clock)  # 'seven thirty pm'
        self.scan(_H + r"(?:\s+(?P<mi>[0-5]\d))?" + _WITH_PERIOD + r"\b", self._clock)  # '7 in the evening'
        oclock = r"\s+o[’'\"]?\s?clock\b"  # "7 o'clock", 'o"clock' (as SGD writes it)
        self.scan(_H + r"(?:\s+(?P<mi>[0-5]\d))?" + oclock + r"(?:\s*" + _MER + r")?" + _AFTER_PERIOD, self._clock)
        to_hour = r"\s+" + _H + r"(?:\s*" + _MER + r")?" + _AFTER_PERIOD
        self.scan(r"\b(?P<q>half|(?:a\s+)?quarter)\s+(?P<dir>past|after|to|till|before)" + to_hour, self._past)
        self.scan(r"\b(?P<m>[0-5]?\d)(?:\s+minutes?)?\s+(?P<dir>past)" + to_hour, self._past)  # '20 past 6'
        self.scan(r"\b(?P<m>[0-5]?\d)\s+minutes?\s+(?P<dir>to|till|before)" + to_hour, self._past)
        self.scan(r"\b(?:12\s+)?(?P<word>noon|midday|midnight)\b", self._word)
        # 24-hour clock without a colon, after a word that says a time follows ('leaving after 1700', 'at 0830')
        if self.bare_24h:
            self.scan(_MILITARY, self._military)
        self.scan(r"\b(?P<said>(?:in|during)\s+the\s+|this\s+|at\s+)?" + _PERIOD + r"\b", self._period)
        if (meal := _meal_of(self.low)) is not None:
            # a bare hour after 'at' at a meal: 'dinner at 8', 'lunch at 1' ('for 8' is a party of eight)
            cue = r"(?<!\bfor\s)\b(?:at|by|around)\s+"  # 'for around 8' is a party
            hour = _H + r"(?![\d:.,/%])(?!\s*" + _NOT_AN_HOUR + r")"
            self.scan(cue + hour, lambda m: self._meal_hour(m, meal))
            self.found = [_at_the_meal(a, meal) for a in self.found]
        return sorted(self.found, key=lambda a: a.span)

    def _meal_hour(self, m: re.Match[str], meal: str) -> _Atom | None:
        hour = _meal_hour(meal, int(m["h"]))
        if hour is None:
            return None
        time = dt.time(hour)
        return _Atom(time, time, m.span("h"), True, None, True)

    def _clock(self, m: re.Match[str]) -> _Atom | None:
        groups = m.groupdict()
        period = groups.get("period") or ("tonight" if groups.get("tonight") else None)
        mer = groups.get("mer")
        time = _hm(int(m["h"]), int(groups.get("mi") or 0), mer, period)
        if time is None:
            return None
        return _Atom(time, time, m.span(), True, period, bool(mer or period) or time.hour > 12)

    def _past(self, m: re.Match[str]) -> _Atom | None:
        """'half past 5', 'quarter to 7', '20 past 6', '10 minutes to 9'."""
        q = m.groupdict().get("q")
        minutes = 30 if q == "half" else 15 if q else int(m["m"])
        if minutes >= 60 or (q == "half" and m["dir"] not in ("past", "after")):
            return None
        base = _hm(int(m["h"]), 0, m["mer"], m["period"] or ("tonight" if m["tonight"] else None))
        if base is None:
            return None
        total = base.hour * 60 + (minutes if m["dir"] in ("past", "after") else -minutes)
        time = dt.time((total // 60) % 24, total % 60)
        return _Atom(time, time, m.span(), True, m["period"], bool(m["mer"] or m["period"]))

    def _military(self, m: re.Match[str]) -> _Atom:
        time = dt.time(int(m["hh"]), int(m["mm"]))
        return _Atom(time, time, m.span("clock"), True, None, True)

    def _word(self, m: re.Match[str]) -> _Atom:
        time = dt.time(12) if m["word"] in ("noon", "midday") else dt.time(0)
        return _Atom(time, time, m.span(), True, None, True)

    def _period(self, m: re.Match[str]) -> _Atom | None:
        period = m["period"]
        if period != "tonight" and not m["said"] and not _DAY_BEFORE.search(self.low[: m.start()]):
            return None  # 'movie night', 'Night Train': a bare part of the day needs 'in the', 'Friday', ...
        start, end = PERIODS[period]
        return _Atom(start, end, m.span(), False, period)


_AFTER_OP = re.compile(
    r"(?:\bafter|\blater than|\bfrom|\bsince|\bstarting(?:\s+at|\s+from)?|\bno earlier than|\bnot before|"
    r"\bat or after|\bany ?time after)\s*$"
)
_BEFORE_OP = re.compile(
    r"(?:\bbefore|\buntil|\btill|\btil|\bby|\bno later than|\bearlier than|\bnot after|\bup to|\bup until|"
    r"\bat or before|\bending(?:\s+at)?)\s*$"
)
_AFTER_POST = re.compile(r"^\s*(?:onwards?|or later|and later|or after|and after)\b")
_BEFORE_POST = re.compile(r"^\s*(?:or earlier|and earlier|or before|at the latest)\b")
_RANGE_GAP = re.compile(r"^\s*(?:and|to|until|till|through|-|–)\s*$")
_BARE_START = re.compile(  # 'between 5 and', 'from 9 to', '5-': the start of a range whose end says am or pm
    r"(?P<op>\bbetween|\bfrom)?\s*(?<![\d:])(?P<h>[01]?\d|2[0-3])(?::(?P<mi>[0-5]\d))?\s*"
    r"(?P<gap>and|to|until|till|-|–)\s*$"
)


def find_times(text: str, bare_24h: bool = True) -> list[TimeMention]:
    """Every time of day in `text` with operators and ranges applied, in order of appearance. `bare_24h`: a
    24-hour clock without a colon ('leaving after 1700') is read too; a question that asks for no time of day
    means an amount by it ('products between 1000 and 1500' are prices, not 10:00 to 15:00)."""
    d = digitised(text)
    atoms = _Scanner(d.text, bare_24h).atoms()
    out: list[TimeMention] = []
    i = 0
    while i < len(atoms):
        a = atoms[i]
        b = atoms[i + 1] if i + 1 < len(atoms) else None
        if b is not None and a.clock and b.clock and _joined(d.text, a, b):
            out.append(_mention(text, d, _range_start(d.text, a.span[0]), b.span[1], _ranged(a, b), b.end, "between"))
            i += 2
            continue
        out.append(_single(text, d, a))
        i += 1
    return out


def _joined(low: str, a: _Atom, b: _Atom) -> bool:
    """'3 pm to 5 pm', 'between noon and 2 pm', '9:00-17:00'."""
    gap = low[a.span[1] : b.span[0]]
    if not _RANGE_GAP.match(gap):
        return False
    return gap.strip() != "and" or bool(re.search(r"\bbetween\s*$", low[: a.span[0]]))


def _range_start(low: str, start: int) -> int:
    m = re.search(r"\b(?:between|from)\s*$", low[:start])
    return m.start() if m else start


def _ranged(a: _Atom, b: _Atom) -> dt.time:
    """A range's start borrows the pm of its end when it did not say: 'from 9:30 to 11 pm' starts at 21:30."""
    start = a.start
    if not a.meridiem and b.meridiem and start.hour < 12 and start.hour + 12 <= b.end.hour:
        start = start.replace(hour=start.hour + 12)
    return start


def _single(text: str, d: Digitised, a: _Atom) -> TimeMention:
    if not a.clock:
        return _mention(text, d, a.span[0], a.span[1], a.start, a.end, None, clock=False, period=a.period)
    pre, post = d.text[: a.span[0]], d.text[a.span[1] :]
    if (ranged := _bare_range(text, d, a, pre)) is not None:
        return ranged
    if op := _AFTER_OP.search(pre):
        return _mention(text, d, op.start(), a.span[1], a.start, None, "after", period=a.period)
    if op := _BEFORE_OP.search(pre):
        end = END_OF_DAY if a.end == dt.time(0) else a.end  # 'before midnight' ends the day
        return _mention(text, d, op.start(), a.span[1], None, end, "before", period=a.period)
    if op := _AFTER_POST.match(post):
        return _mention(text, d, a.span[0], a.span[1] + op.end(), a.start, None, "after", period=a.period)
    if op := _BEFORE_POST.match(post):
        return _mention(text, d, a.span[0], a.span[1] + op.end(), None, a.end, "before", period=a.period)
    return _mention(text, d, a.span[0], a.span[1], a.start, a.end, None, period=a.period)


def _bare_range(text: str, d: Digitised, a: _Atom, pre: str) -> TimeMention | None:
    """'between 5 and 7 pm', 'from 9 to 11:30 pm', '5-7pm': the bare start is a time because its end is."""
    bare = _BARE_START.search(pre)
    if bare is None or (bare["gap"] == "and" and bare["op"] != "between"):
        return None
    start = _hm(int(bare["h"]), int(bare["mi"] or 0), None, None)
    if start is None:
        return None
    borrowed = _ranged(_Atom(start, start, bare.span(), True), a)
    begin = bare.start("op") if bare["op"] else bare.start("h")
    return _mention(text, d, begin, a.span[1], borrowed, a.end, "between", period=a.period)


def _mention(
    text: str,
    d: Digitised,
    start: int,
    end: int,
    first: dt.time | None,
    last: dt.time | None,
    operator: str | None,
    *,
    clock: bool = True,
    period: str | None = None,
) -> TimeMention:
    span = d.original((start, end))
    return TimeMention(first, last, span, text[span[0] : span[1]], operator, clock, period)


_TIME_AFTER_DATE = re.compile(r"^\s*,?\s*(?:at|@|around|about|by|from)?\s*$")  # 'friday at 3 pm'
_TIME_BEFORE_DATE = re.compile(r"^\s*,?\s*(?:on|this|next)?\s*$")  # '3 pm on friday'


@dataclass
class DatedTime:
    """A time said with a date, and the words of both: 'friday at 3 pm'."""

    time: TimeMention
    span: Span
    text: str


def dated_times(text: str, dates: list[DateMention], times: list[TimeMention]) -> dict[int, DatedTime]:
    """The time said with each date (by the date mention's id), for a datetime parameter: 'friday at 3 pm',
    '3 pm on friday', 'tomorrow morning', 'tonight at 8'. A time said on its own goes with no date."""
    low = text.lower()
    out: dict[int, DatedTime] = {}
    for d in dates:
        for t in times:
            if t.span[0] >= d.span[1]:
                said = bool(_TIME_AFTER_DATE.match(low[d.span[1] : t.span[0]]))
            elif t.span[1] <= d.span[0]:
                said = bool(_TIME_BEFORE_DATE.match(low[t.span[1] : d.span[0]]))
            else:
                said = True  # 'tonight at 8': one expression read as a day and as a time
            if said:
                span = (min(d.span[0], t.span[0]), max(d.span[1], t.span[1]))
                out[id(d)] = DatedTime(t, span, text[span[0] : span[1]])
                break
    return out


def clock_value(text: str) -> dt.time | None:
    """`text` as one clock time if that is all it says ('15:30', '3:30 pm', 'noon', 'half past five')."""
    found = find_times(text.strip())
    if len(found) == 1 and found[0].point and found[0].span == (0, len(text.strip())):
        return found[0].start
    return None


def as_value(time: dt.time) -> str:
    """How a time parameter holds a time of day: 'HH:MM', 24-hour."""
    return time.strftime("%H:%M")
