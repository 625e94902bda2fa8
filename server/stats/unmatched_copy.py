"""The unmatched entries' own narrow table: what the Unmatched questions list reads.

The list counts the newest unmatched entries of a window by their question text, which is not rolled up.
Read from the log itself, on PostgreSQL each of those entries is a fetch among a day's wide rows, and its
planner preferred scanning the log's time index and filtering every entry (a day of a million entries:
175,000 read for the newest 20,000 unmatched; a partial index of the unmatched entries did not change its
choice). This table holds only those entries and the columns the list reads, written in the transaction
that writes their raw rows (writer.py), so a window is one range of its own index. An existing log gets it
filled once when it is opened (backfill.py); dismissed questions and expired entries leave it with the
log's (forget.py, the writer's retention).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

from ..api.outcome import Outcome

COLUMNS = ("ts_ms", "kind", "adapter", "selected_adapter", "question", "combined_score")
NO_MATCH = Outcome.NO_MATCH.value
CHUNK = 20_000  # raw rows read and copied per step when an existing log is filled


def unmatched_table(log_name: str, metadata: sa.MetaData) -> sa.Table:
    return sa.Table(
        f"{log_name}_r_unmatched",
        metadata,
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("ts_ms", sa.BigInteger, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("adapter", sa.String(200), nullable=False),
        sa.Column("selected_adapter", sa.String(200)),
        sa.Column("question", sa.Text, nullable=False),
        sa.Column("combined_score", sa.Float),
    )


def unmatched_index(table: sa.Table, dialect: str) -> sa.Index:
    """A window's entries newest first. On SQLite it holds every column the list reads, so the list comes
    from the index alone; PostgreSQL cannot hold long question text in a btree entry (about 2.7 kB): there
    it finds the rows, which are narrow and in time order."""
    c = table.c
    columns = [c.ts_ms, c.kind, c.adapter, c.selected_adapter]
    if dialect == "sqlite":
        columns += [c.question, c.combined_score]
    return sa.Index(f"ix_{table.name}_ts", *columns)


def copies(rows: Iterable[Mapping[Any, Any]]) -> list[dict[str, Any]]:
    """The rows this table keeps of these raw rows: unmatched entries whose question text was stored."""
    return [{k: row[k] for k in COLUMNS} for row in rows if row["outcome"] == NO_MATCH and row["question"] is not None]


def copy_existing(conn: sa.Connection, log: sa.Table, table: sa.Table) -> int:
    """Fill the table from the log's raw rows (a log written before it existed); how many were copied."""
    read = [log.c.id, log.c.outcome, *(log.c[name] for name in COLUMNS)]
    last, copied = None, 0
    while True:
        query = sa.select(*read).where(log.c.outcome == NO_MATCH).order_by(log.c.id).limit(CHUNK)
        if last is not None:
            query = query.where(log.c.id > last)
        rows = [row._mapping for row in conn.execute(query)]
        if not rows:
            return copied
        kept = copies(rows)
        if kept:
            conn.execute(sa.insert(table), kept)
        copied += len(kept)
        last = rows[-1]["id"]
