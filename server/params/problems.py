"""Clarification problems: what is missing or wrong, with the values or range that would work."""

from __future__ import annotations

from typing import Any

from ..templates import ParameterSpec, ParameterType
from .base import ParamProblem

_SHOWN_VALUES = 25  # longer lists are summarised by suggestions instead of listed

_TYPE_HINTS = {
    ParameterType.INTEGER: "a whole number",
    ParameterType.NUMBER: "a number",
    ParameterType.BOOLEAN: "yes or no",
    ParameterType.DATE: "a date such as 2024-03-31",
    ParameterType.DATETIME: "a date and time such as 2024-03-31T09:00",
    ParameterType.TIME: "a time of day such as 15:30 or 3:30 pm",
    ParameterType.STRING: "a text value",
    ParameterType.ENUM: "one of the listed values",
    ParameterType.ARRAY: "one or more values",
}


def hint(spec: ParameterSpec, allowed: list[Any] | None = None) -> str:
    """'one of Engineering, Sales, ...' / 'a number, at least 0' / 'a date such as 2024-03-31'."""
    values = allowed if allowed is not None else spec.allowed_values
    if values:
        shown = ", ".join(str(v) for v in values[:_SHOWN_VALUES])
        more = f" and {len(values) - _SHOWN_VALUES} more" if len(values) > _SHOWN_VALUES else ""
        return f"one of {shown}{more}"
    text = _TYPE_HINTS.get(spec.type, "a value")
    bounds = []
    if spec.min is not None:
        bounds.append(f"at least {spec.min:g}")
    if spec.max is not None:
        bounds.append(f"at most {spec.max:g}")
    if bounds:
        text += ", " + " and ".join(bounds)
    if spec.pattern:
        text += f", matching {spec.pattern}"
    return text


def _fields(spec: ParameterSpec, allowed: list[Any] | None) -> dict[str, Any]:
    values = allowed if allowed is not None else spec.allowed_values
    return {
        "type": spec.type.value,
        "description": spec.description or None,
        "allowed_values": list(values[:_SHOWN_VALUES]) if values else None,
        "min": spec.min,
        "max": spec.max,
        "pattern": spec.pattern,
    }


def missing(spec: ParameterSpec, allowed: list[Any] | None = None) -> ParamProblem:
    label = f"{spec.name} ({spec.description})" if spec.description else spec.name
    return ParamProblem(spec.name, "missing", f"{label}: {hint(spec, allowed)}", **_fields(spec, allowed))


def invalid(
    spec: ParameterSpec, given: str, reason: str, allowed: list[Any] | None = None, suggestions: list[Any] | None = None
) -> ParamProblem:
    message = f"{spec.name}: '{given}' does not work ({reason})"
    if suggestions:
        message += "; did you mean " + " or ".join(str(s) for s in suggestions) + "?"
    return ParamProblem(
        spec.name, "invalid", message, given=given, suggestions=suggestions or None, **_fields(spec, allowed)
    )


def ambiguous(spec: ParameterSpec, given: str, options: list[Any], listed: bool = False) -> ParamProblem:
    shown = " or ".join(str(o) for o in options)
    return ParamProblem(
        spec.name,
        "ambiguous",
        f"{spec.name}: '{given}' could mean {shown}; which one?",
        given=given,
        suggestions=list(options),
        listed=listed,
        **_fields(spec, None),
    )
