"""scripts/bench_stats_scale.py at a tiny size: it writes through the project's writer, reads the statistics
from the rollups, times a bare GROUP BY and the dashboard's load, and reports every figure bench_scale.py uses."""

from __future__ import annotations

import pytest

from server.testing.scripts import load_script

bench = load_script("bench_stats_scale")
FIGURES = {
    "rows",
    "write_seconds",
    "statistics_seconds",
    "bare_group_by_seconds",
    "ratio",
    "dashboard_seconds_1h",
    "dashboard_seconds_24h",
    "rss_delta_mb_max",
}


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.needs_postgres)], ids=["sqlite", "postgres"]
)
def test_the_benchmark_runs_at_a_tiny_size(backend, request):
    if backend == "postgresql":
        request.getfixturevalue("pg_database")  # skips (or fails, as configured) without a server
    out = bench.run(rows=400, backends=(backend,), repeat=1)
    (result,) = out["results"]
    assert set(result) >= FIGURES and result["backend"] == backend
    assert result["rows"] == result["total_in_window"] == 400  # every entry written lands in the 24 h window
    assert result["statistics_seconds"] > 0 and result["bare_group_by_seconds"] > 0
    assert result["ratio"] > 0 and result["rss_delta_mb_max"] < 50


@pytest.mark.needs_postgres
def test_a_kept_postgres_log_is_read_again_without_writing(pg_database):
    import uuid

    import sqlalchemy as sa

    from server.testing import pg

    table = f"bench_keep_{uuid.uuid4().hex[:8]}"
    try:
        first = bench.run(rows=300, backends=("postgresql",), repeat=1, keep=table)["results"][0]
        again = bench.run(rows=300, backends=("postgresql",), repeat=1, keep=table)["results"][0]
        assert not first["written_by_an_earlier_run"] and again["written_by_an_earlier_run"]
        assert again["rows"] == again["total_in_window"] == 300 and again["write_seconds"] == 0
    finally:
        engine = sa.create_engine(pg.reachable_url())
        with engine.begin() as conn:
            for suffix in ("", "_r_counts", "_r_templates", "_r_hist", "_r_tallies", "_r_state", "_r_unmatched"):
                conn.execute(sa.text(f'DROP TABLE IF EXISTS "{table}{suffix}"'))
        engine.dispose()
