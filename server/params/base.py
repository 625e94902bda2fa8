"""The extractor interface: question + template -> typed values, a trace, and what is missing."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ..templates import Template


@dataclass
class ExtractedValue:
    """One filled parameter and where it came from (for the trace in metadata and test_routing)."""

    name: str
    value: Any
    extractor: str  # "number", "date", "allowed_values", "alias", "fuzzy", "proper_name", "llm", "default", ...
    span: tuple[int, int] | None = None  # where in the question, if it came from the question
    text: str | None = None  # the words of the question at `span`
    score: float | None = None  # how sure the extractor was (0..1); None for defaults
    learned: float | None = None  # the learned extractor's probability that these words fill this parameter

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if self.span is not None:
            out["span"] = list(self.span)
        return {k: v for k, v in out.items() if v is not None or k in ("value", "span")}


@dataclass
class ParamProblem:
    """Why a parameter cannot be used; `message` is safe to show to the person who asked."""

    name: str
    problem: str  # "missing" | "invalid" | "ambiguous"
    message: str
    type: str | None = None
    description: str | None = None
    allowed_values: list[Any] | None = None
    min: float | None = None
    max: float | None = None
    pattern: str | None = None
    given: str | None = None  # what the question said, for invalid/ambiguous values
    suggestions: list[Any] | None = None  # close valid values, or the candidates of an ambiguous match
    # ambiguous: the values are the list's own, named as a list ('Sales and Marketing', not 'not Sales but
    # Marketing'): one answer each may be given instead of asking (service/each_value.py); shown when true
    listed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and v != "" and v is not False}


@dataclass
class Extraction:
    values: dict[str, Any] = field(default_factory=dict)
    trace: list[ExtractedValue] = field(default_factory=list)
    problems: list[ParamProblem] = field(default_factory=list)
    left_out: list[dict[str, Any]] = field(default_factory=list)  # values found and not used, with why
    llm: dict[str, Any] | None = None  # what the optional LLM pass did: {"status", "asked", "filled", "reason"?}

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """The whole extraction, for test_routing and debugging."""
        out: dict[str, Any] = {
            "values": self.values,
            "trace": [t.to_json() for t in self.trace],
            "problems": [p.to_json() for p in self.problems],
        }
        if self.left_out:
            out["left_out"] = self.left_out
        if self.llm is not None:
            out["llm"] = self.llm
        return out


class ParameterExtractor(ABC):
    @abstractmethod
    async def extract(self, question: str, template: Template) -> Extraction: ...

    async def read(self, question: str, template: Template) -> Extraction:
        """What the question gives, without any call out (an LLM pass): a cheap look, e.g. whether a message
        would be asked for a value (conversations/follow_up.py). By default, `extract`."""
        return await self.extract(question, template)

    def status(self) -> dict[str, Any]:
        """What the extractor runs with (for describe and health)."""
        return {}

    def bind_values_source(self, source: Any) -> None:  # noqa: B027 - optional hook
        """Where `values_from` queries run: the adapter that owns the templates."""

    async def prepare(self, templates: Iterable[Template]) -> None:  # noqa: B027 - optional hook
        """Get ready to extract for these templates before the adapter serves (runtime/build.py calls it
        once its source is open, at start and for every adapter a reload builds): fetch values_from
        lists, fit what is learned. Raises ConfigError (file:line) for what must refuse the load."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release clients (the LLM pass holds one)."""


class ExtractionSource(Protocol):
    """A data source's templates with the extractor that fills their parameters (routing's RoutingSource):
    what a conversation needs to continue an answer of that source."""

    @property
    def name(self) -> str: ...

    @property
    def templates(self) -> dict[str, Template]: ...

    @property
    def extractor(self) -> ParameterExtractor: ...
