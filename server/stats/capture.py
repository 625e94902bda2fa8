"""Turn what the web hooks see (an answered or explained question, or an error) into routing-log records."""

from __future__ import annotations

from typing import Any, Protocol

from ..api.outcome import Outcome
from ..conversations.session import SessionTurn
from ..routing.routable import Routable
from ..routing.router import RoutingOutcome
from .record import RoutingRecord, from_error, from_outcome


class Decided(Protocol):
    """What the log reads of an answer or a test_routing explanation (service/answer.py)."""

    @property
    def outcome(self) -> RoutingOutcome: ...

    @property
    def status(self) -> Outcome: ...

    @property
    def timings_ms(self) -> dict[str, float]: ...

    @property
    def row_count(self) -> int | None: ...

    @property
    def turn(self) -> SessionTurn | None: ...

    @property
    def sources(self) -> list[dict[str, Any]] | None: ...

    @property
    def parameters(self) -> dict[str, Any] | None: ...


def record_for(kind: str, adapter: Routable, question: str, result: Decided, latency_ms: float | None) -> RoutingRecord:
    return from_outcome(
        kind,
        adapter.name,
        question,
        result.outcome,
        result.status,
        adapter.routing_policy().confidence_threshold,
        result.timings_ms,
        latency_ms,
        row_count=result.row_count,
        turn=result.turn,
        sources=result.sources,
        parameters=result.parameters,
    )


def record_error(
    kind: str, adapter: str | None, question: str | None, exc: BaseException, latency_ms: float | None
) -> RoutingRecord:
    code = getattr(exc, "code", None) or "internal_error"
    status = getattr(exc, "status", None) or 500
    source = getattr(exc, "adapter", None)
    return from_error(
        kind, adapter, question, str(code), int(status), source if isinstance(source, str) else None, latency_ms
    )
