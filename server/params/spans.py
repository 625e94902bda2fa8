"""Read a marked piece of text as a parameter's value: an annotated example's `[text](parameter)` at load,
a span the learned extractor tagged at question time. One reader for both, so an annotation that loads
is one the extractor can turn into a value.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..templates import ParameterSpec, ParameterType
from .candidates import item_type
from .choices import EXACT_ONLY, find_choices, phrases_for
from .coercion import InvalidValue, canonical_allowed, coerce
from .dates import find_dates
from .numbers import find_numbers
from .value_list import ValueList

_LOAD_DAY = dt.date(2024, 6, 15)  # annotations are checked against a fixed day: only their form matters


class Unreadable(ValueError):
    """The text is not a value of the parameter's type; the message is safe to show."""


def read_value(spec: ParameterSpec, text: str, today: dt.date, stored: ValueList | None = None) -> Any:
    """The typed, validated value that `text` (the whole marked piece) stands for; raises Unreadable.

    A closed list (allowed values, aliases, a values_from list) maps the text onto its canonical value;
    free text stays as written. Constraints are enforced as for any extracted value."""
    kind = item_type(spec)
    value: Any = None
    if kind in (ParameterType.STRING, ParameterType.ENUM) and (spec.allowed_values or spec.aliases or stored):
        value = _from_list(spec, text, stored)
        if value is None and spec.allowed_values:
            raise Unreadable(f"'{text}' is not one of the values of {spec.name}")
    if value is None:
        value = _by_type(kind, text, today)
    if spec.type is ParameterType.ARRAY:
        value = [value]
    try:
        return canonical_allowed(spec, coerce(spec, value))
    except InvalidValue as exc:
        raise Unreadable(f"'{text}' does not fit {spec.name}: {exc}") from None


def check_annotation(spec: ParameterSpec, text: str) -> str | None:
    """Why a marked value cannot fill its parameter, or None (the load-time check of annotations)."""
    try:
        read_value(spec, text, _LOAD_DAY)
    except Unreadable as exc:
        return str(exc)
    return None


def _from_list(spec: ParameterSpec, text: str, stored: ValueList | None) -> Any:
    """The value a marked text names as a whole (a listed code in any case: the mark says it is one)."""
    phrases = phrases_for(spec.allowed_values, spec.aliases, stored)
    whole = (0, len(text))
    for match in find_choices(text, phrases, EXACT_ONLY):
        if match.span == whole and match.extractor in ("allowed_values", "alias", "values_from", "values_from_alias"):
            return match.value
    return None


def _by_type(kind: ParameterType, text: str, today: dt.date) -> Any:
    match kind:
        case ParameterType.INTEGER | ParameterType.NUMBER:
            numbers = find_numbers(text)
            if not numbers:
                raise Unreadable(f"'{text}' is not a number")
            return numbers[0].value
        case ParameterType.DATE | ParameterType.DATETIME:
            dates = [d for d in find_dates(text, today) if d.start is not None or d.end is not None]
            if not dates:
                raise Unreadable(f"'{text}' is not a date")
            day = dates[0].start or dates[0].end
            assert day is not None
            if kind is ParameterType.DATETIME:
                return dt.datetime.combine(day, dates[0].start_time or dt.time(0, 0)).isoformat()
            return day.isoformat()
        case ParameterType.BOOLEAN:
            return True  # a marked feature ('[vegetarian](has_vegetarian_options)') is asked for
        case _:
            return text
