"""Several values named for a one-value parameter, read as one answer each rather than "which one?".

"employees in Sales and Marketing", "compare the salary summary of Sales and Engineering": the extractor
finds two or more values of a parameter's closed list, named one after the other as a list, for a
parameter that takes one value (extractor.py `_ambiguous`, the problem's `listed`). `settle` makes those
values the parameter's value (a list) instead of a problem, so what else the question lacks is asked as
usual and the list is kept while it is (a session stores it). Running the template once per value is the
answering side's (service/each_value.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..templates import ParameterSpec, ParameterType, Template
from .base import Extraction
from .coercion import InvalidValue
from .extractor import validate

MAX_VALUES = 5  # more named values than this are asked about (a list that long is rarely one question)


@dataclass(frozen=True)
class EachValue:
    """The parameter named with several values, and those values in the question's order."""

    parameter: str
    values: list[Any]

    def shown(self) -> list[str | int | float | bool]:
        """The values as JSON has them (a date as its ISO text)."""
        return [v if isinstance(v, str | int | float | bool) else str(v) for v in self.values]


def answers_each(spec: ParameterSpec, value: Any) -> bool:
    """The value is a list of 2..MAX_VALUES values for a one-value parameter: one answer each."""
    return spec.type is not ParameterType.ARRAY and isinstance(value, list) and 2 <= len(value) <= MAX_VALUES


def settle(extraction: Extraction, template: Template) -> EachValue | None:
    """The one-value parameter that holds several values, if one does: a list carried from an earlier turn,
    or values the question named as a list (their problem is dropped and the list becomes the value)."""
    specs = {p.name: p for p in template.parameters}
    for name, value in extraction.values.items():
        if name in specs and answers_each(specs[name], value):
            return EachValue(name, value)
    for problem in extraction.problems:
        named = problem.suggestions or []
        spec = specs.get(problem.name)
        if problem.problem != "ambiguous" or not problem.listed or spec is None or not answers_each(spec, named):
            continue
        try:
            values = [validate(spec, value) for value in named]
        except InvalidValue:
            continue
        extraction.problems.remove(problem)
        extraction.values[spec.name] = values
        return EachValue(spec.name, values)
    return None
