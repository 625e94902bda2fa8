"""Add routing-log entries to the rollups: gather a batch's deltas in memory, then upsert them in the
caller's transaction (the writer's, beside the raw rows; or the backfill's). The one place that says what
an entry contributes to which rollup row: the writer and the backfill both come here."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import sqlalchemy as sa

from ..api.outcome import Outcome, SourceStatus
from .record import RoutingRecord
from .rollup_schema import (
    BIN_TYPE,
    BINS,
    COUNT_KEY,
    HIST_KEY,
    MINUTE,
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
    if type(value) is float:  # the usual case, first
        return None if value != value else value
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
        e = entry
        selected = e.selected_adapter or NONE
        count_key = (e.outcome, e.error_code or NONE, e.replica or NONE, int(e.fan_out_sources is not None))
        score = _number(e.combined_score)
        values: list[tuple[str, str, float, int]] = []  # (metric, name, value, bin): worked out once
        add = values.append

        def value(metric: str, name: str, v: float | None, binning: Callable[[float], int]) -> None:
            if v is not None:
                add((metric, name, v, binning(v)))

        if score is not None:
            add(("score", "combined", score, score_bin(score)))
            add(("hist", "selected" if e.template_id is not None else "not_selected", score, histogram_bin(score)))
        for stage, raw in e.stage_scores.items() if e.stage_scores else ():
            number = _number(raw)
            if number is not None:
                add(("score", stage, number, score_bin(number)))
        value("ms", "latency", _number(e.latency_ms), ms_bin)
        for stage, raw in e.stage_ms.items() if e.stage_ms else ():
            number = _number(raw)
            if number is not None:
                add(("ms", stage, number, ms_bin(number)))
        if e.selected_adapter is not None and e.stage_ms:
            value("exec_ms", e.selected_adapter, _number(e.stage_ms.get("execute")), ms_bin)
        tallies: list[tuple[str, str, str]] = []
        for failure in e.search_failures or ():
            kind = SEARCH_KINDS.get(failure.get("kind"), "search_failures")  # type: ignore[arg-type]
            tallies.append(("search", str(failure.get("adapter")), kind))
        for run in e.fan_out_sources or ():
            status, source = run.get("status"), str(run.get("adapter"))
            if status == SourceStatus.OK:
                tallies.append(("fan_out", source, NONE))
                value("exec_ms", source, _number(run.get("latency_ms")), ms_bin)
            elif status in (SourceStatus.TIMEOUT, SourceStatus.ERROR):
                tallies.append(("fan_out", source, run.get("code") or "internal_error"))
        base = (MINUTE, ts_ms // 1000 // MINUTE * MINUTE, e.kind, e.adapter, selected)  # coarser: in `write`
        counted = base + count_key
        self.counts[counted] = self.counts.get(counted, 0) + 1
        if e.template_id is not None:
            self._template((*base, e.template_id), e, score, ts_ms)
        for metric, name, v, index in values:
            self._value((*base, metric, name), v, index)
        for tally in tallies:
            tallied = base + tally
            self.tallies[tallied] = self.tallies.get(tallied, 0) + 1

    def _write_hist(self, conn: sa.Connection, table: sa.Table) -> None:
        """Histograms are merged here, not in SQL (their bins are one binary value): read the rows this batch
        adds to, add, write back. On PostgreSQL a transaction-scoped lock per log keeps two writers from
        both reading the same old bins; on SQLite the raw rows' insert already holds the write lock."""
        if conn.dialect.name == "postgresql":
            conn.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(sa.literal(table.name)))))
        keys = sorted(self.hist)
        stored = _hist_rows(conn, table, keys)
        rows = []
        for key in keys:
            n, total, lo, hi, added = self.hist[key]
            bins = np.zeros(BINS, dtype=BIN_TYPE)
            for index, count in added.items():
                bins[index] = count
            old = stored.get(key)
            if old is not None:
                n, total = n + old.n, total + old.total
                lo, hi = min(lo, old.lo), max(hi, old.hi)
                bins += np.frombuffer(old.bins, dtype=BIN_TYPE)
            rows.append((*key, n, total, lo, hi, bins.tobytes()))
        conn.exec_driver_sql(_upsert(conn, table, HIST_KEY, replaced=("n", "total", "lo", "hi", "bins")), rows)

    def _with_coarser(self) -> None:
        """Add the ten-minute and hour rows: the minute rows gathered so far, merged (cheaper than per entry)."""
        merges: tuple[tuple[dict[tuple, Any], Callable[[Any, Any], Any]], ...] = (
            (self.counts, _add_counts),
            (self.templates, _merge_template),
            (self.hist, _merge_hist),
            (self.tallies, _add_counts),
        )
        for rows, merge in merges:
            coarser: dict[tuple, Any] = {}
            for key, row in rows.items():
                for span in SPANS[1:]:
                    wider = (span, key[1] // span * span, *key[2:])
                    coarser[wider] = merge(coarser.get(wider), row)
            rows.update(coarser)

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

    def _value(self, key: tuple, value: float, index: int) -> None:
        row = self.hist.get(key)
        if row is None:
            self.hist[key] = [1, value, value, value, {index: 1}]
            return
        row[0] += 1
        row[1] += value
        if value < row[2]:
            row[2] = value
        if value > row[3]:
            row[3] = value
        bins = row[4]
        bins[index] = bins.get(index, 0) + 1

    # --- writing --------------------------------------------------------------------------------
    def write(self, conn: sa.Connection, tables: RollupTables) -> None:
        """Upsert the deltas in the caller's transaction, rows in key order (two writers sharing a
        PostgreSQL log lock rows in the same order, so they wait for each other instead of deadlocking).
        Plain DBAPI executemany with positional binds: SQLAlchemy's per-row parameter processing cost
        more than the database's work here."""
        self._with_coarser()
        if self.counts:
            rows = [(*k, v) for k, v in sorted(self.counts.items())]
            conn.exec_driver_sql(_upsert(conn, tables.counts, COUNT_KEY, added=("n",)), rows)
        if self.templates:
            rows = [(*k, *v) for k, v in sorted(self.templates.items())]
            sql = _upsert(
                conn,
                tables.templates,
                TEMPLATE_KEY,
                added=("n", "executed", "n_score", "sum_score", "n_embedding", "sum_embedding"),
                lowest=("min_score",),
                highest=("last_ms",),
            )
            conn.exec_driver_sql(sql, rows)
        if self.hist:
            self._write_hist(conn, tables.hist)
        if self.tallies:
            rows = [(*k, v) for k, v in sorted(self.tallies.items())]
            conn.exec_driver_sql(_upsert(conn, tables.tallies, TALLY_KEY, added=("n",)), rows)


def _hist_rows(conn: sa.Connection, table: sa.Table, keys: list[tuple]) -> dict[tuple, Any]:
    """The stored histograms of the buckets these keys fall in, by key."""
    c, found = table.c, {}
    buckets = sorted({key[:2] for key in keys})
    for first in range(0, len(buckets), BUCKETS_PER_READ):
        part = buckets[first : first + BUCKETS_PER_READ]
        where = sa.or_(*(sa.and_(c.span == span, c.bucket == bucket) for span, bucket in part))
        for row in conn.execute(sa.select(table).where(where)):
            found[tuple(row[: len(HIST_KEY)])] = row
    return found


def _add_counts(have: int | None, more: int) -> int:
    return more if have is None else have + more


def _merge_template(have: list | None, more: list) -> list:
    if have is None:
        return list(more)
    for i in range(6):
        have[i] += more[i]
    if more[6] is not None and (have[6] is None or more[6] < have[6]):
        have[6] = more[6]
    have[7] = max(have[7], more[7])
    return have


def _merge_hist(have: list | None, more: list) -> list:
    if have is None:
        return [*more[:4], dict(more[4])]
    have[0] += more[0]
    have[1] += more[1]
    have[2] = min(have[2], more[2])
    have[3] = max(have[3], more[3])
    bins = have[4]
    for index, c in more[4].items():
        bins[index] = bins.get(index, 0) + c
    return have


_SQL: dict[tuple[str, str], str] = {}  # upsert text per (dialect, table): made once
BUCKETS_PER_READ = 100  # (span, bucket) pairs per SELECT of the histograms a batch adds to


def _upsert(
    conn: sa.Connection,
    table: sa.Table,
    key: tuple[str, ...],
    added: Iterable[str] = (),
    lowest: Iterable[str] = (),
    highest: Iterable[str] = (),
    replaced: Iterable[str] = (),
) -> str:
    """INSERT ... ON CONFLICT (key) DO UPDATE (SQLite and PostgreSQL spell it alike): sums add, extremes keep
    the lower or higher (NULL: the other), `replaced` columns take the new value. Values in the table's
    column order, as positional binds; identifiers are the schema's own, quoted by the dialect."""
    dialect = conn.dialect
    cached = _SQL.get((dialect.name, table.name))
    if cached is not None:
        return cached
    if dialect.name not in ("sqlite", "postgresql"):
        raise NotImplementedError(f"rollups on {dialect.name}: use SQLite or PostgreSQL for the routing log")
    q = dialect.identifier_preparer.quote
    name = q(table.name)
    mark = "?" if dialect.paramstyle == "qmark" else "%s"
    columns = [c.name for c in table.columns]
    change = [f"{q(c)} = {name}.{q(c)} + excluded.{q(c)}" for c in added]
    change += [f"{q(c)} = excluded.{q(c)}" for c in replaced]
    for columns_of, better in ((lowest, "<"), (highest, ">")):
        for c in columns_of:
            old, new = f"{name}.{q(c)}", f"excluded.{q(c)}"
            change.append(f"{q(c)} = CASE WHEN {old} IS NULL OR {new} {better} {old} THEN {new} ELSE {old} END")
    sql = (
        f"INSERT INTO {name} ({', '.join(q(c) for c in columns)}) VALUES ({', '.join([mark] * len(columns))}) "
        f"ON CONFLICT ({', '.join(q(c) for c in key)}) DO UPDATE SET {', '.join(change)}"
    )
    _SQL[(dialect.name, table.name)] = sql
    return sql


def batch_of(entries: Iterable[RoutingRecord]) -> RollupBatch:
    batch = RollupBatch()
    for entry in entries:
        batch.add(entry, round(entry.ts * 1000))
    return batch
