"""Coerce a raw value to a parameter's type and enforce its constraints."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from ..templates import ParameterSpec, ParameterType
from .times import as_value, clock_value

_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}


class InvalidValue(ValueError):
    """A value that does not fit its parameter; the message is safe to show to a user."""


def coerce(spec: ParameterSpec, value: Any) -> Any:
    value = _to_type(spec.type, value, spec)
    _check(spec, value)
    return value


def _to_type(kind: ParameterType, value: Any, spec: ParameterSpec) -> Any:
    try:
        match kind:
            case ParameterType.STRING | ParameterType.ENUM:
                if isinstance(value, dict | list):
                    raise InvalidValue("expected a single value")
                return str(value)
            case ParameterType.INTEGER:
                if isinstance(value, bool):
                    raise InvalidValue("expected an integer")
                if isinstance(value, float) and not value.is_integer():
                    raise InvalidValue("expected a whole number")
                return int(str(value).replace(",", "")) if isinstance(value, str) else int(value)
            case ParameterType.NUMBER:
                if isinstance(value, bool):
                    raise InvalidValue("expected a number")
                return float(str(value).replace(",", "")) if isinstance(value, str) else float(value)
            case ParameterType.BOOLEAN:
                if isinstance(value, bool):
                    return value
                text = str(value).strip().lower()
                if text in _TRUE:
                    return True
                if text in _FALSE:
                    return False
                raise InvalidValue("expected true or false")
            case ParameterType.DATE:
                if isinstance(value, dt.datetime):
                    return value.date().isoformat()
                if isinstance(value, dt.date):
                    return value.isoformat()
                return dt.date.fromisoformat(str(value)).isoformat()
            case ParameterType.DATETIME:
                if isinstance(value, dt.datetime):
                    return value.isoformat()
                return dt.datetime.fromisoformat(str(value)).isoformat()
            case ParameterType.TIME:
                return _time_of_day(value)
            case ParameterType.ARRAY:
                items = value if isinstance(value, list) else [value]
                item_kind = spec.item_type or ParameterType.STRING
                return [_to_type(item_kind, item, spec) for item in items]
    except InvalidValue:
        raise
    except (TypeError, ValueError):
        raise InvalidValue(f"expected a value of type {kind.value}") from None
    raise InvalidValue(f"unsupported type {kind}")


def _time_of_day(value: Any) -> str:
    """'HH:MM' from a time, an ISO time ('15:30', '15:30:00') or a clock time as said ('3:30 pm', 'noon');
    seconds other than :00 are refused rather than dropped (a time parameter holds minutes)."""
    if isinstance(value, dt.datetime):
        value = value.time()
    if isinstance(value, dt.time):
        if value.tzinfo is not None:
            raise InvalidValue("expected a time of day without a time zone such as 15:30")
        if value.second or value.microsecond:
            raise InvalidValue("expected a time of day in whole minutes such as 15:30")
        return as_value(value)
    if not isinstance(value, str):
        raise InvalidValue("expected a time of day such as 15:30")
    try:
        parsed = dt.time.fromisoformat(value.strip())
    except ValueError:
        said = clock_value(value)
        if said is None:
            raise InvalidValue("expected a time of day such as 15:30 or 3:30 pm") from None
        return as_value(said)
    return _time_of_day(parsed)


def _check(spec: ParameterSpec, value: Any) -> None:
    values = value if isinstance(value, list) else [value]
    for item in values:
        if spec.allowed_values is not None:
            canon = {str(a).casefold(): a for a in spec.allowed_values}
            if str(item).casefold() not in canon:
                raise InvalidValue(f"must be one of {spec.allowed_values}")
        if isinstance(item, int | float) and not isinstance(item, bool):
            if spec.min is not None and item < spec.min:
                raise InvalidValue(f"must be at least {spec.min:g}")
            if spec.max is not None and item > spec.max:
                raise InvalidValue(f"must be at most {spec.max:g}")
        if spec.pattern is not None and not re.fullmatch(spec.pattern, str(item)):
            raise InvalidValue(f"must match the pattern {spec.pattern}")


def canonical_allowed(spec: ParameterSpec, value: Any) -> Any:
    """Map a case-insensitive match onto the allowed value as written in the template."""
    if spec.allowed_values is None:
        return value
    canon = {str(a).casefold(): a for a in spec.allowed_values}
    if isinstance(value, list):
        return [canon.get(str(v).casefold(), v) for v in value]
    return canon.get(str(value).casefold(), value)
