"""Figures over a time window of the routing log, read from its rollups (rollup_schema.py).

Every figure is exact over the whole window except percentiles, which come from fixed-edge histograms
(within one bin: 1/64 for a score, 26% of the value for a latency; hist_percentiles.py). A window is taken
at minute granularity: from the start of the minute `since` falls in to the end of the minute `until` falls
in. It is read from the largest buckets that fit inside it (hours, ten minutes, minutes). Only the unmatched questions
read entries one by one (their text is not rolled up), from a table of the unmatched entries alone
(unmatched_copy.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..api.outcome import Outcome
from .hist_percentiles import histogram_percentiles
from .rollup_build import SEARCH_KINDS
from .rollup_schema import (
    BIN_TYPE,
    BINS,
    HIST_BINS,
    MINUTE,
    NONE,
    SPANS,
    RollupTables,
    cover,
    ms_edges,
    rollup_tables,
    score_edges,
)

ALWAYS_LISTED = (Outcome.EXECUTED, Outcome.NO_MATCH, Outcome.ERROR)  # shown even at zero
NICE_BUCKETS = (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800)  # whole minutes
UNROUTED = "(unrouted)"
EXECUTED = Outcome.EXECUTED.value
ERROR = Outcome.ERROR.value
DASHBOARD_OMITS = ("by_adapter", "by_replica", "by_selected_adapter", "errors")  # figures the dashboard never draws
HIST_CHUNK = 500  # histogram rows fetched and summed at a time (a day's window: several thousand)


@dataclass(frozen=True)
class Window:
    since: float
    until: float
    adapter: str | None = None  # entries asked of this adapter, or answered by it
    kind: str | None = None  # "query" | "test_routing" | None for both

    @property
    def start(self) -> int:
        """First second of the window: the minute `since` falls in."""
        return int(self.since // MINUTE * MINUTE)

    @property
    def end(self) -> int:
        """First second after the window: the end of the minute `until` falls in."""
        return int(self.until // MINUTE * MINUTE + MINUTE)


def bucket_seconds(span: float, target: int = 48) -> int:
    want = max(span / target, 1)
    return next((b for b in NICE_BUCKETS if b >= want), NICE_BUCKETS[-1])


def _spans(r: sa.Table, start: int, end: int, spans: tuple[int, ...] = SPANS) -> Any:
    """Rows covering [start, end): the largest buckets that fit inside it (rollup_schema.cover)."""
    ranges = cover(start, end, spans) or [(MINUTE, start, start)]  # an empty range: no rows
    return sa.or_(*(sa.and_(r.c.span == span, r.c.bucket >= low, r.c.bucket < high) for span, low, high in ranges))


def _filters(r: sa.Table, w: Window) -> list:
    clauses = []
    if w.adapter:
        clauses.append(sa.or_(r.c.adapter == w.adapter, r.c.selected_adapter == w.adapter))
    if w.kind:
        clauses.append(r.c.kind == w.kind)
    return clauses


def _opt(value: str) -> str | None:
    return None if value == NONE else value


def compute(
    engine: Engine,
    t: sa.Table,
    w: Window,
    rollups: RollupTables | None = None,
    unmatched_limit: int = 15,
    view: str = "full",
    max_rows: int = 20_000,
    hist_chunk: int = HIST_CHUNK,
) -> dict[str, Any]:
    """The statistics body's routing_log figures (rollups: those of `t` unless given). `view="dashboard"`:
    without what the dashboard never draws; `max_rows`: unmatched entries read at most (stats.max_window_rows);
    `hist_chunk`: histogram rows fetched and summed at a time (`_merged`)."""
    rollups = rollups or rollup_tables(t.name)
    sums = sa.func.sum
    with engine.connect() as conn:

        def grouped(r: sa.Table, keys: list, values: list) -> list:
            where = [_spans(r, w.start, w.end), *_filters(r, w)]
            return list(conn.execute(sa.select(*keys, *values).where(*where).group_by(*keys)).all())

        c = rollups.counts
        counts = grouped(
            c,
            [c.c.kind, c.c.adapter, c.c.selected_adapter, c.c.outcome, c.c.error_code, c.c.replica, c.c.fan_out],
            [sums(c.c.n)],
        )
        tp = rollups.templates
        templates = grouped(
            tp,
            [tp.c.selected_adapter, tp.c.template_id],
            [
                sums(tp.c.n),
                sums(tp.c.executed),
                sums(tp.c.n_score),
                sums(tp.c.sum_score),
                sums(tp.c.n_embedding),
                sums(tp.c.sum_embedding),
                sa.func.min(tp.c.min_score),
                sa.func.max(tp.c.last_ms),
            ],
        )
        h = rollups.hist
        hist = conn.execute(
            sa.select(h.c.metric, h.c.name, h.c.n, h.c.total, h.c.lo, h.c.hi, h.c.bins).where(
                _spans(h, w.start, w.end), *_filters(h, w)
            ),
            execution_options={"yield_per": hist_chunk},
        )
        values = _merged(hist.partitions())
        tl = rollups.tallies
        tallies = grouped(tl, [tl.c.metric, tl.c.name, tl.c.code], [sums(tl.c.n)])
        volume = _volume(conn, c, w)
        unmatched, read = _unmatched(conn, rollups.unmatched, w, unmatched_limit, max_rows)

    figures = _counted(counts)
    total = figures["total"]
    out: dict[str, Any] = {
        "window": {"since": w.since, "until": w.until, "adapter": w.adapter, "kind": w.kind},
        "bounds": {"start": w.start, "end": w.end},  # the window as the rollups take it (whole minutes)
        **figures,
        "templates": _templates(templates),
        "scores": _percentiles(values, "score", (10, 25, 50, 75, 90), score_edges, first="combined"),
        "score_histogram": _score_histogram(values),
        "latency_ms": _percentiles(values, "ms", (50, 95, 99), ms_edges, last="latency"),
        "volume": volume,
        "unmatched_questions": [
            {"question": q, "count": n, "last_seen": last / 1000, "best_score": _r(best)}
            for q, n, last, best in unmatched
        ],
        "sources": _sources(counts, tallies, values),
        # percentiles come from histograms of every entry in the window: never sampled
        "sample": {"rows": total, "limited": False},
        # the unmatched questions are counted over the newest `max_rows` unmatched entries at most
        "unmatched_sample": {"rows": read, "limited": read >= max_rows},
    }
    out["outcomes"] = {
        o.value: {
            "count": figures["outcomes"].get(o.value, 0),
            "rate": round(figures["outcomes"].get(o.value, 0) / total, 4) if total else 0.0,
        }
        for o in Outcome
        if o.value in figures["outcomes"] or o in ALWAYS_LISTED
    }
    if view == "dashboard":
        for key in DASHBOARD_OMITS:
            out.pop(key)
    return out


def _merged(chunks: Iterable[Sequence[Any]]) -> dict[tuple[str, str], tuple]:
    """Histogram rows summed per (metric, name): (n, total, lo, hi, *bins). The rows arrive in chunks
    (a server-side cursor on PostgreSQL): a day's window reads several thousand rows of 64 bins each, and
    holding them all at once (and the database driver's copy of them) grew the process by ~10 MB that the
    allocator kept after the call."""
    merged: dict[tuple[str, str], list] = {}
    for rows in chunks:
        for key, (n, total, lo, hi, bins) in _summed(rows).items():
            have = merged.get(key)
            if have is None:
                merged[key] = [n, total, lo, hi, bins]
            else:
                have[0] += n
                have[1] += total
                have[2] = min(have[2], lo)
                have[3] = max(have[3], hi)
                have[4] += bins
    return {
        key: (int(n), float(total), float(lo), float(hi), *bins.tolist())
        for key, (n, total, lo, hi, bins) in merged.items()
    }


def _summed(rows: Sequence[Any]) -> dict[tuple[str, str], tuple]:
    """One chunk of histogram rows summed per (metric, name) in numpy: (n, total, lo, hi, int64 bins)."""
    if not rows:
        return {}
    metrics, names, ns, totals, los, his, blobs = zip(*rows, strict=True)
    keys = list(zip(metrics, names, strict=True))
    ids = {key: i for i, key in enumerate(dict.fromkeys(keys))}
    group = np.fromiter((ids[key] for key in keys), dtype=np.int64, count=len(keys))
    perm = np.argsort(group, kind="stable")
    ordered = group[perm]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    stored = np.frombuffer(b"".join(map(bytes, blobs)), dtype=BIN_TYPE).reshape(len(rows), BINS)
    bins = np.add.reduceat(stored[perm].astype(np.int64), starts, axis=0)
    n = np.add.reduceat(np.asarray(ns, dtype=np.int64)[perm], starts)
    total = np.add.reduceat(np.asarray(totals, dtype=float)[perm], starts)
    lo = np.minimum.reduceat(np.asarray(los, dtype=float)[perm], starts)
    hi = np.maximum.reduceat(np.asarray(his, dtype=float)[perm], starts)
    names_of = list(ids)
    return {
        names_of[g]: (int(n[i]), float(total[i]), float(lo[i]), float(hi[i]), bins[i])
        for i, g in enumerate(ordered[starts])
    }


def _counted(counts: list) -> dict[str, Any]:
    outcomes: dict[str, int] = {}
    kinds: dict[str, int] = {}
    replicas: dict[str | None, int] = {}
    asked: dict[str, int] = {}
    answered: dict[str, int] = {}
    errors: dict[str | None, int] = {}
    for kind, adapter, selected, outcome, code, replica, _fan_out, n in counts:
        n = int(n)
        outcomes[outcome] = outcomes.get(outcome, 0) + n
        kinds[kind] = kinds.get(kind, 0) + n
        replicas[_opt(replica)] = replicas.get(_opt(replica), 0) + n
        asked[adapter] = asked.get(adapter, 0) + n
        if selected != NONE:
            answered[selected] = answered.get(selected, 0) + n
        if outcome == ERROR:
            errors[_opt(code)] = errors.get(_opt(code), 0) + n
    return {
        "total": sum(outcomes.values()),
        "by_kind": kinds,
        "outcomes": outcomes,
        "by_adapter": [{"adapter": a, "count": n} for a, n in _most(asked)],
        # several replicas sharing one log (cluster.enabled names them; null: entries without a name)
        "by_replica": [{"replica": r, "count": n} for r, n in _most(replicas)],
        "by_selected_adapter": [{"adapter": a, "count": n} for a, n in _most(answered)],
        "errors": [{"code": code, "count": n} for code, n in _most(errors)],
    }


def _most(counted: dict) -> list[tuple[Any, int]]:
    """Largest count first, ties by name (None last)."""
    return sorted(counted.items(), key=lambda kv: (-kv[1], kv[0] is None, kv[0] or ""))


def _templates(rows: list) -> list[dict[str, Any]]:
    out = [
        {
            "adapter": _opt(selected),
            "template_id": tid,
            "hits": int(n),
            "executed": int(ex or 0),
            "mean_score": _r(float(s) / int(ns)) if ns else None,  # PostgreSQL sums bigints as numeric
            "mean_embedding_score": _r(float(se) / int(ne)) if ne else None,
            "min_score": _r(low),
            "last_seen": int(last) / 1000,
        }
        for selected, tid, n, ex, ns, s, ne, se, low, last in rows
    ]
    return sorted(out, key=lambda t: (-t["hits"], t["template_id"], t["adapter"] or ""))


def _percentiles(
    values: dict, metric: str, points: tuple[int, ...], edges, first: str | None = None, last: str | None = None
) -> dict[str, Any]:
    """Per name of `metric`: percentiles from its histogram; `first` always listed first, `last` last,
    the others by how many values they have."""
    names = sorted(
        (n for m, n in values if m == metric and n not in (first, last)), key=lambda n: (-values[metric, n][0], n)
    )
    ordered = ([first] if first else []) + names + ([last] if last and (metric, last) in values else [])
    out = {}
    for name in ordered:
        row = values.get((metric, name))
        if row is None:
            out[name] = histogram_percentiles(0, 0.0, 0.0, 0.0, [], edges, points)
            continue
        n, total, lo, hi, *bins = row
        out[name] = histogram_percentiles(
            int(n), float(total), float(lo), float(hi), [int(b) for b in bins], edges, points
        )
    return out


def _score_histogram(values: dict) -> dict[str, Any]:
    """Best score of every entry, split by whether a template was selected (threshold: the caller's)."""

    def bins(name: str) -> list[int]:
        row = values.get(("hist", name))
        return [int(b) for b in row[4 : 4 + HIST_BINS]] if row else [0] * HIST_BINS

    edges = [round(i / HIST_BINS, 4) for i in range(HIST_BINS + 1)]
    return {"edges": edges, "selected": bins("selected"), "not_selected": bins("not_selected"), "threshold": None}


def _sources(counts: list, tallies: list, values: dict) -> list[dict[str, Any]]:
    """Per source: queries it executed, its failures by error code, how often its template search failed or
    timed out, and its execute latency percentiles. A fan-out answer counts for every source that ran
    (executed, or failed with its code), not its selected one."""
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

    for _kind, _adapter, selected, outcome, code, _replica, fan_out, n in counts:
        if selected == NONE:
            continue
        if outcome == EXECUTED and not fan_out:
            entry(selected)["executed"] += int(n)
        elif outcome == ERROR:
            e = entry(selected)
            code = code or "internal_error"
            e["failures"][code] = e["failures"].get(code, 0) + int(n)
            e["failed"] += int(n)
    for metric, name, code, n in tallies:
        e = entry(name)
        if metric == "search":
            key = code if code in SEARCH_KINDS.values() else "search_failures"
            e[key] += int(n)
        elif code == NONE:
            e["executed"] += int(n)
        else:
            e["failures"][code] = e["failures"].get(code, 0) + int(n)
            e["failed"] += int(n)
    for metric, name in values:
        if metric == "exec_ms":
            entry(name)
    out = []
    for name in sorted(per):
        e = per[name]
        e["queries"] = e["executed"] + e["failed"]
        e["execute_ms"] = _percentiles(values, "exec_ms", (50, 95), ms_edges, first=name)[name]
        out.append(e)
    return out


def _volume(conn: sa.Connection, c: sa.Table, w: Window) -> dict[str, Any]:
    """Entries per bucket by selected adapter; buckets of whole minutes from the first entry in the window."""
    where = _filters(c, w)
    first = conn.execute(
        sa.select(sa.func.min(c.c.bucket)).where(c.c.span == MINUTE, c.c.bucket >= w.start, c.c.bucket < w.end, *where)
    ).scalar()
    start = max(w.start, first) if first is not None else w.start
    step = bucket_seconds(w.until - start)
    rows = conn.execute(
        sa.select(c.c.bucket, c.c.selected_adapter, sa.func.sum(c.c.n))
        .where(_spans(c, start, w.end, tuple(s for s in SPANS if step % s == 0)), *where)
        .group_by(c.c.bucket, c.c.selected_adapter)
    ).all()
    low, high = start // step, int(w.until // step)
    buckets = [b * step for b in range(low, high + 1)]
    series: dict[str, list[int]] = {}
    for bucket, selected, n in rows:
        index = int(bucket) // step - low
        if 0 <= index < len(buckets):
            series.setdefault(_opt(selected) or UNROUTED, [0] * len(buckets))[index] += int(n)
    return {
        "bucket_seconds": step,
        "buckets": buckets,
        "series": dict(sorted(series.items(), key=lambda kv: (kv[0] == UNROUTED, -sum(kv[1]), kv[0]))),
    }


def unmatched_query(t: sa.Table, w: Window, limit: int, max_rows: int) -> sa.Select:
    """The most asked questions nothing matched, from the unmatched entries' own rows (`t`: question text is
    not rolled up; unmatched_copy.py): the newest `max_rows` of the window at most. Rows: question, count,
    last seen (ms), best score, and how many entries were read over all the groups."""
    where = [t.c.ts_ms >= w.start * 1000, t.c.ts_ms < w.end * 1000]
    if w.adapter:
        where.append(sa.or_(t.c.adapter == w.adapter, t.c.selected_adapter == w.adapter))
    if w.kind:
        where.append(t.c.kind == w.kind)
    newest = (
        sa.select(t.c.question, t.c.ts_ms, t.c.combined_score)
        .where(*where)
        .order_by(t.c.ts_ms.desc())
        .limit(max_rows)
        .subquery()
    )
    count, last = sa.func.count(), sa.func.max(newest.c.ts_ms)
    read = sa.func.sum(count).over()  # every entry read, over all the groups: no second pass
    return (
        sa.select(newest.c.question, count, last, sa.func.max(newest.c.combined_score), read)
        .group_by(newest.c.question)
        .order_by(count.desc(), last.desc(), newest.c.question)
        .limit(limit)
    )


def _unmatched(conn: sa.Connection, t: sa.Table, w: Window, limit: int, max_rows: int) -> tuple[list, int]:
    """The unmatched list (`unmatched_query`) and how many entries it read."""
    top = conn.execute(unmatched_query(t, w, limit, max_rows)).all()
    return [row[:4] for row in top], int(top[0][4]) if top else 0


def _r(value: float | None) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else round(float(value), 4)
