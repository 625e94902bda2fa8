"""The extractor's report (server/params dataclasses) as the typed wire models of server/api/parameters.py:
one place where the dicts `to_json` makes become models, for /v1/query, fan-out sections and MCP `ask`."""

from __future__ import annotations

from collections.abc import Iterable

from ..api.parameters import ClarificationView, ExtractedValueView, LeftOutView
from ..params.base import Extraction, ParamProblem


def filled(extraction: Extraction) -> list[ExtractedValueView]:
    """`metadata.extraction`: each filled value and where it came from."""
    return [ExtractedValueView.model_validate(step.to_json()) for step in extraction.trace]


def left_out(extraction: Extraction) -> list[LeftOutView]:
    """`metadata.extraction_left_out`: values seen in the question and not used."""
    return [LeftOutView.model_validate(item) for item in extraction.left_out]


def clarification(problems: Iterable[ParamProblem]) -> list[ClarificationView]:
    """`clarification`: what to ask the user, per parameter."""
    return [ClarificationView.model_validate(p.to_json()) for p in problems]
