"""Checks shared by every provider's reply parser: one trusted score per candidate, or nothing.

A candidate left without a score, an index outside the candidates, an index scored twice or a
value of the wrong type makes the whole reply untrustworthy (`ReplyError`): a partial result
would make a skipped candidate look like a score of 0 to the router. Finite scores outside
0..1 are kept here and clamped by `Reranker.rerank`; the order they express is still useful.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


class ReplyError(ValueError):
    """The reply cannot be trusted; the message is a short reason of ours, never provider text."""


def collect_scores(entries: Iterable[tuple[object, object]], count: int) -> list[float]:
    """(index, score) pairs from a reply -> finite scores in candidate order (not yet clamped)."""
    found: dict[int, float] = {}
    for raw_index, raw_score in entries:
        index, score = _as_index(raw_index), _as_number(raw_score)
        if index is None or score is None:
            raise ReplyError("malformed reply (wrong types in score entry)")
        if not 0 <= index < count:
            raise ReplyError("malformed reply (index out of range)")
        if index in found:
            raise ReplyError("malformed reply (index scored twice)")
        found[index] = score
    missing = count - len(found)
    if missing:
        raise ReplyError(f"malformed reply (missing scores for {missing} of {count} candidates)")
    return [found[i] for i in range(count)]


def _as_index(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _as_number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None
