"""Percentiles from a fixed-edge histogram (rollup_schema.py), as numpy's linear interpolation between
order statistics would give them from the values: each order statistic is placed inside its bin (values
spread evenly between the bin's edges, narrowed to the values' minimum and maximum), so an estimate is off
by at most one bin's width, and exact for the smallest and largest value and for a single value."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

Edges = Callable[[int], tuple[float, float]]


def histogram_percentiles(
    n: int, total: float, lo: float, hi: float, bins: Sequence[int], edges: Edges, points: tuple[int, ...]
) -> dict[str, Any]:
    if n <= 0:
        return {"count": 0, **{f"p{p}": None for p in points}, "mean": None}
    occupied = [(i, c) for i, c in enumerate(bins) if c]
    out: dict[str, Any] = {"count": int(n)}
    for p in points:
        rank = p / 100 * (n - 1)
        below = math.floor(rank)
        value = _order_statistic(below, occupied, lo, hi, edges)
        if rank > below:
            value += (rank - below) * (_order_statistic(below + 1, occupied, lo, hi, edges) - value)
        out[f"p{p}"] = round(value, 4)
    out["mean"] = round(total / n, 4)
    return out


def _order_statistic(k: int, occupied: list[tuple[int, int]], lo: float, hi: float, edges: Edges) -> float:
    seen = 0
    for index, count in occupied:
        if k < seen + count:
            first, last = index == occupied[0][0], index == occupied[-1][0]
            edge_low, edge_high = edges(index)
            low = lo if first else max(edge_low, lo)
            high = hi if last else min(edge_high, hi)
            if count == 1:
                return lo if first else hi if last else (low + high) / 2
            return low + (k - seen) / (count - 1) * (high - low)
        seen += count
    return hi
