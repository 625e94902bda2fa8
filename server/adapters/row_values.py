"""Driver values as plain JSON values: one rule for every data adapter's rows (SQL, DuckDB, MongoDB, HTTP).

Its own module so that a DuckDB- or HTTP-only deployment does not import SQLAlchemy (the SQL adapter's
driver layer) at start for it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import uuid
from typing import Any


def to_json_value(value: Any) -> Any:
    """Driver types (Decimal, dates, UUIDs, bytes) as plain JSON values."""
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or infinity
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return None
        return int(value) if value == value.to_integral_value() and abs(value) < 2**53 else float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, list | tuple):
        return [to_json_value(v) for v in value]
    if isinstance(value, set | frozenset):  # MySQL SET columns
        return sorted(to_json_value(v) for v in value)
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    return str(value)
