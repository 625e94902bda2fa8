"""Statistics from rollups equal statistics worked out from the raw rows of the same log (random entries,
random windows, SQLite and PostgreSQL); an old log without rollups gets them on open; retention keeps both
in step; the dashboard asks for only what it draws."""

from __future__ import annotations

import math
import random
import re
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from server.stats import RoutingLog, StatsSettings
from server.stats.aggregates import DASHBOARD_OMITS, UNROUTED, Window, compute
from server.stats.rollup_schema import BINS, HOUR, MINUTE, ms_bin, ms_edges, score_bin, score_edges
from server.stats.schema import log_table
from server.testing.app import running_app
from server.testing.configs import BASE_CONFIG, people_tree
from server.testing.stats_reference import T0, exact_percentile, random_entries, raw_rows, reference
from server.web.routing_log import STATS_LOG

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.needs_postgres)]


@pytest.fixture(params=BACKENDS)
async def make_log(request, tmp_path):
    """Logs on the parametrised backend, each in tables of its own (dropped afterwards on PostgreSQL)."""
    logs: list[RoutingLog] = []
    url = request.getfixturevalue("pg_database").url if request.param == "postgres" else None
    name = f"routing_log_{uuid.uuid4().hex[:8]}"

    def settings(**overrides) -> StatsSettings:
        where = {"url": url} if url else {"path": str(tmp_path / "log.sqlite3")}
        base = {"store_queries": True, "retention_days": 36500, "batch_size": 37, "flush_interval": 0.01}
        return StatsSettings(table=name, **where, **{**base, **overrides})

    async def make(start: bool = True, **overrides) -> RoutingLog:
        rlog = RoutingLog(settings(**overrides), tmp_path)
        if start:
            await rlog.start()
        logs.append(rlog)
        return rlog

    make.settings = settings  # type: ignore[attr-defined]
    yield make
    for rlog in logs:
        await rlog.close()
    if url:
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            for table in ("", "_r_counts", "_r_templates", "_r_hist", "_r_tallies", "_r_state", "_r_unmatched"):
                conn.execute(sa.text(f'DROP TABLE IF EXISTS "{name}{table}"'))
        engine.dispose()


async def write(rlog: RoutingLog, entries) -> None:
    for entry in entries:
        assert rlog.record(entry)
    await rlog.flush()


def _tolerance(metric: str, sorted_values: list[float], rank: float) -> float:
    """One bin of the histogram the neighbouring order statistics fall in (end bins reach to the values)."""
    lo, hi = sorted_values[0], sorted_values[-1]
    width = 0.0
    for v in (sorted_values[math.floor(rank)], sorted_values[math.ceil(rank)]):
        index = score_bin(v) if metric == "score" else ms_bin(v)
        a, b = score_edges(index) if metric == "score" else ms_edges(index)
        if index == 0:  # end bins reach to the values
            a = min(a, lo)
        if index == BINS - 1:
            b = max(b, hi)
        width = max(width, min(b, hi) - max(a, lo))
    return width + 2e-4


def check_percentiles(metric: str, got: dict, values: list[float]) -> None:
    assert got["count"] == len(values)
    assert got["mean"] == pytest.approx(sum(values) / len(values), abs=2e-4)
    ordered = sorted(values)
    for key in got:
        if key.startswith("p"):
            point = int(key[1:])
            rank = point / 100 * (len(values) - 1)
            assert got[key] == pytest.approx(exact_percentile(values, point), abs=_tolerance(metric, ordered, rank))
            assert ordered[0] - 1e-4 <= got[key] <= ordered[-1] + 1e-4


def check_equal(rlog: RoutingLog, w: Window) -> dict:
    f = compute(rlog.engine, rlog.table, w, rlog.rollups)
    ref = reference(raw_rows(rlog.engine, rlog.table, w.start, w.end, w.adapter, w.kind))
    assert f["total"] == ref["total"]
    assert f["by_kind"] == ref["by_kind"]
    assert {k: v["count"] for k, v in f["outcomes"].items() if v["count"]} == ref["outcomes"]
    assert {a["adapter"]: a["count"] for a in f["by_adapter"]} == ref["by_adapter"]
    assert {a["replica"]: a["count"] for a in f["by_replica"]} == ref["by_replica"]
    assert {a["adapter"]: a["count"] for a in f["by_selected_adapter"]} == ref["by_selected_adapter"]
    assert {e["code"]: e["count"] for e in f["errors"]} == ref["errors"]
    templates = {(t["adapter"], t["template_id"]): t for t in f["templates"]}
    assert set(templates) == set(ref["templates"])
    for key, want in ref["templates"].items():
        got = templates[key]
        assert (got["hits"], got["executed"], got["last_seen"]) == (want["hits"], want["executed"], want["last"] / 1000)
        mean = sum(want["scores"]) / len(want["scores"]) if want["scores"] else None
        assert got["mean_score"] == (pytest.approx(mean, abs=1e-4) if mean is not None else None)
        assert got["min_score"] == (pytest.approx(min(want["scores"]), abs=1e-4) if want["scores"] else None)
        emb = sum(want["emb"]) / len(want["emb"]) if want["emb"] else None
        assert got["mean_embedding_score"] == (pytest.approx(emb, abs=1e-4) if emb is not None else None)
    values = ref["values"]
    assert set(f["scores"]) == {k[6:] for k in values if k.startswith("score:")} | {"combined"}
    assert set(f["latency_ms"]) == {k[3:] for k in values if k.startswith("ms:")}
    for name, got in f["scores"].items():
        if got["count"]:
            check_percentiles("score", got, values[f"score:{name}"])
    for name, got in f["latency_ms"].items():
        check_percentiles("ms", got, values[f"ms:{name}"])
    assert f["score_histogram"]["selected"] == ref["histogram"]["selected"]
    assert f["score_histogram"]["not_selected"] == ref["histogram"]["not_selected"]
    sources = {s["adapter"]: s for s in f["sources"]}
    assert set(sources) == set(ref["sources"])
    for name, counted in ref["sources"].items():
        got = sources[name]
        failures = {k[7:]: n for k, n in counted.items() if k.startswith("failed:")}
        assert got["failures"] == failures and got["failed"] == sum(failures.values())
        assert got["executed"] == counted.get("executed", 0)
        assert got["queries"] == got["executed"] + got["failed"]
        for key in ("search_failures", "search_timeouts", "embedding_failures"):
            assert got[key] == counted.get(key, 0), (name, key)
        if ref["exec_ms"].get(name):
            check_percentiles("ms", got["execute_ms"], ref["exec_ms"][name])
        else:
            assert got["execute_ms"]["count"] == 0
    vol = f["volume"]
    step, first = vol["bucket_seconds"], vol["buckets"][0] if vol["buckets"] else 0
    want_volume: dict[str, list[int]] = {}
    for ts, selected in zip(ref["ts"], ref["selected"], strict=True):
        series = want_volume.setdefault(selected or UNROUTED, [0] * len(vol["buckets"]))
        series[int(ts // step) - first // step] += 1
    assert vol["series"] == want_volume
    assert {u["question"]: u["count"] for u in f["unmatched_questions"]} == ref["unmatched"]
    assert f["sample"] == {"rows": ref["total"], "limited": False}
    return f


def windows(seed: int) -> list[Window]:
    rnd = random.Random(seed)
    out = [Window(T0 - 600, T0 + 3 * HOUR), Window(T0 - 600, T0 + 3 * HOUR, adapter="hr", kind="query")]
    for _ in range(6):
        since = T0 - 900 + rnd.uniform(0, 3.2 * HOUR)
        out.append(
            Window(
                since,
                since + rnd.choice([59, 600, 3600, 2.5 * HOUR, 4 * HOUR]),
                rnd.choice([None, None, "hr", "sales", "company"]),
                rnd.choice([None, "query", "test_routing"]),
            )
        )
    return out


@pytest.mark.parametrize("seed", [1, 2])
async def test_statistics_from_rollups_equal_statistics_from_raw_rows(make_log, seed):
    rlog = await make_log()
    await write(rlog, random_entries(seed, 700))
    assert rlog.counters.written == 700 and rlog.counters.batches >= 700 // 37
    whole = check_equal(rlog, windows(seed)[0])
    assert whole["total"] == 700
    for w in windows(seed)[1:]:
        check_equal(rlog, w)


def _old_table(name: str) -> sa.Table:
    """The log table as a version before rollups made it: no replica, search_failures, fan_out_sources
    columns, no (outcome, ts_ms) index."""
    current = log_table(name)
    dropped = {"replica", "search_failures", "fan_out_sources"}
    columns = [
        sa.Column(c.name, c.type, primary_key=c.primary_key, autoincrement=c.autoincrement, nullable=c.nullable)
        for c in current.columns
        if c.name not in dropped
    ]
    return sa.Table(name, sa.MetaData(), *columns)


async def test_an_old_log_without_rollups_gets_them_on_open(make_log):
    old = await make_log(start=False)
    table = _old_table(old.settings.table)
    entries = random_entries(7, 500)
    for e in entries:
        e.search_failures, e.fan_out_sources, e.replica = [], None, None
    with old.engine.begin() as conn:
        table.create(conn)
        rows = [e.to_row() for e in entries]
        conn.execute(sa.insert(table), [{k: v for k, v in r.items() if k in table.c} for r in rows])
    inspector = sa.inspect(old.engine)
    assert not any(n.startswith(f"{table.name}_r_") for n in inspector.get_table_names())

    upgraded = await make_log()
    with upgraded.engine.connect() as conn:
        state_table = upgraded.rollups.state
        state = conn.execute(sa.select(state_table).where(state_table.c.log_table == table.name)).one()
    assert state.backfilled_rows == 500
    everything = Window(T0 - 600, T0 + 3 * HOUR)
    assert check_equal(upgraded, everything)["total"] == 500
    for w in windows(7)[1:]:
        check_equal(upgraded, w)
    await write(upgraded, random_entries(8, 100))  # new entries on top: counted once
    assert check_equal(upgraded, everything)["total"] == 600
    await upgraded.close()
    again = await make_log()  # opened again: nothing is added a second time
    assert check_equal(again, everything)["total"] == 600


async def test_retention_removes_entries_and_their_rollups_together(make_log):
    rlog = await make_log(retention_days=1)
    await write(rlog, random_entries(3, 600))
    now = T0 + 86400 + 5000  # cutoff T0 + 5000 s: 1 h 23 min into the entries, inside an hour
    removed = rlog.purge(now)
    with rlog.engine.connect() as conn:
        left = conn.execute(sa.select(sa.func.min(rlog.table.c.ts_ms))).scalar()
        oldest_bucket = [conn.execute(sa.select(sa.func.min(t.c.bucket))).scalar() for t in rlog.rollups.all()[:-1]]
    assert removed > 0 and left >= (T0 + HOUR) * 1000  # back to the whole hour: T0 + 1 h
    assert min(b for b in oldest_bucket if b is not None) >= T0 + HOUR
    f = check_equal(rlog, Window(T0 - 600, T0 + 3 * HOUR))
    assert f["total"] == 600 - removed
    for w in windows(3)[1:]:
        check_equal(rlog, w)


async def test_a_window_is_read_at_minute_granularity(make_log):
    """Entries in the minute `since` falls in count, those in the minute before do not."""
    rlog = await make_log()
    entries = random_entries(4, 40, hours=0.02)  # T0 - 600 .. T0 - 528: two minutes
    await write(rlog, entries)
    inside = [e for e in entries if e.ts >= T0 - 600 + MINUTE]
    f = compute(rlog.engine, rlog.table, Window(T0 - 600 + MINUTE + 30, T0), rlog.rollups)
    assert f["total"] == len(inside) and f["bounds"] == {"start": T0 - 540, "end": T0 + MINUTE}


def test_the_dashboard_asks_for_the_dashboard_view_and_draws_nothing_it_leaves_out():
    script = (Path(__file__).parents[2] / "server/web/dashboard/dashboard.js").read_text()
    assert '"/v1/routing/statistics?" + query() + "&view=dashboard"' in script
    for key in DASHBOARD_OMITS:  # the routing_log figures are read as logBody.x, or d.x inside a render function
        assert not re.search(rf"\b(logBody|d)\.{key}\b", script), key


async def test_the_dashboard_view_answers_what_the_dashboard_draws(tmp_path):
    stats = BASE_CONFIG + "stats: {store_queries: true, flush_interval: 0.05}\n"
    async with running_app(people_tree(tmp_path, stats)) as (client, _):
        for question in ("who works in the Engineering department?", "recipe for banana bread"):
            assert (await client.post("/v1/query", json={"query": question})).status == 200
        await client.app[STATS_LOG].flush()
        full = await (await client.get("/v1/routing/statistics?since=1h&kind=query")).json()
        resp = await client.get("/v1/routing/statistics?since=1h&kind=query&view=dashboard")
        board = await resp.json()
        bad = await client.get("/v1/routing/statistics?view=everything")
    assert resp.status == 200 and bad.status == 400
    assert set(full["routing_log"]) - set(board["routing_log"]) == set(DASHBOARD_OMITS)
    drawn = {"total", "by_kind", "outcomes", "volume", "templates", "score_histogram", "latency_ms", "scores"}
    assert drawn | {"unmatched_questions", "sources", "log", "sample", "store_queries"} <= set(board["routing_log"])
    assert board["routing_log"]["total"] == 2 and board["routing_log"]["unmatched_questions"][0]["count"] == 1
    assert board["routing_log"]["score_histogram"]["threshold"] == 0.3  # the adapter's, as before
