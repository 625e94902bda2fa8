"""A follow-up's month said without its year is in the year the conversation is about.

Read alone, 'March' is the most recent March (or the next one, for bookings). After 'monthly revenue for
2024', 'same for March' means March 2024, and after 'orders between 2024-03-01 and 2024-03-31', 'what about
April?' means April 2024: the follow-up's values from such a month (a date, or a year parameter) move to the
year of the values carried. 'last March', 'this April' and the like stay where today puts them, and a day
said without its month ('the 5th') is left alone.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from ..params.base import Extraction
from ..params.date_words import MONTH
from ..params.dates import find_dates
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
    for name, value in given.items():
        spec, span = specs.get(name), spans.get(name)
        if spec is None or span is None or not any(overlaps(span, said) for said in yearless):
            continue
        out[name] = _moved(value, spec, year)
    return out


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


def _moved(value: Any, spec: ParameterSpec, year: int) -> Any:
    if role_of(spec) is Role.YEAR and isinstance(value, int):
        return year
    day = _date(value)
    if day is None:
        return value
    try:
        moved = day.replace(year=year)
    except ValueError:  # February 29th
        return value
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
