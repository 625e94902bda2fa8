"""Parse the `since` of a statistics request: relative (15m, 24h, 7d), epoch seconds or ISO 8601."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from ..errors import BadRequest

DEFAULT_SINCE_SECONDS = 24 * 3600
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)([smhdw])$")


def parse_since(value: str | None, now: float) -> float:
    if value is None or value.strip() == "":
        return now - DEFAULT_SINCE_SECONDS
    text = value.strip()
    match = _RELATIVE.match(text.lower())
    if match:
        return now - float(match.group(1)) * _UNITS[match.group(2)]
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest("since: use a duration (15m, 24h, 7d), epoch seconds or an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
