"""Which values a JSON file carries back exactly (the config cache keeps only those)."""

from __future__ import annotations

import math
from typing import Any

_SCALARS = (str, int, float, bool, type(None))


def exact_json(value: Any) -> bool:
    """True when a JSON round trip gives back the same value and types (no tuples, dates, bytes, non-str
    keys, NaN or infinities)."""
    if isinstance(value, _SCALARS):
        return not isinstance(value, float) or math.isfinite(value)
    if type(value) is list:
        return all(exact_json(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and exact_json(v) for k, v in value.items())
    return False
