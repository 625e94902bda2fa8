"""The extractor interface: question + template -> typed values, a trace, and what is missing."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

from ..templates import Template


@dataclass
class ExtractedValue:
    name: str
    value: Any
    extractor: str  # which extractor found it ("allowed_values", "number", "default", ...)
    span: tuple[int, int] | None = None  # where in the question, if it came from the question

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ParamProblem:
    name: str
    problem: str  # "missing" | "invalid"
    message: str
    allowed_values: list[Any] | None = None
    min: float | None = None
    max: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class Extraction:
    values: dict[str, Any] = field(default_factory=dict)
    trace: list[ExtractedValue] = field(default_factory=list)
    problems: list[ParamProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class ParameterExtractor(ABC):
    @abstractmethod
    async def extract(self, question: str, template: Template) -> Extraction: ...
