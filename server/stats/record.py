"""One routing-log entry, and how it is read off an answer, a test_routing outcome or an error.

Building a record only reads attributes: it runs on the request path and must stay cheap.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..routing.candidates import Candidate
from ..routing.router import RoutingOutcome

# outcomes of /v1/query; a test_routing entry is "routed" when the decision would execute
EXECUTED, NO_MATCH, AMBIGUOUS, NEEDS_CLARIFICATION, ERROR, ROUTED = (
    "executed",
    "no_match",
    "ambiguous",
    "needs_clarification",
    "error",
    "routed",
)
OUTCOMES = (EXECUTED, NO_MATCH, AMBIGUOUS, NEEDS_CLARIFICATION, ERROR, ROUTED)

# router / answer timing keys -> log columns (milliseconds)
STAGE_COLUMNS = {
    "embed": "embed_ms",
    "search": "search_ms",
    "rerank": "rerank_ms",
    "string_similarity": "string_similarity_ms",
    "decision": "decision_ms",
    "total": "routing_ms",
    "parameters": "parameters_ms",
    "execute": "execute_ms",
}


@dataclass
class RoutingRecord:
    ts: float  # epoch seconds
    kind: str  # "query" | "test_routing"
    adapter: str  # the adapter the client asked
    outcome: str
    reason: str | None = None
    selected_adapter: str | None = None
    template_id: str | None = None
    # scores of the selected candidate, or of the best one when nothing was selected
    combined_score: float | None = None
    embedding_score: float | None = None
    rerank_score: float | None = None
    string_similarity_score: float | None = None
    threshold: float | None = None
    candidates: int = 0
    row_count: int | None = None
    http_status: int = 200
    error_code: str | None = None
    question: str | None = None
    latency_ms: float | None = None  # end to end, inside the server
    embed_ms: float | None = None
    search_ms: float | None = None
    rerank_ms: float | None = None
    string_similarity_ms: float | None = None
    decision_ms: float | None = None
    routing_ms: float | None = None
    parameters_ms: float | None = None
    execute_ms: float | None = None

    def to_row(self) -> dict[str, Any]:
        row = dict(self.__dict__)  # flat fields: a plain copy (asdict deep-copies, slower on the request path)
        row["ts_ms"] = round(row.pop("ts") * 1000)
        return row


def _scores(c: Candidate | None) -> dict[str, float | None]:
    if c is None:
        return {}
    return {
        "combined_score": float(c.score),
        "embedding_score": float(c.embedding_score),
        "rerank_score": c.rerank_score,
        "string_similarity_score": c.string_similarity_score,
    }


def _timings(timings: dict[str, float]) -> dict[str, float]:
    return {col: float(timings[key]) for key, col in STAGE_COLUMNS.items() if key in timings}


def from_outcome(
    kind: str,
    adapter: str,
    question: str | None,
    outcome: RoutingOutcome,
    status: str,
    threshold: float | None,
    timings: dict[str, float],
    latency_ms: float | None,
    row_count: int | None = None,
) -> RoutingRecord:
    decision = outcome.decision
    chosen = decision.selected
    best = chosen or (outcome.candidates[0] if outcome.candidates else None)
    return RoutingRecord(
        ts=time.time(),
        kind=kind,
        adapter=adapter,
        outcome=status,
        reason=decision.reason,
        selected_adapter=chosen.adapter if chosen else None,
        template_id=chosen.template.id if chosen else None,
        threshold=threshold,
        candidates=len(outcome.candidates),
        row_count=row_count,
        question=question,
        latency_ms=latency_ms,
        **_scores(best),
        **_timings(timings),
    )


def test_routing_status(outcome: RoutingOutcome) -> str:
    decision = outcome.decision
    if decision.execute:
        return ROUTED
    return AMBIGUOUS if decision.selected is not None else NO_MATCH


def from_error(
    kind: str,
    adapter: str | None,
    question: str | None,
    code: str,
    status: int,
    source: str | None,
    latency_ms: float | None,
) -> RoutingRecord:
    return RoutingRecord(
        ts=time.time(),
        kind=kind,
        adapter=adapter or "",
        outcome=ERROR,
        reason=code,
        selected_adapter=source,
        http_status=status,
        error_code=code,
        question=question,
        latency_ms=latency_ms,
    )
