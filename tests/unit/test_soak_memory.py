"""scripts/soak_memory.py's own rules: every question and every date range is new, the tree caches the
date answers with the bounds asked for, and the plateau is read from the last quarter of the samples."""

from __future__ import annotations

from pathlib import Path

from server.testing.scripts import load_script

soak = load_script("soak_memory")


def test_questions_and_date_ranges_never_repeat() -> None:
    assert len({soak.unique_question(n, "t") for n in range(5000)}) == 5000
    assert len({soak.dates_question(n) for n in range(20_000)}) == 20_000


def test_the_tree_caches_date_answers_within_the_bounds_asked_for(tmp_path: Path) -> None:
    config, bounds = soak.soak_tree(tmp_path, 65_536, 2**20)
    assert bounds["embedding_memory_max_bytes"] == 65_536 and bounds["result_cache_max_bytes"] == 2**20
    assert bounds["result_cache_max_entry_bytes"] == int(2**20 * 0.05)
    assert "cache_ttl_seconds: 3600" in (tmp_path / "templates" / "sales" / "orders.yaml").read_text()
    assert soak.bounds_of(config) == bounds


def test_the_plateau_is_the_last_quarter() -> None:
    samples = [{"t": float(i), "rss_mb": 100.0 + min(i, 4) * 10, "questions": i * 1000} for i in range(8)]
    assert soak.plateau(samples) == {
        "from_t": 6.0,
        "rss_min_mb": 140.0,
        "rss_max_mb": 140.0,
        "grew_mb": 0.0,
        "mb_per_1000_questions": 0.0,
    }
