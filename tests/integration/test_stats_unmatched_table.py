"""The unmatched-question list reads the partial index of no_match entries (schema.py `unmatched_index`),
on SQLite and PostgreSQL: the plan of the query the statistics run names it, and a log opened with an older
version's index gets the new one in its place."""

from __future__ import annotations

import sqlalchemy as sa

from server.stats.aggregates import Window, compute, unmatched_query
from server.stats.rollup_schema import HOUR
from server.testing.stats_reference import T0, random_entries
from tests.integration.test_stats_rollups import make_log, write  # noqa: F401 (the fixture)


def plan(engine: sa.Engine, query: sa.Select) -> str:
    """The database's plan for `query`, as text (PostgreSQL told to avoid a whole-table scan: a test log is
    small enough that reading it all would win, which says nothing about a day of a real log)."""
    sql = str(query.compile(engine, compile_kwargs={"literal_binds": True}))
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
            return "\n".join(row[0] for row in conn.execute(sa.text("EXPLAIN " + sql)))
        return "\n".join(str(row[-1]) for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql))


def indexes(engine: sa.Engine, table: str) -> set[str]:
    return {ix["name"] for ix in sa.inspect(engine).get_indexes(table)}


async def test_the_unmatched_list_reads_the_no_match_index(make_log):  # noqa: F811
    rlog = await make_log()
    await write(rlog, random_entries(11, 400))
    name = f"ix_{rlog.table.name}_no_match"
    for w in (Window(T0 - 600, T0 + 3 * HOUR), Window(T0, T0 + HOUR, kind="query"), Window(T0, T0 + HOUR, "people")):
        shown = plan(rlog.engine, unmatched_query(rlog.table, w, 15, 20_000))
        assert name in shown, shown
    if rlog.engine.dialect.name == "sqlite":  # the list from the index alone: no table row is read
        assert "COVERING INDEX" in plan(rlog.engine, unmatched_query(rlog.table, Window(T0, T0 + HOUR), 15, 100))
    figures = compute(rlog.engine, rlog.table, Window(T0 - 600, T0 + 3 * HOUR), rlog.rollups)
    assert figures["unmatched_questions"] and figures["unmatched_sample"]["rows"] > 0


async def test_an_older_unmatched_index_is_replaced_when_the_log_is_opened(make_log):  # noqa: F811
    first = await make_log()
    await write(first, random_entries(12, 100))
    table = first.table
    await first.close()
    with first.engine.begin() as conn:  # as the previous version left it
        conn.execute(sa.text(f'DROP INDEX "ix_{table.name}_no_match"'))
        sa.Index(f"ix_{table.name}_unmatched", table.c.outcome, table.c.ts_ms, table.c.kind).create(conn)
    assert f"ix_{table.name}_no_match" not in indexes(first.engine, table.name)

    again = await make_log()
    found = indexes(again.engine, table.name)
    assert f"ix_{table.name}_no_match" in found and f"ix_{table.name}_unmatched" not in found
    everything = Window(T0 - 600, T0 + 3 * HOUR)
    assert compute(again.engine, again.table, everything, again.rollups)["total"] == 100
