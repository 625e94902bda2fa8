"""A "how many" question answered by a cut list gets the list's total, not "the first 100 of more than 100".

routing/count_questions.py hands a count question to the template that counts its list when the operator
wrote one (`counts:`). Without one the list answers, and when its rows were cut (its own LIMIT, the
adapter's `max_rows`) the source that owns it counts them all: the same query with its own limit lifted,
inside a count (DataAdapter.counting). It is not counted when the limit is the question's own ("the top
20 customers"), written in the template ("top 10 earners"), when the source cannot count (http, graphql,
elasticsearch), or when several values ran one by one (each_value.py).
"""

from __future__ import annotations

import logging
from typing import Any

from ..adapters.base import DataAdapter, QueryResult
from ..errors import IntentRouterError
from ..params.base import Extraction
from ..params.extractor import left_at_default
from ..routing.count_questions import count_cue
from ..templates import Template

log = logging.getLogger("intent_router.answer")


def wants_total(asked: list[str], template: Template, result: QueryResult) -> bool:
    """True when the question asks for a number and its answer is a list that was cut. `asked`: the
    message, and for a follow-up the question it continues ("what about Sales?" after "how many ...")."""
    listed = template.counts is None  # a count template's one row is a number already
    return result.truncated and listed and any(count_cue(text) is not None for text in asked)


async def total_rows(
    adapter: DataAdapter, template: Template, values: dict[str, Any], extraction: Extraction, shown: int
) -> int | None:
    """The list's rows counted at the source (more than the `shown` rows of its cut answer), or None when
    they cannot be (see the module docstring); a count that fails or outlasts `count_timeout` leaves the
    list's answer as it was."""
    counting = adapter.counting(template, values, left_at_default(template, values, extraction))
    if counting is None:
        return None
    try:
        counted = await adapter.count(counting)
    except IntentRouterError as exc:
        log.warning("adapter %s could not count the rows of template %s: %s", adapter.name, template.id, exc.message)
        return None
    first = next(iter(counted.rows[0].values()), None) if counted.rows else 0  # no row: an empty $count
    if isinstance(first, bool) or not isinstance(first, int) or first <= shown:
        return None  # fewer than the rows shown: the list came from the cache and the source has changed since
    return first
