"""What the parameter extractor reports, as wire models: each filled value with where it came from
(`metadata.extraction`), each value seen and not used (`metadata.extraction_left_out`), and each
parameter a clarification asks about (`metadata.clarification`, a fan-out section's `clarification`).

The extractor (server/params) builds plain dataclasses and turns them into dicts (`to_json`); these
models only type those dicts for the OpenAPI document and the MCP output schema, so a generated client
gets named fields instead of untyped dicts. A key that is left out of a dict stays out of the JSON
(`Wire.dump` drops unset fields), so the bytes sent are the ones `to_json` made. A field added to one
of those dataclasses must be added here too: tests/unit/test_wire_parameters.py fails until it is.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from .wire import Wire

Span = Annotated[
    list[int],
    Field(
        min_length=2,
        max_length=2,
        description="[start, end): character offsets of the words in the question (after normalisation)",
    ),
]


class ExtractedValueView(Wire):
    """One filled parameter and where its value came from."""

    name: str
    value: Any = Field(description="the typed value the template runs with (its parameter's JSON type)")
    extractor: str = Field(
        description="what found it: a reader (number, date, time, allowed_values, alias, fuzzy, proper_name, ...), "
        "learned (the learned extractor), llm, or default (the parameter's default; no span)"
    )
    span: Span | None = Field(description="where in the question; null when the value is not from the question")
    text: str | None = Field(None, description="the words of the question at `span`")
    score: float | None = Field(None, description="how sure the extractor was, 0..1 (absent for defaults)")
    learned: float | None = Field(
        None, description="the learned extractor's probability that these words fill this parameter"
    )


class LeftOutView(Wire):
    """A value seen in the question and not used, with why."""

    name: str = Field(description="the parameter it could have filled")
    text: str = Field(description="the words of the question")
    reason: str = Field(description="why it was not used, in words")
    span: Span | None = None
    score: float | None = None


class ClarificationView(Wire):
    """A parameter the answer needs and could not fill from the question: what to ask the user."""

    name: str
    problem: str = Field(description="missing | invalid | ambiguous")
    message: str = Field(description="safe to show to the person who asked")
    type: str | None = Field(None, description="the parameter's type (string, integer, date, ...)")
    description: str | None = None
    allowed_values: list[Any] | None = Field(None, description="the values that would work (at most 25 listed)")
    min: float | None = None
    max: float | None = None
    pattern: str | None = None
    given: str | None = Field(None, description="what the question said (invalid or ambiguous values)")
    suggestions: list[Any] | None = Field(
        None, description="close valid values, or the candidates of an ambiguous match"
    )
    listed: bool | None = Field(
        None,
        description="ambiguous: the values were named as a list (asked about when there are more than five)",
    )
