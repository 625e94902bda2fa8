"""Several values named for a one-value parameter: the template runs once per value, not "which one?".

What counts as several named values, and how they become the parameter's value, is the extraction's
(params/named_values.py). Here, once nothing is missing, the template runs once per value, at the same
time, and the rows come back together, each with the value it ran for in a column named after the
parameter (unless the row has that column already); the adapter's row cap is shared among the values.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..adapters.base import DataAdapter, QueryResult
from ..params.named_values import EachValue
from ..templates import Template


@dataclass
class EachResult:
    """The runs' rows together, and the values whose own run returned no row."""

    result: QueryResult
    without_rows: list[Any]


async def run_each(
    adapter: DataAdapter, template: Template, values: dict[str, Any], each: EachValue | None
) -> EachResult:
    """One run, or (several values named) every run at once, the others cancelled when one fails; their rows
    in the order of the values, each row with its value, the adapter's row cap shared out among the values."""
    if each is None:
        return EachResult(await adapter.run(template, values), [])
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
    merged = QueryResult(rows[:cap], columns, truncated=truncated, from_cache=all(r.from_cache for r in results))
    return EachResult(merged, [v for v, r in zip(each.values, results, strict=True) if not r.rows])
