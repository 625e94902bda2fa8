"""Read a marked piece of text as a parameter's value: an annotated example's `[text](parameter)` at load,
a span the learned extractor tagged at question time. One reader for both, so an annotation that loads
is one the extractor can turn into a value.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from ..templates import ParameterSpec, ParameterType
from .candidates import item_type
from .choices import EXACT_ONLY, find_choices, phrases_for
from .coercion import InvalidValue, canonical_allowed, coerce
from .dates import find_dates
from .numbers import find_numbers
from .times import as_value, find_times
from .value_list import ValueList

_LOAD_DAY = dt.date(2024, 6, 15)  # annotations are checked against a fixed day: only their form matters


class Unreadable(ValueError):
    """The text cannot be read as a valid value of the parameter; the message is safe to show."""


class NotOfType(Unreadable):
    """The readers find no value of the parameter's type in the text."""


def read_value(
    spec: ParameterSpec, text: str, today: dt.date, stored: ValueList | None = None, future: bool = False
) -> Any:
    """The typed, validated value that `text` (the whole marked piece) stands for; raises Unreadable.

    Constraints are enforced as for any extracted value (see `typed_value` for the reading itself)."""
    value = typed_value(spec, text, today, stored, future)
    try:
        return canonical_allowed(spec, coerce(spec, value))
    except InvalidValue as exc:
        raise Unreadable(f"'{text}' does not fit {spec.name}: {exc}") from None


def typed_value(
    spec: ParameterSpec, text: str, today: dt.date, stored: ValueList | None = None, future: bool = False
) -> Any:
    """What `text` reads as in the parameter's type, before its constraints: a closed list (allowed values,
    aliases, a values_from list) maps the text onto its canonical value, free text stays as written, numbers
    and dates are read. Raises Unreadable when the text is not of the type at all."""
    kind = item_type(spec)
    value: Any = None
    if kind in (ParameterType.STRING, ParameterType.ENUM) and (spec.allowed_values or spec.aliases or stored):
        value = _from_list(spec, text, stored)
        if value is None and spec.allowed_values:
            raise Unreadable(f"'{text}' is not one of the values of {spec.name}")
    if value is None:
        value = _by_type(kind, text, today, future)
    return [value] if spec.type is ParameterType.ARRAY else value


def check_annotation(spec: ParameterSpec, text: str) -> str | None:
    """Why a marked value cannot fill its parameter, or None (the load-time check of annotations).

    A mark is refused when it is not of its parameter's type at all ('boston' for a date), or when the
    value it reads as breaks the parameter's constraints ('twelve' where at most 9 are allowed). A mark
    the readers cannot turn into one exact value but that plainly is of the type is accepted: a part of
    the day for a time ('tonight', 'early morning'), 'this weekend' or 'fifteenth' for a date, a 24-hour
    '1700': it still teaches the learned extractor where such values are."""
    try:
        read_value(spec, text, _LOAD_DAY)
    except NotOfType as exc:
        words = _TYPE_WORDS.get(item_type(spec))
        return None if words is not None and words.search(text) else str(exc)
    except Unreadable as exc:
        return str(exc)
    return None


_NUMBER_WORDS = (
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\w+teen|twenty|thirty|forty|fifty|"
    r"sixty|seventy|eighty|ninety|hundred|thousand|dozen|couple|first|second|third|\w+th)\b"
)
# what a marked value of each type must at least contain to be of that type
_TYPE_WORDS = {
    ParameterType.INTEGER: re.compile(_NUMBER_WORDS, re.I),
    ParameterType.NUMBER: re.compile(_NUMBER_WORDS, re.I),
    ParameterType.DATE: re.compile(
        _NUMBER_WORDS + r"|\b(?:today|tonight|tomorrow|yesterday|week|weekend|month|year|\w+day|"
        r"jan\w*|feb\w*|mar\w*|apr\w*|may|jun\w*|jul\w*|aug\w*|sep\w*|oct\w*|nov\w*|dec\w*)\b",
        re.I,
    ),
    ParameterType.TIME: re.compile(
        r"\d|\b(?:am|pm|a\.m|p\.m|noon|midnight|morning|afternoon|evening|night|tonight|midday|o'clock|"
        r"early|late|breakfast|lunch|dinner|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b",
        re.I,
    ),
}
_TYPE_WORDS[ParameterType.DATETIME] = re.compile(
    _TYPE_WORDS[ParameterType.DATE].pattern + "|" + _TYPE_WORDS[ParameterType.TIME].pattern, re.I
)


def _from_list(spec: ParameterSpec, text: str, stored: ValueList | None) -> Any:
    """The value a marked text names as a whole (a listed code in any case: the mark says it is one)."""
    phrases = phrases_for(spec.allowed_values, spec.aliases, stored)
    whole = (0, len(text))
    for match in find_choices(text, phrases, EXACT_ONLY):
        if match.span == whole and match.extractor in ("allowed_values", "alias", "values_from", "values_from_alias"):
            return match.value
    return None


def _by_type(kind: ParameterType, text: str, today: dt.date, future: bool = False) -> Any:
    match kind:
        case ParameterType.INTEGER | ParameterType.NUMBER:
            numbers = find_numbers(text)
            if not numbers:
                raise NotOfType(f"'{text}' is not a number")
            return numbers[0].value
        case ParameterType.DATE | ParameterType.DATETIME:
            dates = [d for d in find_dates(text, today, future) if d.start is not None or d.end is not None]
            if not dates:
                raise NotOfType(f"'{text}' is not a date")
            day = dates[0].start or dates[0].end
            assert day is not None
            if kind is ParameterType.DATETIME:
                return dt.datetime.combine(day, dates[0].start_time or dt.time(0, 0)).isoformat()
            return day.isoformat()
        case ParameterType.BOOLEAN:
            return True  # a marked feature ('[vegetarian](has_vegetarian_options)') is asked for
        case ParameterType.TIME:
            times = [t for t in find_times(text) if t.clock and (t.start or t.end)]
            if not times:
                raise NotOfType(f"'{text}' is not a time of day")
            clock = times[0].start or times[0].end  # 'by 8 pm' for a pickup time: 20:00
            assert clock is not None
            return as_value(clock)
        case _:
            return text
