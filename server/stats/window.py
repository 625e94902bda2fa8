"""Parse the `since` of a statistics request: relative (15m, 24h, 7d), epoch seconds or ISO 8601."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from ..errors import BadRequest

DEFAULT_SINCE_SECONDS = 24 * 3600
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")
# The moments a log can hold: the epoch to the end of year 9999 (what ISO 8601 and the ms column can say)
_EARLIEST = 0.0
_LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()
_FORMS = "use a duration (15m, 24h, 7d), epoch seconds or an ISO 8601 time"


def parse_since(value: str | None, now: float) -> float:
    """Epoch seconds of the window start. Text that is none of the forms (or not a finite number) is a
    BadRequest; a moment outside 1970..9999 is brought to the nearest end (a duration reaching back before
    1970 is the whole log), so every value the request's pattern admits (api/requests.py `Since`) is usable."""
    if value is None or value.strip() == "":
        return now - DEFAULT_SINCE_SECONDS
    return _in_range(_parse(value.strip(), now))


def _parse(text: str, now: float) -> float:
    match = _RELATIVE.match(text.lower())
    if match:
        return now - float(match.group(1)) * _UNITS[match.group(2)]
    if re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", text):  # not float()'s nan, inf or 1_000
        return float(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(f"since: {_FORMS}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _in_range(since: float) -> float:
    if not math.isfinite(since):
        raise BadRequest("since: not a finite moment (epoch seconds, not ms)")
    return min(max(since, _EARLIEST), _LATEST)
