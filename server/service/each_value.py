"""Several values named for a one-value parameter: one run per value, not "which one?".

"employees in Sales and Marketing", "compare the salary summary of Sales and Engineering": the extractor
finds two clearly named values of a closed list for a parameter that takes one, at separate places in the
question (params/extractor.py `_ambiguous`), which used to end in a clarification. When that is the only
thing the question leaves open, the template runs once per value (at the same time) and the rows come
back together, each carrying the value it was run for in a column named after the parameter (unless the
row already has that column). A value the source refuses fails the answer as one run would.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..adapters.base import DataAdapter, QueryResult
from ..params.base import Extraction
from ..params.coercion import InvalidValue
from ..params.extractor import validate
from ..templates import Template

MAX_VALUES = 5  # more named values than this are asked about (a list that long is rarely one question)


@dataclass(frozen=True)
class EachValue:
    """The parameter named with several values, and those values in the question's order."""

    parameter: str
    values: list[Any]

    def shown(self) -> list[str | int | float | bool]:
        """The values as JSON has them (a date as its ISO text)."""
        return [v if isinstance(v, str | int | float | bool) else str(v) for v in self.values]

    def run_values(self, values: dict[str, Any]) -> list[dict[str, Any]]:
        """The template's values for each run."""
        return [{**values, self.parameter: value} for value in self.values]


def named_values(extraction: Extraction, template: Template) -> EachValue | None:
    """The one parameter named with 2..MAX_VALUES values (each one the parameter takes), when nothing else
    is missing or wrong."""
    if len(extraction.problems) != 1:
        return None
    problem = extraction.problems[0]
    named = problem.suggestions or []
    spec = next((p for p in template.parameters if p.name == problem.name), None)
    if problem.problem != "ambiguous" or spec is None or not 2 <= len(named) <= MAX_VALUES:
        return None
    try:
        return EachValue(problem.name, [validate(spec, value) for value in named])
    except InvalidValue:
        return None


async def run_each(adapter: DataAdapter, template: Template, values: dict[str, Any], each: EachValue) -> QueryResult:
    """Every run at once; their rows in the order of the values, each row with its value."""
    results = await asyncio.gather(*(adapter.run(template, run) for run in each.run_values(values)))
    rows: list[dict[str, Any]] = []
    columns: list[str] = []
    for value, result in zip(each.values, results, strict=True):
        tagged = each.parameter not in result.columns
        rows += [{each.parameter: value, **row} if tagged else row for row in result.rows]
        for column in ([each.parameter] if tagged else []) + result.columns:
            if column not in columns:
                columns.append(column)
    return QueryResult(
        rows,
        columns,
        truncated=any(r.truncated for r in results),
        from_cache=all(r.from_cache for r in results),
    )
