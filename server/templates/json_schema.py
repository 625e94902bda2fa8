"""A template's parameters as JSON Schema, in one place.

The template catalogue (`GET /v1/templates`), the MCP tools and the LLM parameter pass all describe
parameters to someone outside the server; they use these functions so that what a client, an
assistant or a model is told matches what validation enforces (types, allowed values, bounds,
patterns, date formats, defaults, required).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .models import ParameterSpec, ParameterType, Template

_JSON_TYPES = {
    ParameterType.STRING: "string",
    ParameterType.ENUM: "string",
    ParameterType.INTEGER: "integer",
    ParameterType.NUMBER: "number",
    ParameterType.BOOLEAN: "boolean",
    ParameterType.DATE: "string",
    ParameterType.DATETIME: "string",
    ParameterType.TIME: "string",
}
TIME_PATTERN = r"^(?:[01]\d|2[0-3]):[0-5]\d$"  # what coercion gives a time parameter: "HH:MM", 24-hour


def _bound(kind: ParameterType, value: float) -> float | int:
    return int(value) if kind is ParameterType.INTEGER else value


def _item_schema(kind: ParameterType, spec: ParameterSpec, allowed: list[Any] | None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": _JSON_TYPES.get(kind, "string")}
    if kind is ParameterType.DATE:
        schema["format"] = "date"
    elif kind is ParameterType.DATETIME:
        schema["format"] = "date-time"
    elif kind is ParameterType.TIME:  # not JSON Schema's "time" format, which wants seconds and a zone
        schema["pattern"] = TIME_PATTERN
    values = allowed if allowed is not None else spec.allowed_values
    if values:
        schema["enum"] = list(values)
    if kind in (ParameterType.INTEGER, ParameterType.NUMBER):
        if spec.min is not None:
            schema["minimum"] = _bound(kind, spec.min)
        if spec.max is not None:
            schema["maximum"] = _bound(kind, spec.max)
    if spec.pattern and kind in (ParameterType.STRING, ParameterType.ENUM):
        schema["pattern"] = spec.pattern
    return schema


def parameter_schema(
    spec: ParameterSpec, allowed: list[Any] | None = None, *, include_default: bool = True
) -> dict[str, Any]:
    """One parameter. `allowed` overrides `allowed_values` (e.g. a values_from list already fetched).
    The LLM pass leaves defaults out (the model must not fill in what the question does not say)."""
    if spec.type is ParameterType.ARRAY:
        schema: dict[str, Any] = {
            "type": "array",
            "items": _item_schema(spec.item_type or ParameterType.STRING, spec, allowed),
        }
    else:
        schema = _item_schema(spec.type, spec, allowed)
    if spec.description:
        schema["description"] = spec.description
    if include_default and spec.default is not None:
        schema["default"] = spec.default
    return schema


def parameters_schema(
    specs: Iterable[ParameterSpec],
    allowed: Mapping[str, list[Any]] | None = None,
    *,
    include_required: bool = True,
    include_default: bool = True,
) -> dict[str, Any]:
    """An object schema over all parameters of a template (no other keys allowed)."""
    specs = list(specs)
    allowed = allowed or {}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            s.name: parameter_schema(s, allowed.get(s.name), include_default=include_default) for s in specs
        },
        "additionalProperties": False,
    }
    required = [s.name for s in specs if s.required]
    if include_required and required:
        schema["required"] = required
    return schema


def template_schema(template: Template) -> dict[str, Any]:
    """The catalogue's parameters block of one template. How a question is matched against a closed list
    is not a constraint on values (JSON Schema has no word for it), so the catalogue shows `match: exact`
    and `partial: false` as the extension keywords `x-match` and `x-partial`, only where they are set;
    the LLM pass is not told (its values are validated, not matched)."""
    schema = parameters_schema(template.parameters)
    for spec in template.parameters:
        prop = schema["properties"][spec.name]
        if "match" in spec.model_fields_set:
            prop["x-match"] = spec.match
        if "partial" in spec.model_fields_set:
            prop["x-partial"] = spec.partial
    return schema
