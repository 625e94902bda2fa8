"""The unmatched-question list reads the unmatched entries' own table (stats/unmatched_copy.py), on SQLite
and PostgreSQL: written with the raw rows, read through its own index, filled once for a log written before
it existed, and left by dismissed questions and expired entries like the log."""

from __future__ import annotations

import sqlalchemy as sa

from server.api.outcome import Outcome
from server.stats.aggregates import Window, compute, unmatched_query
from server.stats.forget import forget_questions
from server.stats.rollup_schema import HOUR
from server.testing.stats_reference import T0, random_entries, raw_rows, reference
from tests.integration.test_stats_rollups import make_log, write  # noqa: F401 (the fixture)

EVERYTHING = Window(T0 - 600, T0 + 3 * HOUR)


def plan(engine: sa.Engine, query: sa.Select) -> str:
    """The database's plan for `query`, as text (PostgreSQL told to avoid a whole-table scan: a test log is
    small enough that reading it all would win, which says nothing about a day of a real log)."""
    sql = str(query.compile(engine, compile_kwargs={"literal_binds": True}))
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
            return "\n".join(row[0] for row in conn.execute(sa.text("EXPLAIN " + sql)))
        return "\n".join(str(row[-1]) for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql))


def unmatched_counts(rlog) -> dict[str, int]:
    figures = compute(rlog.engine, rlog.table, EVERYTHING, rlog.rollups, unmatched_limit=10_000)
    return {u["question"]: u["count"] for u in figures["unmatched_questions"]}


def from_raw_rows(rlog) -> dict[str, int]:
    """The unmatched counts worked out from the log's raw rows (what the list showed before its own table)."""
    w = EVERYTHING
    return reference(raw_rows(rlog.engine, rlog.table, w.start, w.end, None, None))["unmatched"]


def copied_rows(rlog) -> int:
    with rlog.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(rlog.rollups.unmatched)).scalar()


def stored_unmatched(rlog) -> int:
    t = rlog.table
    where = (t.c.outcome == Outcome.NO_MATCH.value, t.c.question.is_not(None))
    with rlog.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(t).where(*where)).scalar()


async def test_the_unmatched_list_reads_its_own_table_through_its_index(make_log):  # noqa: F811
    rlog = await make_log()
    entries = random_entries(11, 400)
    await write(rlog, entries)
    assert copied_rows(rlog) == stored_unmatched(rlog) > 0
    assert unmatched_counts(rlog) == from_raw_rows(rlog)
    index = f"ix_{rlog.rollups.unmatched.name}_ts"
    for w in (EVERYTHING, Window(T0, T0 + HOUR, kind="query"), Window(T0, T0 + HOUR, "people")):
        shown = plan(rlog.engine, unmatched_query(rlog.rollups.unmatched, w, 15, 20_000))
        assert index in shown, shown
    if rlog.engine.dialect.name == "sqlite":  # the list from the index alone: no table row is read
        query = unmatched_query(rlog.rollups.unmatched, Window(T0, T0 + HOUR), 15, 100)
        assert "COVERING INDEX" in plan(rlog.engine, query)


async def test_a_log_with_rollups_from_before_gets_its_unmatched_table_filled_once(make_log):  # noqa: F811
    first = await make_log()
    entries = random_entries(12, 300)
    await write(first, entries)
    expected = unmatched_counts(first)
    await first.close()
    state = first.rollups.state
    with first.engine.begin() as conn:  # as the previous version left it: rollups, no unmatched table
        first.rollups.unmatched.drop(conn)
        conn.execute(sa.delete(state).where(state.c.log_table == first.rollups.unmatched.name))
        sa.Index(f"ix_{first.table.name}_unmatched", first.table.c.outcome, first.table.c.ts_ms).create(conn)

    again = await make_log()
    assert unmatched_counts(again) == expected == from_raw_rows(again)
    assert f"ix_{again.table.name}_unmatched" not in {
        i["name"] for i in sa.inspect(again.engine).get_indexes(again.table.name)
    }
    with again.engine.connect() as conn:
        (copied,) = conn.execute(
            sa.select(state.c.backfilled_rows).where(state.c.log_table == again.rollups.unmatched.name)
        ).one()
    assert copied == stored_unmatched(again)
    assert compute(again.engine, again.table, EVERYTHING, again.rollups)["total"] == 300  # counted once
    await again.close()
    third = await make_log()  # opened again: nothing is copied a second time
    assert copied_rows(third) == copied


async def test_forgotten_questions_and_expired_entries_leave_the_unmatched_table(make_log):  # noqa: F811
    rlog = await make_log(retention_days=1)
    await write(rlog, random_entries(13, 500))
    counts = unmatched_counts(rlog)
    dropped = sorted(counts)[:2]
    forget_questions(rlog.engine, rlog.table, rlog.rollups.unmatched, dropped)
    assert unmatched_counts(rlog) == {q: n for q, n in counts.items() if q not in dropped}
    assert copied_rows(rlog) == stored_unmatched(rlog)
    rlog.purge(T0 + 86400 + 5000)  # cutoff inside the entries' second hour
    with rlog.engine.connect() as conn:
        oldest = conn.execute(sa.select(sa.func.min(rlog.rollups.unmatched.c.ts_ms))).scalar()
    assert oldest >= (T0 + HOUR) * 1000
    assert copied_rows(rlog) == stored_unmatched(rlog)
