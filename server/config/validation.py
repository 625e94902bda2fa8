"""Turn pydantic validation errors into ConfigIssues that point at file, line and key."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .errors import ConfigError, ConfigIssue
from .yaml_source import Path_, YamlDocument

M = TypeVar("M", bound=BaseModel)


def issues_from_validation(exc: ValidationError, doc: YamlDocument, prefix: Path_) -> list[ConfigIssue]:
    issues = []
    for err in exc.errors(include_url=False):
        loc = tuple(part for part in err["loc"] if not _is_union_tag(part))
        path = (*prefix, *loc)
        issues.append(doc.issue(path, _message(err)))
    return issues


def _is_union_tag(part: Any) -> bool:
    # pydantic adds the model/type name of a union member to loc (e.g. 'function-after[...]'); not a key
    return isinstance(part, str) and ("[" in part or part.startswith("function-"))


def _message(err: ErrorDetails) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    msg = err["msg"]
    if kind == "literal_error":
        return f"{msg} (got {err.get('input')!r})"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return msg


def validate_model(model: type[M], data: Any, doc: YamlDocument, prefix: Path_ = ()) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(issues_from_validation(exc, doc, prefix)) from None
