"""Multi-source answers: the best template of each child of a composite that clears `min_score` (at most
`max_sources` of them) runs in parallel, each within its own child's `query_timeout`; one source failing or
timing out leaves the others' sections standing. Rows that several sources return for the same record
(a template's `dedupe_key`) are merged into one row listing the adapters it came from (`_sources`).

Route once stays the default: this module is used only when the composite sets `execution: fan_out` or
the request asks for it. Which candidates run is decided with the routing decision's own `clears`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ..adapters.base import DataAdapterSettings
from ..api.outcome import AnswerReason, Outcome, SourceStatus
from ..api.parameters import ClarificationView
from ..api.requests import Execution
from ..api.responses import (
    FanOutCandidate,
    FanOutPlanView,
    QueryMetadata,
    QueryResponse,
    SourceSection,
    SourceStat,
)
from ..errors import Conflict, IntentRouterError, SourceTimeout, SourceUnavailable
from ..params.named_values import settle
from ..resilience import remaining_time, request_deadline
from ..routing.candidates import Candidate
from ..routing.composite import CompositeAdapter
from ..routing.decision import clears
from ..routing.routable import Routable, RoutingSource
from ..routing.router import RoutingOutcome
from . import parameter_views
from .each_value import run_each
from .formatting import assumed_line, render_content

log = logging.getLogger("intent_router.fan_out")

SOURCES_KEY = "_sources"  # each merged row lists the adapters it came from under this key


def applies(adapter: Routable, requested: Execution | None) -> bool:
    """Fan out when the request asks for it, else when the composite is configured to. Only a composite
    has several sources: asking a data adapter for fan_out is a 409 (`not_a_composite`): the request is
    well formed, and whether it can be done depends on what the configuration makes of that adapter."""
    if requested == "fan_out" and not isinstance(adapter, CompositeAdapter):
        raise Conflict(
            f"execution fan_out needs a composite adapter; '{adapter.name}' is a single source",
            code="not_a_composite",
        )
    if not isinstance(adapter, CompositeAdapter):
        return False
    return (requested or adapter.settings.execution) == "fan_out"


# --- which sources run ---------------------------------------------------------------------------------
@dataclass
class Plan:
    min_score: float
    max_sources: int
    run: list[Candidate]
    left_out: list[tuple[Candidate, str]]

    def view(self) -> FanOutPlanView:
        def one(c: Candidate, reason: Any) -> FanOutCandidate:
            return FanOutCandidate(adapter=c.adapter, template_id=c.template.id, score=_r(c.score), reason=reason)

        return FanOutPlanView(
            min_score=self.min_score,
            max_sources=self.max_sources,
            would_run=[one(c, "runs") for c in self.run],
            left_out=[one(c, reason) for c, reason in self.left_out],
        )


def plan(composite: CompositeAdapter, outcome: RoutingOutcome) -> Plan:
    """Each child's best candidate (the outcome is ranked best first), kept when it clears min_score,
    the best max_sources of those."""
    min_score, max_sources = composite.fan_out_min_score, composite.settings.max_sources
    best: dict[str, Candidate] = {}
    for candidate in outcome.candidates:
        best.setdefault(candidate.adapter, candidate)
    run: list[Candidate] = []
    left_out: list[tuple[Candidate, str]] = []
    for candidate in best.values():
        if not clears(candidate.score, min_score):
            left_out.append((candidate, "below_min_score"))
        elif len(run) >= max_sources:
            left_out.append((candidate, "over_max_sources"))
        else:
            run.append(candidate)
    return Plan(min_score, max_sources, run, left_out)


# --- running them --------------------------------------------------------------------------------------
@dataclass
class SourceRun:
    candidate: Candidate
    status: SourceStatus
    latency_ms: float
    rows: list[dict[str, Any]] = field(default_factory=list)
    columns: list[str] | None = None
    truncated: bool = False
    from_cache: bool = False
    parameters: dict[str, Any] | None = None
    clarification: list[ClarificationView] | None = None
    error: str | None = None
    code: str | None = None  # the error code a route-once answer would have had (source_timeout, query_failed, ...)
    assumed: str | None = None  # the content line for the defaults that chose what it answers (formatting.py)

    @property
    def adapter(self) -> str:
        return self.candidate.adapter

    def section(self) -> SourceSection:
        c = self.candidate
        section = SourceSection(
            adapter=c.adapter,
            template_id=c.template.id,
            description=c.template.description,
            status=self.status,
            score=round(float(c.score), 4),
            stage_scores={k: round(float(v), 4) for k, v in c.all_stage_scores().items()},
            rows=self.rows,
        )
        if self.parameters is not None:
            section.parameters = self.parameters
        if self.status is SourceStatus.OK:
            section.columns, section.truncated, section.from_cache = self.columns, self.truncated, self.from_cache
        if self.clarification is not None:
            section.clarification = self.clarification
        if self.error is not None:
            section.error = self.error
        return section

    def stat(self) -> SourceStat:
        return SourceStat(
            adapter=self.adapter, status=self.status, rows=len(self.rows), latency_ms=self.latency_ms, error=self.error
        )

    def log_entry(self) -> dict[str, Any]:
        """What the routing log keeps of this source (JSON in its `sources` column)."""
        return {
            "adapter": self.adapter,
            "template_id": self.candidate.template.id,
            "score": round(float(self.candidate.score), 4),
            "status": self.status,
            "rows": len(self.rows),
            "latency_ms": self.latency_ms,
            **({"code": self.code} if self.code else {}),
        }


async def run_source(source: RoutingSource, candidate: Candidate, question: str) -> SourceRun:
    """Extract this template's parameters and run it through `DataAdapter.run` (retries, breaker, bulkhead,
    result cache), all within the child's query_timeout. Never raises: a failure is this source's status."""
    started = time.perf_counter()
    settings = source.settings
    assert isinstance(settings, DataAdapterSettings)
    timeout = settings.query_timeout
    left = remaining_time()
    budget = timeout if left is None else max(0.0, min(timeout, left))

    def done(status: SourceStatus, **kw: Any) -> SourceRun:
        return SourceRun(candidate, status, round((time.perf_counter() - started) * 1000, 3), **kw)

    template = candidate.template
    try:
        async with asyncio.timeout(budget):
            with request_deadline(budget):  # this source's retries stop within its own budget
                extraction = await source.extractor.extract(question, template)
                each = settle(extraction, template)  # 'Sales and Marketing': one run each, as route-once answers
                if not extraction.ok:
                    return done(
                        SourceStatus.NEEDS_CLARIFICATION,
                        parameters=extraction.values,
                        clarification=parameter_views.clarification(extraction.problems),
                        error="; ".join(p.message for p in extraction.problems),
                    )
                result = (await run_each(source.adapter, template, extraction.values, each)).result
    except TimeoutError:
        return done(
            SourceStatus.TIMEOUT, error=f"no answer within {timeout:g} s (query_timeout)", code=SourceTimeout.code
        )
    except SourceTimeout as exc:
        return done(SourceStatus.TIMEOUT, error=exc.message, code=exc.code)
    except IntentRouterError as exc:
        return done(SourceStatus.ERROR, error=exc.message, code=exc.code)
    except Exception:  # an unexpected failure of one source must not fail the others; details only in the log
        log.exception("fan-out source %s failed", source.name)
        return done(SourceStatus.ERROR, error="internal error", code="internal_error")
    return done(
        SourceStatus.OK,
        rows=result.rows,
        columns=result.columns,
        truncated=result.truncated,
        from_cache=result.from_cache,
        parameters=extraction.values,
        assumed=assumed_line(template, extraction.values, extraction),
    )


# --- merging -------------------------------------------------------------------------------------------
def _identity(value: Any) -> Any:
    """Key values compare as text, trimmed and case-folded (emails, ids sent as strings by an API)."""
    return str(value).strip().casefold() if value is not None else None


def merge_rows(runs: list[SourceRun]) -> tuple[list[dict[str, Any]], int]:
    """All sources' rows, best-scored source first. A row whose template has a `dedupe_key` is merged
    with an earlier row carrying the same key value (its columns added where the earlier one lacks them);
    every row lists the adapters it came from under `_sources`. Returns the rows and how many merged."""
    merged: list[dict[str, Any]] = []
    by_key: dict[Any, dict[str, Any]] = {}
    duplicates = 0
    for run in runs:
        key_column = run.candidate.template.dedupe_key
        for row in run.rows:
            key = _identity(row.get(key_column)) if key_column else None
            into = by_key.get(key) if key is not None else None
            if into is None:
                new = {**row, SOURCES_KEY: [run.adapter]}
                merged.append(new)
                if key is not None:
                    by_key[key] = new
                continue
            duplicates += 1
            for column, value in row.items():
                if into.get(column) is None:
                    into[column] = value
            if run.adapter not in into[SOURCES_KEY]:
                into[SOURCES_KEY].append(run.adapter)
    return merged, duplicates


# --- the answer ----------------------------------------------------------------------------------------
class NoSourceAnswered(SourceUnavailable):
    """Every source of a fan-out answer failed: a 503 that names the composite and each source's status, and
    carries the runs (`sources`, as the routing log keeps them) so that /metrics counts each source's failure."""

    def __init__(self, composite: str, runs: list[SourceRun]) -> None:
        failed = "; ".join(f"{r.adapter}: {r.status} ({r.error})" for r in runs)
        super().__init__(composite, f"no source answered: {failed}")
        self.sources = [r.log_entry() for r in runs]


@dataclass
class FanOutAnswer:
    response: QueryResponse
    status: Outcome
    row_count: int
    sources: list[dict[str, Any]]  # for the routing log
    timings_ms: dict[str, float]


async def answer(
    composite: CompositeAdapter,
    question: str,
    sources: dict[str, RoutingSource],
    outcome: RoutingOutcome,
    metadata: QueryMetadata,
    timings: dict[str, float],
) -> FanOutAnswer:
    """Run the planned sources at once and assemble the sections, the stats and the merged rows."""
    chosen = plan(composite, outcome)
    metadata.execution = "fan_out"
    if not chosen.run:
        metadata.status = Outcome.NO_MATCH
        metadata.reason = AnswerReason.NO_SOURCE_ABOVE_MIN_SCORE
        content = f"No source has a template scoring at least {chosen.min_score:g} for this question."
        best = outcome.candidates[0].score if outcome.candidates else 0.0
        response = QueryResponse(
            content=content,
            rows=[],
            metadata=metadata,
            confidence=round(best, 4),
            status=Outcome.NO_MATCH,
            sections=[],
            source_stats=[],
        )
        return FanOutAnswer(response, Outcome.NO_MATCH, 0, [], timings)

    t = time.perf_counter()
    runs = list(await asyncio.gather(*(run_source(sources[c.adapter], c, question) for c in chosen.run)))
    timings["fan_out"] = round((time.perf_counter() - t) * 1000, 3)

    answered = [r for r in runs if r.status is SourceStatus.OK]
    if not answered and not any(r.status is SourceStatus.NEEDS_CLARIFICATION for r in runs):
        raise NoSourceAnswered(composite.name, runs)
    rows, duplicates = merge_rows(answered)
    status = Outcome.EXECUTED if answered else Outcome.NEEDS_CLARIFICATION
    metadata.status = status
    metadata.reason = AnswerReason.FAN_OUT
    metadata.template_id = chosen.run[0].template.id
    metadata.row_count = len(rows)
    metadata.duplicates_merged = duplicates
    metadata.timings_ms = timings
    response = QueryResponse(
        content=_content(runs),
        rows=rows,
        metadata=metadata,
        confidence=round(float(chosen.run[0].score), 4),
        status=status,
        sections=[r.section() for r in runs],
        source_stats=[r.stat() for r in runs],
    )
    return FanOutAnswer(response, status, len(rows), [r.log_entry() for r in runs], timings)


def _content(runs: list[SourceRun]) -> str:
    parts = []
    for run in runs:
        template = run.candidate.template
        if run.status is SourceStatus.OK:
            said = render_content(template, run.rows, run.truncated)
            parts.append(f"[{run.adapter}] {said}" + (f"\n{run.assumed}" if run.assumed else ""))
        else:
            parts.append(f"[{run.adapter}] {template.description}: {run.status} ({run.error}).")
    return "\n\n".join(parts)


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)
