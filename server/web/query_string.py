"""Query strings through their pydantic models (server/api/requests.py), so that what a handler accepts
is what the OpenAPI document says it accepts; a bad value is a 400 naming the parameter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import BadRequest

M = TypeVar("M", bound=BaseModel)


def parse_query_string(model: type[M], query: Mapping[str, str]) -> M:
    """The first value of each parameter, validated; empty values count as absent."""
    values = {key: query[key] for key in query if query[key] != ""}
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        name = ".".join(str(p) for p in first["loc"]) or "query"
        raise BadRequest(f"{name}: {first['msg']}") from None
