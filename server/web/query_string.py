"""Query strings (and small JSON bodies) through their pydantic models (server/api/requests.py), so that
what a handler accepts is what the OpenAPI document says it accepts; a bad value is a 400 naming the
parameter or field."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..api.validation import first_problem
from ..errors import BadRequest

M = TypeVar("M", bound=BaseModel)


def parse_query_string(model: type[M], query: Mapping[str, str]) -> M:
    """The first value of each parameter, validated; empty values count as absent (the OpenAPI document
    says so of every query parameter: api/openapi.py)."""
    values = {key: query[key] for key in query if query[key] != ""}
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise BadRequest(first_problem(exc, "query", "unknown parameter", partial(_message, model))) from None


def _message(model: type[BaseModel], name: str, error: Any) -> str:
    """pydantic's message, except for a pattern (long, and no help to a person): the field's description."""
    if error["type"] == "string_pattern_mismatch" and (field := model.model_fields.get(name)) and field.description:
        return f"not in the documented form ({field.description})"
    if error["type"] == "value_error":
        return str(error["ctx"]["error"])
    return str(error["msg"])


def parse_body(model: type[M], data: Mapping[str, Any]) -> M:
    """A JSON body (already read as an object), validated; a bad field is a 400 naming it."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(first_problem(exc, "body", "unknown field", partial(_message, model))) from None
