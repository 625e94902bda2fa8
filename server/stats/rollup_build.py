"""Add routing-log entries to the rollups: gather a batch's deltas in memory, then upsert them in the
caller's transaction (the writer's, beside the raw rows; or the backfill's). The one place that says what
an entry contributes to which rollup row: the writer and the backfill both come here."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from ..api.outcome import Outcome
from .record import RoutingRecord
from .rollup_schema import (
    BIN_COLUMNS,
    COUNT_KEY,
    HIST_KEY,
    NONE,
    SPANS,
    TALLY_KEY,
    TEMPLATE_KEY,
    RollupTables,
    histogram_bin,
    ms_bin,
    score_bin,
)

SEARCH_KINDS = {"timeout": "search_timeouts", "embedding": "embedding_failures"}  # anything else: search_failures
EXECUTED = Outcome.EXECUTED.value


def _number(value: Any) -> float | None:
    """A value a histogram can take (the raw statistics skipped None and NaN the same way)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


class RollupBatch:
    """The deltas of a batch of entries, keyed by rollup row."""

    def __init__(self) -> None:
        self.counts: dict[tuple, int] = {}
        self.templates: dict[tuple, list] = {}  # n, executed, n_score, sum_score, n_emb, sum_emb, min_score, last_ms
        self.hist: dict[tuple, list] = {}  # n, total, lo, hi, {bin: count}
        self.tallies: dict[tuple, int] = {}

    def __len__(self) -> int:
        return len(self.counts)

    def add(self, entry: RoutingRecord, ts_ms: int) -> None:
        selected = entry.selected_adapter or NONE
        for span in SPANS:
            base = (span, ts_ms // 1000 // span * span, entry.kind, entry.adapter, selected)
            self._add_at(base, entry, ts_ms)

    def _add_at(self, base: tuple, e: RoutingRecord, ts_ms: int) -> None:
        key = (*base, e.outcome, e.error_code or NONE, e.replica or NONE, int(e.fan_out_sources is not None))
        self.counts[key] = self.counts.get(key, 0) + 1
        score = _number(e.combined_score)
        if e.template_id is not None:
            self._template((*base, e.template_id), e, score, ts_ms)
        self._value(base, "score", "combined", score, score_bin)
        for stage, value in (e.stage_scores or {}).items():
            self._value(base, "score", str(stage), _number(value), score_bin)
        self._value(base, "ms", "latency", _number(e.latency_ms), ms_bin)
        for stage, value in (e.stage_ms or {}).items():
            self._value(base, "ms", str(stage), _number(value), ms_bin)
        if score is not None:
            self._value(base, "hist", "selected" if e.template_id is not None else "not_selected", score, histogram_bin)
        if e.selected_adapter is not None and e.stage_ms:
            self._value(base, "exec_ms", e.selected_adapter, _number(e.stage_ms.get("execute")), ms_bin)
        for failure in e.search_failures or ():
            kind = SEARCH_KINDS.get(failure.get("kind"), "search_failures")  # type: ignore[arg-type]
            self._tally((*base, "search", str(failure.get("adapter")), kind))
        for run in e.fan_out_sources or ():
            status = run.get("status")
            if status == "ok":
                self._tally((*base, "fan_out", str(run.get("adapter")), NONE))
                self._value(base, "exec_ms", str(run.get("adapter")), _number(run.get("latency_ms")), ms_bin)
            elif status in ("timeout", "error"):
                self._tally((*base, "fan_out", str(run.get("adapter")), run.get("code") or "internal_error"))

    def _template(self, key: tuple, e: RoutingRecord, score: float | None, ts_ms: int) -> None:
        row = self.templates.get(key)
        if row is None:
            row = self.templates[key] = [0, 0, 0, 0.0, 0, 0.0, None, ts_ms]
        row[0] += 1
        row[1] += e.outcome == EXECUTED
        if score is not None:
            row[2] += 1
            row[3] += score
            row[6] = score if row[6] is None else min(row[6], score)
        emb = _number(e.embedding_score)
        if emb is not None:
            row[4] += 1
            row[5] += emb
        row[7] = max(row[7], ts_ms)

    def _value(self, base: tuple, metric: str, name: str, value: float | None, binning) -> None:
        if value is None:
            return
        key = (*base, metric, name)
        row = self.hist.get(key)
        if row is None:
            self.hist[key] = [1, value, value, value, {binning(value): 1}]
            return
        row[0] += 1
        row[1] += value
        row[2] = min(row[2], value)
        row[3] = max(row[3], value)
        bins = row[4]
        index = binning(value)
        bins[index] = bins.get(index, 0) + 1

    def _tally(self, key: tuple) -> None:
        self.tallies[key] = self.tallies.get(key, 0) + 1

    # --- writing --------------------------------------------------------------------------------
    def write(self, conn: sa.Connection, tables: RollupTables) -> None:
        """Upsert the deltas in the caller's transaction, rows in key order (two writers sharing a
        PostgreSQL log lock rows in the same order, so they wait for each other instead of deadlocking)."""
        dialect = conn.dialect.name
        if self.counts:
            rows = [_row(COUNT_KEY, k, n=v) for k, v in sorted(self.counts.items())]
            conn.execute(_upsert(dialect, tables.counts, COUNT_KEY, added=("n",)), rows)
        if self.templates:
            names = ("n", "executed", "n_score", "sum_score", "n_embedding", "sum_embedding", "min_score", "last_ms")
            rows = [_row(TEMPLATE_KEY, k, **dict(zip(names, v, strict=True))) for k, v in sorted(self.templates.items())]
            stmt = _upsert(
                dialect,
                tables.templates,
                TEMPLATE_KEY,
                added=("n", "executed", "n_score", "sum_score", "n_embedding", "sum_embedding"),
                lowest=("min_score",),
                highest=("last_ms",),
            )
            conn.execute(stmt, rows)
        if self.hist:
            rows = []
            for k, (n, total, lo, hi, bins) in sorted(self.hist.items()):
                row = _row(HIST_KEY, k, n=n, total=total, lo=lo, hi=hi)
                row.update({column: bins.get(i, 0) for i, column in enumerate(BIN_COLUMNS)})
                rows.append(row)
            stmt = _upsert(
                dialect, tables.hist, HIST_KEY, added=("n", "total", *BIN_COLUMNS), lowest=("lo",), highest=("hi",)
            )
            conn.execute(stmt, rows)
        if self.tallies:
            rows = [_row(TALLY_KEY, k, n=v) for k, v in sorted(self.tallies.items())]
            conn.execute(_upsert(dialect, tables.tallies, TALLY_KEY, added=("n",)), rows)


def _row(names: tuple[str, ...], key: tuple, **values: Any) -> dict[str, Any]:
    row = dict(zip(names, key, strict=True))
    row.update(values)
    return row


def _upsert(
    dialect: str,
    table: sa.Table,
    key: tuple[str, ...],
    added: Iterable[str] = (),
    lowest: Iterable[str] = (),
    highest: Iterable[str] = (),
) -> Any:
    """INSERT ... ON CONFLICT (key) DO UPDATE: sums add, extremes keep the lower or higher (NULL: the other)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:
        raise NotImplementedError(f"rollups on {dialect}: use SQLite or PostgreSQL for the routing log")
    stmt = insert(table)
    new = stmt.excluded
    change: dict[str, Any] = {c: table.c[c] + new[c] for c in added}
    for c in lowest:
        change[c] = sa.case((table.c[c].is_(None), new[c]), (new[c] < table.c[c], new[c]), else_=table.c[c])
    for c in highest:
        change[c] = sa.case((table.c[c].is_(None), new[c]), (new[c] > table.c[c], new[c]), else_=table.c[c])
    return stmt.on_conflict_do_update(index_elements=list(key), set_=change)


def batch_of(entries: Iterable[RoutingRecord]) -> RollupBatch:
    batch = RollupBatch()
    for entry in entries:
        batch.add(entry, round(entry.ts * 1000))
    return batch
