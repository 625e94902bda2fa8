"""Several values named for a one-value parameter: one run per value, not "which one?".

"employees in Sales and Marketing", "compare the salary summary of Sales and Engineering": the extractor
finds two or more values of a parameter's closed list, named one after the other as a list, for a
parameter that takes one value (params/extractor.py `_ambiguous`, the problem's `listed`). That used to end
in a clarification. `settle` makes the values the parameter's value instead (a list), so what else the
question lacks is asked as usual and the list is kept while it is (a session stores it); once nothing is
missing, the template runs once per value, at the same time, and the rows come back together, each with
the value it ran for in a column named after the parameter (unless the row has that column already). A
follow-up that names one value runs once; one that changes something else runs each value again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..adapters.base import DataAdapter, QueryResult
from ..params.base import Extraction
from ..params.coercion import InvalidValue
from ..params.extractor import validate
from ..templates import ParameterType, Template

MAX_VALUES = 5  # more named values than this are asked about (a list that long is rarely one question)


@dataclass(frozen=True)
class EachValue:
    """The parameter named with several values, and those values in the question's order."""

    parameter: str
    values: list[Any]

    def shown(self) -> list[str | int | float | bool]:
        """The values as JSON has them (a date as its ISO text)."""
        return [v if isinstance(v, str | int | float | bool) else str(v) for v in self.values]


def settle(extraction: Extraction, template: Template) -> EachValue | None:
    """The one-value parameter that holds several values, if one does: a list carried from an earlier turn,
    or values the question named as a list (their problem is dropped and the list becomes the value)."""
    one_value = {p.name: p for p in template.parameters if p.type is not ParameterType.ARRAY}
    for name, value in extraction.values.items():
        if name in one_value and isinstance(value, list) and 2 <= len(value) <= MAX_VALUES:
            return EachValue(name, value)
    for problem in extraction.problems:
        named = problem.suggestions or []
        spec = one_value.get(problem.name)
        if problem.problem != "ambiguous" or not problem.listed or spec is None or not 2 <= len(named) <= MAX_VALUES:
            continue
        try:
            values = [validate(spec, value) for value in named]
        except InvalidValue:
            continue
        extraction.problems.remove(problem)
        extraction.values[spec.name] = values
        return EachValue(spec.name, values)
    return None


async def run_each(adapter: DataAdapter, template: Template, values: dict[str, Any], each: EachValue) -> QueryResult:
    """Every run at once (the others cancelled when one fails); their rows in the order of the values, each
    row with its value, the adapter's row cap shared out among the values."""
    runs = [asyncio.ensure_future(adapter.run(template, {**values, each.parameter: v})) for v in each.values]
    try:
        results = await asyncio.gather(*runs)
    except BaseException:
        for run in runs:
            run.cancel()
        raise
    cap = adapter.row_cap(None)
    share = max(1, cap // len(each.values))
    rows: list[dict[str, Any]] = []
    columns: list[str] = []
    truncated = False
    for value, result in zip(each.values, results, strict=True):
        tagged = each.parameter not in result.columns
        rows += [{each.parameter: value, **row} if tagged else row for row in result.rows[:share]]
        truncated = truncated or result.truncated or len(result.rows) > share
        for column in ([each.parameter] if tagged else []) + result.columns:
            if column not in columns:
                columns.append(column)
    truncated = truncated or len(rows) > cap
    return QueryResult(rows[:cap], columns, truncated=truncated, from_cache=all(r.from_cache for r in results))


def without_rows(result: QueryResult, each: EachValue) -> list[Any]:
    """The values no row came back for (said in the answer, not left to be guessed)."""
    seen = {str(row.get(each.parameter)) for row in result.rows}
    return [v for v in each.values if str(v) not in seen]
