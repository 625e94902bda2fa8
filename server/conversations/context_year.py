"""A follow-up's month said without its year, or a year said against another ('the year before'), is in the
year the conversation is about.

Read alone, 'March' is the most recent March (or the next one, for bookings). After 'monthly revenue for
2024', 'same for March' means March 2024, and after 'orders between 2024-03-01 and 2024-03-31', 'what about
April?' means April 2024: the follow-up's values from such a month (a date, or a year parameter) move to the
year of the values carried. 'last March', 'this April' and the like stay where today puts them, and a day
said without its month ('the 5th') is left alone. 'and the year before?' after revenue for 2023 is 2022, 'the
following year' 2024: those words count from the conversation's year, not from today.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from ..params.base import Extraction
from ..params.date_words import MONTH
from ..params.dates import find_dates, month_end
from ..params.roles import Role, role_of
from ..params.text import Span, overlaps
from ..templates import ParameterSpec, ParameterType

_MONTH_OR_QUARTER = re.compile(rf"\b(?:{MONTH}|q[1-4]|quarter)\b", re.IGNORECASE)


def in_context_year(
    given: dict[str, Any],
    reply: Extraction,
    message: str,
    earlier: Mapping[str, Any],
    specs: Mapping[str, ParameterSpec],
) -> dict[str, Any]:
    """`given` with the values read from a month said without its year moved to the earlier values' year."""
    year = context_year(earlier, specs)
    if year is None:
        return given
    yearless = _yearless_months(message)
    if not yearless:
        return given
    spans = {step.name: step.span for step in reply.trace if step.span is not None}
    out = dict(given)
    for said in yearless:  # the values of one mention move together ('November to February' keeps its span)
        names = [n for n in given if n in specs and spans.get(n) is not None and overlaps(spans[n], said)]
        first = min((d.year for n in names if (d := _date(given[n])) is not None), default=None)
        shift = year - first if first is not None else 0
        for name in names:
            out[name] = _moved(given[name], specs[name], year, shift)
    return out


_WHOLE = re.compile(r"\b(?:all|whole|entire|full|calendar)\b", re.IGNORECASE)


def in_context_period(
    given: dict[str, Any], message: str, earlier: Mapping[str, Any], specs: Mapping[str, ParameterSpec]
) -> dict[str, Any]:
    """`given` with a whole year said for a range of dates ('and in 2024?', 'same for last year') narrowed to
    the part of a year the earlier range was: after the orders between March and May 2025 it is March to May
    2024, not all of 2024 ('all of 2024', 'the whole year' ask for all of it)."""
    dates = [n for n in given if n in specs and specs[n].type is ParameterType.DATE]
    starts = [n for n in dates if role_of(specs[n]) is Role.START]
    ends = [n for n in dates if role_of(specs[n]) is Role.END]
    if len(starts) != 1 or len(ends) != 1 or _WHOLE.search(message) or not _years_only(message):
        return given
    a, b = starts[0], ends[0]
    new_start, new_end, old_start, old_end = (_date(v) for v in (given[a], given[b], earlier.get(a), earlier.get(b)))
    if new_start is None or new_end is None or old_start is None or old_end is None:
        return given
    if not _whole_year(new_start, new_end) or old_start.year != old_end.year or _whole_year(old_start, old_end):
        return given
    shift = new_start.year - old_start.year
    return {
        **given,
        a: _moved(earlier[a], specs[a], new_start.year, shift),
        b: _moved(earlier[b], specs[b], new_end.year, shift),
    }


def _years_only(message: str) -> bool:
    """The message names a year and nothing finer ('and in 2024?', 'same for last year'; not 'from january to
    december', not '2024-01-01 to 2024-12-31')."""
    mentions = find_dates(message, dt.date.today())  # which words name a year does not depend on today
    return bool(mentions) and all(m.grain == "year" for m in mentions)


def _whole_year(start: dt.date, end: dt.date) -> bool:
    return start.year == end.year and (start.month, start.day, end.month, end.day) == (1, 1, 12, 31)


# a year said against the one the conversation is about; not 'the year before last' (dates.py reads it), 'the
# year after next', 'the year before 2025'
_YEAR_AGAINST = re.compile(
    r"\b(?:(?:the|a|one)\s+)?(?:year\s+(?P<before>before|earlier|prior)|(?P<previous>previous|prior|"
    r"preceding)\s+year|year\s+(?:after|later)|following\s+year)\b(?!\s+(?:last|next|\d|that|this|then))",
    re.IGNORECASE,
)


def years_against_context(text: str, earlier: Mapping[str, Any], specs: Mapping[str, ParameterSpec]) -> str:
    """`text` with 'the year before', 'the previous year', 'the following year' written as the year they
    name, counted from the year the earlier values are about (unchanged without one)."""
    year = context_year(earlier, specs)
    if year is None:
        return text

    def written(m: re.Match[str]) -> str:
        return str(year - 1 if m["before"] or m["previous"] else year + 1)

    return _YEAR_AGAINST.sub(written, text)


def context_year(earlier: Mapping[str, Any], specs: Mapping[str, ParameterSpec]) -> int | None:
    """The one year the earlier values are about: a year parameter's, or their dates' when they share one."""
    years = set()
    for name, value in earlier.items():
        spec = specs.get(name)
        if spec is None or value is None:
            continue
        if role_of(spec) is Role.YEAR and isinstance(value, int):
            years.add(value)
        elif spec.type is ParameterType.DATE and (day := _date(value)) is not None:
            years.add(day.year)
    return years.pop() if len(years) == 1 else None


def _yearless_months(message: str) -> list[Span]:
    """Where the message names a month or a quarter without its year."""
    out = []
    for mention in find_dates(message, dt.date.today()):  # which words say no year does not depend on today
        said = message[mention.span[0] : mention.span[1]]
        if not mention.year_said and _MONTH_OR_QUARTER.search(said):  # 'last March' says its year (dates.py)
            out.append(mention.span)
    return out


def _moved(value: Any, spec: ParameterSpec, year: int, shift: int) -> Any:
    """A year parameter's value becomes `year`; a date moves `shift` years, a month's last day staying its
    last ('until February' is the 29th in a leap year)."""
    if role_of(spec) is Role.YEAR and isinstance(value, int):
        return year
    day = _date(value)
    if day is None or shift == 0:
        return value
    target = day.year + shift
    last = month_end(day.year, day.month) == day
    moved = month_end(target, day.month) if last else day.replace(year=target)  # only February's end varies
    return moved.isoformat() if isinstance(value, str) else moved


def _date(value: Any) -> dt.date | None:
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value[:10])
        except ValueError:
            return None
    return None
