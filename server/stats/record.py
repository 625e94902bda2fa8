"""One routing-log entry, and how it is read off a routing outcome or an error.

Stage scores and stage timings are data (stage name -> value), so a new scoring stage reaches the
log, the statistics and the dashboard without a new column. Building a record only reads
attributes: it runs on the request path and must stay cheap.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from ..api.outcome import AnswerReason, Outcome
from ..conversations.follow_up import REASONS
from ..conversations.session import SessionTurn
from ..routing.router import RoutingOutcome

TOTAL = "routing"  # the router's "total" timing, as the log names it


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
    stage_scores: dict[str, float] = field(default_factory=dict)  # every stage's score, embedding included
    threshold: float | None = None
    candidates: int = 0
    row_count: int | None = None
    http_status: int = 200
    error_code: str | None = None
    question: str | None = None
    # the values the chosen template ran with (or would run with), kept like `question` (stats.store_queries)
    parameters: dict[str, Any] | None = None
    latency_ms: float | None = None  # end to end, inside the server
    stage_ms: dict[str, float] = field(default_factory=dict)  # embed, search, each stage, decision, routing, ...
    # conversations: the session, this message's turn in it, and for a follow-up what it was and which turn it completed
    session_hash: str | None = None  # a digest of the session (owner and id): groups turns, cannot continue one
    session_turn: int | None = None
    follow_up: str | None = None  # "clarification" | "choice" | "follow_up" | "correction" | "expired"
    completes_turn: int | None = None
    # children whose embedding or template search failed or timed out in this decision: [{adapter, kind}]
    search_failures: list[dict[str, str]] = field(default_factory=list)
    fan_out_sources: list[dict[str, Any]] | None = None  # fan_out: each source run (status, rows, latency)
    replica: str | None = None  # the replica that decided (the log fills it in: RoutingLog.replica)

    def to_row(self) -> dict[str, Any]:
        row = dict(self.__dict__)  # a plain copy (asdict deep-copies, slower on the request path)
        row["ts_ms"] = round(row.pop("ts") * 1000)
        row["stage_scores"] = json.dumps(self.stage_scores) if self.stage_scores else None
        row["stage_ms"] = json.dumps(self.stage_ms) if self.stage_ms else None
        row["search_failures"] = json.dumps(self.search_failures) if self.search_failures else None
        row["fan_out_sources"] = json.dumps(self.fan_out_sources) if self.fan_out_sources is not None else None
        row["parameters"] = json.dumps(self.parameters, default=str) if self.parameters else None
        return row


def from_outcome(
    kind: str,
    adapter: str,
    question: str | None,
    outcome: RoutingOutcome,
    status: Outcome,
    threshold: float | None,
    timings: dict[str, float],
    latency_ms: float | None,
    row_count: int | None = None,
    turn: SessionTurn | None = None,
    sources: list[dict[str, Any]] | None = None,
    parameters: dict[str, Any] | None = None,
) -> RoutingRecord:
    decision = outcome.decision
    chosen = decision.selected
    best = chosen or (outcome.candidates[0] if outcome.candidates else None)
    record = RoutingRecord(
        ts=time.time(),
        kind=kind,
        adapter=adapter,
        outcome=status.value,
        reason=decision.reason,
        selected_adapter=chosen.adapter if chosen else None,
        template_id=chosen.template.id if chosen else None,
        combined_score=float(best.score) if best else None,
        embedding_score=float(best.embedding_score) if best else None,
        stage_scores={k: float(v) for k, v in best.all_stage_scores().items()} if best else {},
        threshold=threshold,
        candidates=len(outcome.candidates),
        row_count=row_count,
        question=question,
        parameters=parameters,
        latency_ms=latency_ms,
        stage_ms={TOTAL if k == "total" else k: float(v) for k, v in timings.items()},
        search_failures=[{"adapter": f.adapter, "kind": f.kind} for f in outcome.failures],
    )
    if sources is not None:  # a fan-out answer: every source that ran; selected = the best-scored of them
        record.fan_out_sources = sources
        record.reason = AnswerReason.FAN_OUT if sources else AnswerReason.NO_SOURCE_ABOVE_MIN_SCORE
        if sources:
            record.selected_adapter, record.template_id = sources[0]["adapter"], sources[0]["template_id"]
    if turn is not None:
        record.session_hash, record.session_turn = turn.digest, turn.turn
        if turn.follow_up is not None:  # the message completed a pending turn: log what it ran, not its own route
            record.follow_up, record.completes_turn = turn.follow_up, turn.completes_turn
            record.reason = REASONS[turn.follow_up]
            if turn.follow_up != "expired":  # an expired pending question ran nothing
                record.selected_adapter, record.template_id = turn.adapter, turn.template_id
    return record


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
        outcome=Outcome.ERROR.value,
        reason=code,
        selected_adapter=source,
        http_status=status,
        error_code=code,
        question=question,
        latency_ms=latency_ms,
    )
