"""Turn what the web hooks see (an Answer, a RoutingOutcome, an error) into routing-log records."""

from __future__ import annotations

from typing import Any

from ..adapters.base import Adapter
from ..routing.router import RoutingOutcome
from ..service.answer import Answer
from .record import RoutingRecord, from_error, from_outcome, test_routing_status


def _threshold(adapter: Adapter) -> float | None:
    try:
        return adapter.router().policy.confidence_threshold
    except Exception:  # an adapter without a router still gets logged
        return None


def record_for(
    kind: str, adapter: Adapter, question: str, result: Any, latency_ms: float | None
) -> RoutingRecord | None:
    if isinstance(result, Answer):
        return from_outcome(
            kind,
            adapter.name,
            question,
            result.outcome,
            result.status,
            _threshold(adapter),
            result.timings_ms,
            latency_ms,
            row_count=result.row_count,
        )
    if isinstance(result, RoutingOutcome):
        return from_outcome(
            kind,
            adapter.name,
            question,
            result,
            test_routing_status(result),
            _threshold(adapter),
            result.timings_ms,
            latency_ms,
        )
    return None


def record_error(
    kind: str, adapter: str | None, question: str | None, exc: BaseException, latency_ms: float | None
) -> RoutingRecord:
    code = getattr(exc, "code", None) or "internal_error"
    status = getattr(exc, "status", None) or 500
    source = getattr(exc, "adapter", None)
    return from_error(
        kind, adapter, question, str(code), int(status), source if isinstance(source, str) else None, latency_ms
    )
