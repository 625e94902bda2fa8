"""A template built in code for parameter tests: parameters as dicts, a placeholder SQL body."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from server.routing.candidates import Candidate
from server.templates import Template


def template(
    *params: dict[str, Any],
    tid: str = "t",
    description: str = "test template",
    examples: Iterable[str] = (),
    sql: str = "SELECT 1",
) -> Template:
    return Template.model_validate(
        {
            "id": tid,
            "description": description,
            "nl_examples": list(examples),
            "parameters": list(params),
            "body_key": "sql",
            "body": sql,
        }
    )


def candidate(t: Template, score: float, adapter: str = "hr") -> Candidate:
    """A ranked candidate of `adapter` whose embedding and combined scores are `score` (routing rule tests)."""
    return Candidate(adapter, t, embedding_score=score, combined_score=score)
