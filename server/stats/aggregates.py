"""Figures over a time window of the routing log: counts in SQL (exact), percentiles over a sample.

Counting runs in the database so it stays exact however long the window; percentiles and the score
histogram read at most `max_rows` of the newest entries, and say so when they were sampled.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..api.outcome import Outcome, SourceStatus

ALWAYS_LISTED = (Outcome.EXECUTED, Outcome.NO_MATCH, Outcome.ERROR)  # shown even at zero
NICE_BUCKETS = (10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800)
HISTOGRAM_BINS = 20
UNROUTED = "(unrouted)"


@dataclass(frozen=True)
class Window:
    since: float
    until: float
    adapter: str | None = None  # entries asked of this adapter, or answered by it
    kind: str | None = None  # "query" | "test_routing" | None for both


def bucket_seconds(span: float, target: int = 48) -> int:
    want = max(span / target, 1)
    return next((b for b in NICE_BUCKETS if b >= want), NICE_BUCKETS[-1])


def percentiles(values: list[float], points: tuple[int, ...]) -> dict[str, Any]:
    arr = np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)
    if arr.size == 0:
        return {"count": 0, **{f"p{p}": None for p in points}, "mean": None}
    out: dict[str, Any] = {"count": int(arr.size)}
    for p, v in zip(points, np.percentile(arr, points), strict=True):
        out[f"p{p}"] = round(float(v), 4)
    out["mean"] = round(float(arr.mean()), 4)
    return out


def _where(t: sa.Table, w: Window) -> list:
    clauses = [t.c.ts_ms >= int(w.since * 1000), t.c.ts_ms <= int(w.until * 1000)]
    if w.adapter:
        clauses.append(sa.or_(t.c.adapter == w.adapter, t.c.selected_adapter == w.adapter))
    if w.kind:
        clauses.append(t.c.kind == w.kind)
    return clauses


def compute(
    engine: Engine, t: sa.Table, w: Window, max_rows: int = 200_000, unmatched_limit: int = 15
) -> dict[str, Any]:
    where = _where(t, w)
    count = sa.func.count()
    with engine.connect() as conn:
        outcomes: dict[str, int] = dict(
            conn.execute(sa.select(t.c.outcome, count).where(*where).group_by(t.c.outcome)).all()
        )
        total = sum(outcomes.values())
        kinds: dict[str, int] = dict(conn.execute(sa.select(t.c.kind, count).where(*where).group_by(t.c.kind)).all())
        replicas = conn.execute(
            sa.select(t.c.replica, count).where(*where).group_by(t.c.replica).order_by(count.desc(), t.c.replica)
        ).all()
        asked = conn.execute(
            sa.select(t.c.adapter, count).where(*where).group_by(t.c.adapter).order_by(count.desc())
        ).all()
        answered = conn.execute(
            sa.select(t.c.selected_adapter, count)
            .where(*where, t.c.selected_adapter.is_not(None))
            .group_by(t.c.selected_adapter)
            .order_by(count.desc())
        ).all()
        executed = sa.func.sum(sa.case((t.c.outcome == Outcome.EXECUTED.value, 1), else_=0))
        templates = conn.execute(
            sa.select(
                t.c.selected_adapter,
                t.c.template_id,
                count,
                executed,
                sa.func.avg(t.c.combined_score),
                sa.func.avg(t.c.embedding_score),
                sa.func.min(t.c.combined_score),
                sa.func.max(t.c.ts_ms),
            )
            .where(*where, t.c.template_id.is_not(None))
            .group_by(t.c.selected_adapter, t.c.template_id)
            .order_by(count.desc(), t.c.template_id)
        ).all()
        first_ts = conn.execute(sa.select(sa.func.min(t.c.ts_ms)).where(*where)).scalar()
        start = max(w.since, first_ts / 1000) if first_ts is not None else w.since
        step = bucket_seconds(w.until - start)
        # literals, not bound parameters: PostgreSQL matches GROUP BY expressions textually
        bucket = t.c.ts_ms // sa.literal_column(str(int(step * 1000)), sa.BigInteger)
        series_key = sa.func.coalesce(t.c.selected_adapter, sa.literal_column(f"'{UNROUTED}'", sa.String))
        volume = conn.execute(sa.select(bucket, series_key, count).where(*where).group_by(bucket, series_key)).all()
        unmatched = conn.execute(
            sa.select(t.c.question, count, sa.func.max(t.c.ts_ms), sa.func.max(t.c.combined_score))
            .where(*where, t.c.outcome == Outcome.NO_MATCH.value, t.c.question.is_not(None))
            .group_by(t.c.question)
            .order_by(count.desc(), sa.func.max(t.c.ts_ms).desc())
            .limit(unmatched_limit)
        ).all()
        errors = conn.execute(
            sa.select(t.c.error_code, count)
            .where(*where, t.c.outcome == Outcome.ERROR.value)
            .group_by(t.c.error_code)
            .order_by(count.desc())
        ).all()
        sample_cols = [
            t.c.combined_score,
            t.c.template_id,
            t.c.threshold,
            t.c.stage_scores,
            t.c.latency_ms,
            t.c.stage_ms,
            t.c.selected_adapter,
        ]
        sample = conn.execute(sa.select(*sample_cols).where(*where).order_by(t.c.ts_ms.desc()).limit(max_rows)).all()
        sources = _sources(conn, t, where, sample, max_rows)

    combined = [row[0] for row in sample]
    by_stage_score = _by_key((row[3] for row in sample), first={"combined": combined})
    scores = {name: percentiles(values, (10, 25, 50, 75, 90)) for name, values in by_stage_score.items()}
    by_stage_ms = _by_key((row[5] for row in sample), last={"latency": [row[4] for row in sample]})
    latency = {stage: percentiles(values, (50, 95, 99)) for stage, values in by_stage_ms.items()}
    latency = {k: v for k, v in latency.items() if v["count"]}
    thresholds = Counter(row[2] for row in sample if row[2] is not None)
    return {
        "window": {"since": w.since, "until": w.until, "adapter": w.adapter, "kind": w.kind},
        "total": total,
        "by_kind": kinds,
        "outcomes": {
            o.value: {
                "count": outcomes.get(o.value, 0),
                "rate": round(outcomes.get(o.value, 0) / total, 4) if total else 0.0,
            }
            for o in Outcome
            if o.value in outcomes or o in ALWAYS_LISTED
        },
        "by_adapter": [{"adapter": a, "count": n} for a, n in asked],
        # several replicas sharing one log (cluster.enabled names them; null: entries without a name)
        "by_replica": [{"replica": r, "count": n} for r, n in replicas],
        "by_selected_adapter": [{"adapter": a, "count": n} for a, n in answered],
        "templates": [
            {
                "adapter": a,
                "template_id": tid,
                "hits": n,
                "executed": int(ex or 0),
                "mean_score": _r(mean),
                "mean_embedding_score": _r(emb),
                "min_score": _r(low),
                "last_seen": last / 1000,
            }
            for a, tid, n, ex, mean, emb, low, last in templates
        ],
        "scores": scores,
        "score_histogram": _histogram(
            combined, [row[1] for row in sample], thresholds.most_common(1)[0][0] if thresholds else None
        ),
        "latency_ms": latency,
        "volume": _volume(volume, start, w.until, step),
        "unmatched_questions": [
            {"question": q, "count": n, "last_seen": last / 1000, "best_score": _r(best)}
            for q, n, last, best in unmatched
        ],
        "errors": [{"code": code, "count": n} for code, n in errors],
        "sources": sources,
        "sample": {"rows": len(sample), "limited": len(sample) >= max_rows},
    }


def _sources(
    conn: sa.Connection, t: sa.Table, where: list, sample: Sequence[Any], max_rows: int
) -> list[dict[str, Any]]:
    """Per source: queries it executed (exact, SQL), its failures by error code (exact), how often its
    template search failed or timed out (from the decisions that recorded any, newest `max_rows`) and
    its execute latency percentiles (over the sample). A fan-out answer counts for every source that ran
    (executed, or failed with its code; from the newest `max_rows` fan-out answers), not its selected one."""
    count = sa.func.count()
    per: dict[str, dict[str, Any]] = {}

    def entry(name: str) -> dict[str, Any]:
        return per.setdefault(
            name,
            {
                "adapter": name,
                "queries": 0,
                "executed": 0,
                "failures": {},
                "failed": 0,
                "search_failures": 0,
                "search_timeouts": 0,
                "embedding_failures": 0,
            },
        )

    single = t.c.fan_out_sources.is_(None)  # fan-out answers are counted per source below
    executed = conn.execute(
        sa.select(t.c.selected_adapter, count)
        .where(*where, single, t.c.selected_adapter.is_not(None), t.c.outcome == Outcome.EXECUTED.value)
        .group_by(t.c.selected_adapter)
    ).all()
    for name, n in executed:
        entry(name)["executed"] = n
    failed = conn.execute(
        sa.select(t.c.selected_adapter, t.c.error_code, count)
        .where(*where, t.c.selected_adapter.is_not(None), t.c.outcome == Outcome.ERROR.value)
        .group_by(t.c.selected_adapter, t.c.error_code)
    ).all()
    for name, code, n in failed:
        e = entry(name)
        e["failures"][code or "internal_error"] = n
        e["failed"] += n
    docs = conn.execute(
        sa.select(t.c.search_failures)
        .where(*where, t.c.search_failures.is_not(None))
        .order_by(t.c.ts_ms.desc())
        .limit(max_rows)
    ).scalars()
    key = {"timeout": "search_timeouts", "embedding": "embedding_failures"}
    for doc in docs:
        for failure in json.loads(doc):
            entry(str(failure.get("adapter")))[key.get(failure.get("kind"), "search_failures")] += 1
    execute_ms: dict[str, list[float]] = {}
    fanned = conn.execute(
        sa.select(t.c.fan_out_sources)
        .where(*where, t.c.fan_out_sources.is_not(None))
        .order_by(t.c.ts_ms.desc())
        .limit(max_rows)
    ).scalars()
    for doc in fanned:  # each source of a fan-out answer: executed, or failed with its code
        for run in json.loads(doc):
            e = entry(str(run.get("adapter")))
            if run.get("status") == SourceStatus.OK:
                e["executed"] += 1
                execute_ms.setdefault(e["adapter"], []).append(run.get("latency_ms"))
            elif run.get("status") in (SourceStatus.TIMEOUT, SourceStatus.ERROR):
                code = run.get("code") or "internal_error"
                e["failures"][code] = e["failures"].get(code, 0) + 1
                e["failed"] += 1
    for row in sample:
        if row[6] is not None and row[5]:
            ms = json.loads(row[5]).get("execute")
            if ms is not None:
                execute_ms.setdefault(row[6], []).append(ms)
    for name in execute_ms:
        entry(name)
    out = []
    for name in sorted(per):
        e = per[name]
        e["queries"] = e["executed"] + e["failed"]
        e["execute_ms"] = percentiles(execute_ms.get(name, []), (50, 95))
        out.append(e)
    return out


def _by_key(
    documents: Any, first: dict[str, list[Any]] | None = None, last: dict[str, list[Any]] | None = None
) -> dict[str, list[Any]]:
    """Values per key over the sample's JSON {key: number} documents, keys in order of first appearance
    (bracketed by the fixed `first` and `last` series)."""
    out: dict[str, list[Any]] = dict(first or {})
    for doc in documents:
        if not doc:
            continue
        for key, value in json.loads(doc).items():
            out.setdefault(key, []).append(value)
    out.update(last or {})
    return out


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _histogram(scores, template_ids, threshold: float | None) -> dict[str, Any]:
    """Best score of every entry, split by whether a template was selected."""
    selected = [0] * HISTOGRAM_BINS
    unselected = [0] * HISTOGRAM_BINS
    for score, tid in zip(scores, template_ids, strict=True):
        if score is None:
            continue
        i = min(HISTOGRAM_BINS - 1, max(0, int(float(score) * HISTOGRAM_BINS)))
        (selected if tid is not None else unselected)[i] += 1
    edges = [round(i / HISTOGRAM_BINS, 4) for i in range(HISTOGRAM_BINS + 1)]
    return {"edges": edges, "selected": selected, "not_selected": unselected, "threshold": threshold}


def _volume(rows, start: float, until: float, step: int) -> dict[str, Any]:
    first = int(start // step)
    last = int(until // step)
    buckets = [b * step for b in range(first, last + 1)]
    series: dict[str, list[int]] = {}
    for bucket, name, n in rows:
        idx = int(bucket) - first
        if 0 <= idx < len(buckets):
            series.setdefault(name, [0] * len(buckets))[idx] += n
    return {
        "bucket_seconds": step,
        "buckets": buckets,
        "series": dict(sorted(series.items(), key=lambda kv: (kv[0] == UNROUTED, -sum(kv[1])))),
    }
