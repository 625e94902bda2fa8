"""Rollup tables beside the routing log: what the statistics read instead of the raw rows.

Every entry is added, in the transaction that writes its raw row, to time buckets at three spans: minutes,
ten minutes and hours. A window is read from the largest buckets that fit inside it (`cover`), so a day's
figures read 24 hour rows per key plus at most 28 ten-minute and minute rows at its two ends. Keys carry
what the statistics filter on (kind, asked adapter, selected adapter); a missing value is stored as ""
(NULL would not match itself in a unique key).
Latency and score percentiles come from histograms with fixed bin edges (`ms_bin`, `score_bin`), each row
also keeping the exact count, sum, minimum and maximum of its values. Its bins are one binary value (a
window sums a few thousand of them with numpy: summing 64 columns in SQL cost five times as much), so the
writer merges them itself (rollup_build.py).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from .unmatched_copy import unmatched_table

MINUTE, TEN_MINUTES, HOUR = 60, 600, 3600
SPANS = (MINUTE, TEN_MINUTES, HOUR)  # each divides the next
BINS = 64  # bins of a histogram row
HIST_BINS = 20  # the dashboard's score histogram (bins of 0.05)
MS_FLOOR = 0.05  # milliseconds: bin 0 holds everything up to here
MS_PER_DOUBLING = 3  # bins per doubling of a latency: each bin is 2^(1/3) = 1.26x as wide as the one before
NONE = ""  # a missing key value (no selected adapter, no template, no error code, no replica)
BIN_TYPE = "<u4"  # a histogram's bins: BINS little-endian 32-bit counts in one binary value (pack/unpack)


def cover(start: int, end: int, spans: tuple[int, ...] = SPANS) -> list[tuple[int, int, int]]:
    """Disjoint (span, first bucket, end) ranges covering [start, end) (whole minutes) with the largest
    buckets that fit inside it."""
    if end <= start:
        return []
    span, finer = spans[-1], spans[:-1]
    if not finer:
        return [(span, start, end)]
    first, last = -(-start // span) * span, end // span * span
    if last <= first:
        return cover(start, end, finer)
    return [*cover(start, first, finer), (span, first, last), *cover(last, end, finer)]


def score_bin(value: float) -> int:
    """Scores in [0, 1] in 64 equal bins; below 0 and above 1 land in the end bins."""
    return min(BINS - 1, max(0, int(value * BINS)))


def score_edges(index: int) -> tuple[float, float]:
    return index / BINS, (index + 1) / BINS


MS_UPPER = tuple(MS_FLOOR * 2 ** (k / MS_PER_DOUBLING) for k in range(BINS - 1))  # bin k's upper edge


def ms_bin(value: float) -> int:
    """Milliseconds on a log scale: bin 0 holds up to 0.05, bin k (0.05 * 2^((k-1)/3), 0.05 * 2^(k/3)], the
    last one everything above (about 105 s)."""
    return bisect_left(MS_UPPER, value)


def ms_edges(index: int) -> tuple[float, float]:
    low = MS_UPPER[index - 1] if index else -math.inf
    return low, MS_UPPER[index] if index < BINS - 1 else math.inf


def histogram_bin(value: float) -> int:
    """The dashboard's score histogram: the rule the raw statistics always used."""
    return min(HIST_BINS - 1, max(0, int(float(value) * HIST_BINS)))


@dataclass(frozen=True)
class RollupTables:
    counts: sa.Table  # entries by outcome, error code, replica (volume, outcomes, kinds, adapters, errors)
    templates: sa.Table  # selected templates: hits, executed, score sums and extremes, last seen
    hist: sa.Table  # value histograms: metric "score" | "ms" | "exec_ms" | "hist", name = stage or source
    tallies: sa.Table  # per-source events inside entries: search failures, fan-out runs
    state: sa.Table  # one row per log table: whether its raw rows were added to the rollups (backfill)
    unmatched: sa.Table  # the unmatched entries' own rows, not bucketed (unmatched_copy.py)

    def all(self) -> tuple[sa.Table, ...]:
        """The bucketed rollups, then the state table (not the unmatched entries' table)."""
        return (self.counts, self.templates, self.hist, self.tallies, self.state)


KEY = ("span", "bucket", "kind", "adapter", "selected_adapter")  # every rollup row's leading key
COUNT_KEY = (*KEY, "outcome", "error_code", "replica", "fan_out")
TEMPLATE_KEY = (*KEY, "template_id")
HIST_KEY = (*KEY, "metric", "name")
TALLY_KEY = (*KEY, "metric", "name", "code")


def _key_columns(names: tuple[str, ...]) -> list[sa.Column]:
    kinds = {"span": sa.Integer, "bucket": sa.BigInteger, "fan_out": sa.SmallInteger}
    return [sa.Column(n, kinds.get(n, sa.String(200)), nullable=False, primary_key=True) for n in names]


def rollup_tables(log_name: str, metadata: sa.MetaData | None = None) -> RollupTables:
    """The rollup tables of the routing log table `log_name` (named after it, so each log has its own)."""
    md = metadata or sa.MetaData()
    big = sa.BigInteger
    clustered: dict[str, Any] = {"sqlite_with_rowid": False}  # SQLite: rows in key order, a window one range
    counts = sa.Table(
        f"{log_name}_r_counts", md, *_key_columns(COUNT_KEY), sa.Column("n", big, nullable=False), **clustered
    )
    templates = sa.Table(
        f"{log_name}_r_templates",
        md,
        *_key_columns(TEMPLATE_KEY),
        sa.Column("n", big, nullable=False),
        sa.Column("executed", big, nullable=False),
        sa.Column("n_score", big, nullable=False),
        sa.Column("sum_score", sa.Float, nullable=False),
        sa.Column("n_embedding", big, nullable=False),
        sa.Column("sum_embedding", sa.Float, nullable=False),
        sa.Column("min_score", sa.Float),
        sa.Column("last_ms", big, nullable=False),
        **clustered,
    )
    hist = sa.Table(
        f"{log_name}_r_hist",
        md,
        *_key_columns(HIST_KEY),
        sa.Column("n", big, nullable=False),
        sa.Column("total", sa.Float, nullable=False),
        sa.Column("lo", sa.Float, nullable=False),
        sa.Column("hi", sa.Float, nullable=False),
        sa.Column("bins", sa.LargeBinary, nullable=False),
        **clustered,
    )
    tallies = sa.Table(
        f"{log_name}_r_tallies", md, *_key_columns(TALLY_KEY), sa.Column("n", big, nullable=False), **clustered
    )
    state = sa.Table(
        f"{log_name}_r_state",
        md,
        sa.Column("log_table", sa.String(200), primary_key=True),
        sa.Column("backfilled_rows", big, nullable=False),  # raw rows found and added when rollups began
        sa.Column("backfilled_at", sa.Float, nullable=False),
    )
    return RollupTables(counts, templates, hist, tallies, state, unmatched_table(log_name, md))
