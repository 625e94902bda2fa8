"""Statistics figures computed (from the rollups) from a known sequence of routing-log entries."""

from __future__ import annotations

import pytest

from server.api.outcome import Outcome
from server.errors import BadRequest
from server.stats import RoutingLog, RoutingRecord, StatsSettings
from server.stats.aggregates import Window, bucket_seconds, compute
from server.stats.hist_percentiles import histogram_percentiles
from server.stats.rollup_schema import ms_bin, ms_edges, score_bin, score_edges
from server.stats.window import parse_since

T0 = 1_800_000_000.0  # a fixed clock: bucket boundaries are multiples of 60 s


def q(
    offset: float,
    outcome: str,
    template: str | None = None,
    score: float | None = None,
    *,
    adapter: str = "company",
    source: str | None = None,
    kind: str = "query",
    question: str | None = None,
    latency: float | None = None,
    embed: float | None = None,
    error: str | None = None,
) -> RoutingRecord:
    return RoutingRecord(
        ts=T0 + offset,
        kind=kind,
        adapter=adapter,
        outcome=outcome,
        template_id=template,
        selected_adapter=source if template else (source if error else None),
        combined_score=score,
        embedding_score=score,
        stage_scores={"embedding": score, "intent_model": score / 2} if score is not None else {},
        threshold=0.4,
        question=question,
        latency_ms=latency,
        stage_ms={"embed": embed, "intent_model": embed / 2} if embed is not None else {},
        error_code=error,
        http_status=503 if error else 200,
    )


# 12 entries over three minutes: what a composite "company" over hr and sales saw
SEQUENCE = [
    q(5, "executed", "staff_by_dept", 0.90, source="hr", question="who works in sales", latency=10, embed=2),
    q(15, "executed", "staff_by_dept", 0.80, source="hr", question="who is in hr", latency=20, embed=2),
    q(25, "executed", "revenue_by_month", 0.70, source="sales", question="revenue in may", latency=30, embed=4),
    q(65, "needs_clarification", "person_by_name", 0.60, source="hr", question="find the person", latency=40, embed=4),
    q(70, "no_match", None, 0.20, question="weather tomorrow", latency=50, embed=6),
    q(75, "no_match", None, 0.10, question="weather tomorrow", latency=60, embed=6),
    q(80, "no_match", None, 0.30, question="tell me a joke", latency=70, embed=8),
    q(85, "ambiguous", "staff_by_dept", 0.45, source="hr", question="staff", latency=80, embed=8),
    q(130, "error", None, None, source="sales", question="revenue in june", latency=90, error="source_unavailable"),
    q(
        135,
        "routed",
        "revenue_by_month",
        0.75,
        source="sales",
        kind="test_routing",
        question="sales per month",
        latency=100,
        embed=10,
    ),
    q(140, "executed", "headcount", 0.95, adapter="hr", source="hr", question="headcount", latency=5, embed=1),
    q(145, "no_match", None, 0.05, adapter="hr", question="weather tomorrow", latency=6, embed=1),
]
WINDOW = Window(T0, T0 + 179)


async def write_sequence(rlog: RoutingLog) -> None:
    for record in SEQUENCE:
        assert rlog.record(record)
    await rlog.flush()
    assert rlog.counters.written == len(SEQUENCE)


def check_figures(rlog: RoutingLog) -> None:
    """The expected figures, worked out by hand from SEQUENCE."""
    f = compute(rlog.engine, rlog.table, WINDOW, rlog.rollups)
    # histogram rows fetched and summed one at a time (a server-side cursor on PostgreSQL): the same figures
    assert compute(rlog.engine, rlog.table, WINDOW, rlog.rollups, hist_chunk=1) == f
    assert f["total"] == 12
    assert f["by_kind"] == {"query": 11, "test_routing": 1}
    assert {k: v["count"] for k, v in f["outcomes"].items()} == {
        "executed": 4,
        "no_match": 4,
        "ambiguous": 1,
        "needs_clarification": 1,
        "error": 1,
        "routed": 1,
    }
    assert f["outcomes"]["executed"]["rate"] == pytest.approx(4 / 12, abs=1e-4)
    assert f["by_adapter"] == [{"adapter": "company", "count": 10}, {"adapter": "hr", "count": 2}]
    assert f["by_selected_adapter"] == [{"adapter": "hr", "count": 5}, {"adapter": "sales", "count": 3}]

    templates = {(t["adapter"], t["template_id"]): t for t in f["templates"]}
    assert f["templates"][0]["template_id"] == "staff_by_dept"
    staff = templates[("hr", "staff_by_dept")]
    assert (staff["hits"], staff["executed"]) == (3, 2)
    assert staff["mean_score"] == pytest.approx((0.9 + 0.8 + 0.45) / 3, abs=1e-4)
    assert staff["min_score"] == pytest.approx(0.45)
    assert templates[("sales", "revenue_by_month")]["hits"] == 2
    assert templates[("sales", "revenue_by_month")]["mean_score"] == pytest.approx(0.725)
    assert set(templates) == {
        ("hr", "staff_by_dept"),
        ("sales", "revenue_by_month"),
        ("hr", "person_by_name"),
        ("hr", "headcount"),
    }

    scores = sorted(r.combined_score for r in SEQUENCE if r.combined_score is not None)
    assert f["scores"]["combined"]["count"] == 11
    # 11 values: the middle one, from a histogram of 64 bins (off by at most one bin)
    assert f["scores"]["combined"]["p50"] == pytest.approx(scores[5], abs=1 / 64)
    assert f["scores"]["combined"]["p10"] >= scores[0] and f["scores"]["combined"]["mean"] == pytest.approx(
        sum(scores) / 11, abs=1e-4
    )
    assert "rerank" not in f["scores"]  # a stage that never scored is not listed

    lat = f["latency_ms"]
    assert lat["latency"]["count"] == 12
    # median of 5,6,10,...,100 and interpolation between 90 and 100, within a latency bin (26%)
    assert lat["latency"]["p50"] == pytest.approx(45.0, rel=0.26)
    assert lat["latency"]["p95"] == pytest.approx(94.5, rel=0.26)
    assert lat["latency"]["p99"] <= 100.0 and lat["latency"]["mean"] == pytest.approx(561 / 12, abs=1e-4)
    assert lat["embed"]["count"] == 11 and lat["embed"]["p50"] == pytest.approx(4.0, rel=0.26)
    # any stage, the intent model included, is charted from the same data without a column of its own
    assert lat["intent_model"]["count"] == 11 and lat["intent_model"]["p50"] == pytest.approx(2.0, rel=0.26)
    assert f["scores"]["intent_model"]["p50"] == pytest.approx(scores[5] / 2, abs=1 / 64)
    assert "execute" not in lat  # no entry had that stage

    assert f["unmatched_questions"][0]["question"] == "weather tomorrow"
    assert f["unmatched_questions"][0]["count"] == 3
    assert f["unmatched_questions"][0]["best_score"] == pytest.approx(0.2)
    assert [u["question"] for u in f["unmatched_questions"]] == ["weather tomorrow", "tell me a joke"]
    assert f["errors"] == [{"code": "source_unavailable", "count": 1}]

    hist = f["score_histogram"]
    assert sum(hist["selected"]) == 7 and sum(hist["not_selected"]) == 4
    assert hist["selected"][19] == 1 and hist["selected"][18] == 1  # 0.95 and 0.90
    assert hist["not_selected"][1] == 1 and hist["not_selected"][4] == 1  # 0.05 and 0.20
    assert hist["threshold"] is None  # the endpoint fills in the adapter's threshold (web/statistics.py)

    vol = f["volume"]
    assert vol["bucket_seconds"] == 60  # 179 s window / 48 -> the smallest bucket, a whole minute
    assert vol["buckets"][0] == T0 and len(vol["buckets"]) == 3
    assert sum(vol["series"]["hr"]) == 5 and sum(vol["series"]["sales"]) == 3
    assert sum(vol["series"]["(unrouted)"]) == 4
    assert vol["series"]["hr"] == [2, 2, 1]  # +5 and +15 s, +65 and +85 s, +140 s
    assert list(vol["series"])[-1] == "(unrouted)"

    only_hr = compute(rlog.engine, rlog.table, Window(T0, T0 + 179, adapter="hr"), rlog.rollups)
    assert only_hr["total"] == 2 + 5 - 1  # asked hr (2) or answered by hr via company (4)
    tests_only = compute(rlog.engine, rlog.table, Window(T0, T0 + 179, kind="test_routing"), rlog.rollups)
    assert tests_only["total"] == 1 and tests_only["outcomes"]["routed"] == {"count": 1, "rate": 1.0}
    assert sorted(tests_only["outcomes"]) == ["error", "executed", "no_match", "routed"]  # zeros kept for these
    # listed in the one order the server defines (Outcome), which the dashboard draws as it comes
    assert list(tests_only["outcomes"]) == [o.value for o in Outcome if o.value in tests_only["outcomes"]]
    assert list(tests_only["outcomes"]) == ["executed", "routed", "no_match", "error"]
    late = compute(rlog.engine, rlog.table, Window(T0 + 120, T0 + 179), rlog.rollups)
    assert late["total"] == 4 and late["unmatched_questions"][0]["count"] == 1
    empty = compute(rlog.engine, rlog.table, Window(T0 - 100, T0 - 1), rlog.rollups)
    assert empty["total"] == 0 and empty["templates"] == [] and empty["latency_ms"] == {}


async def test_figures_from_a_known_sequence_sqlite(tmp_path):
    rlog = RoutingLog(
        StatsSettings(path=str(tmp_path / "log.sqlite3"), store_queries=True, retention_days=36500), tmp_path
    )
    await rlog.start()
    try:
        await write_sequence(rlog)
        check_figures(rlog)
    finally:
        await rlog.close()


def _hist(values, binning, edges, points):
    bins = [0] * 64
    for v in values:
        bins[binning(v)] += 1
    return histogram_percentiles(len(values), sum(values), min(values), max(values), bins, edges, points)


def test_percentiles_from_histograms_and_buckets():
    four = _hist([1, 2, 3, 4], ms_bin, ms_edges, (0, 50, 100))
    assert (four["count"], four["p0"], four["p100"], four["mean"]) == (4, 1, 4, 2.5)  # ends and mean: exact
    assert four["p50"] == pytest.approx(2.5, rel=0.26)  # within its bin
    assert _hist([7.3], ms_bin, ms_edges, (50, 99)) == {
        "count": 1,
        "p50": 7.3,
        "p99": 7.3,
        "mean": 7.3,
    }  # one value: exact
    assert _hist([-0.5, 0.2, 1.5], score_bin, score_edges, (0, 100)) == {
        "count": 3,
        "p0": -0.5,
        "p100": 1.5,
        "mean": 0.4,
    }
    assert histogram_percentiles(0, 0.0, 0.0, 0.0, [], ms_edges, (50,)) == {"count": 0, "p50": None, "mean": None}
    assert bucket_seconds(3600) == 120 and bucket_seconds(86400) == 1800 and bucket_seconds(1) == 60


def test_parse_since():
    now = 1_800_000_000.0
    assert parse_since(None, now) == now - 86400
    assert parse_since("15m", now) == now - 900
    assert parse_since("7d", now) == now - 7 * 86400
    assert parse_since("1799999000", now) == 1_799_999_000
    assert parse_since("2027-01-15T08:00:00Z", now) == parse_since("2027-01-15T08:00:00+00:00", now)
    with pytest.raises(BadRequest):
        parse_since("yesterday", now)


async def test_unmatched_questions_read_the_newest_max_rows_entries(tmp_path):
    rlog = RoutingLog(
        StatsSettings(path=str(tmp_path / "log.sqlite3"), store_queries=True, retention_days=36500), tmp_path
    )
    await rlog.start()
    try:
        await write_sequence(rlog)
        every = compute(rlog.engine, rlog.table, WINDOW, rlog.rollups)
        assert every["unmatched_sample"] == {"rows": 4, "limited": False}
        newest = compute(rlog.engine, rlog.table, WINDOW, rlog.rollups, max_rows=2)  # +145 s and +80 s only
        assert {u["question"]: u["count"] for u in newest["unmatched_questions"]} == {
            "weather tomorrow": 1,
            "tell me a joke": 1,
        }
        assert newest["unmatched_sample"] == {"rows": 2, "limited": True}
        assert newest["total"] == every["total"] == 12  # every other figure stays exact
    finally:
        await rlog.close()
